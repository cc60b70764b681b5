//! A one-batch IPC stream framed around buffers that already lie in the memory that will carry
//! it (a shared-memory region), so the batch crosses without its body being copied.
//!
//! The stream is the usual schema message, record batch message and end marker; only the body is
//! unusual: it spans from the end of the batch message to the end of the last buffer, and the
//! buffers sit where they were built, so its `Buffer` offsets may leave gaps. Readers locate
//! buffers by those offsets (the format does not ask for them to be packed), so any IPC reader
//! decodes it.

use std::ops::Range;

use arrow_array::RecordBatch;

use crate::body::{record_batch_header, BodyLayout};
use crate::framing::{padded_len, ALIGNMENT_BYTES, END_OF_STREAM};
use crate::metadata::BatchMetadata;
use crate::writer::{append_frame_prefix, StreamWriter};

/// Where to write what, relative to the start of the region.
#[derive(Debug)]
pub struct InPlaceStream {
    /// Schema message and batch message, to write at the region's first byte.
    pub prefix: Vec<u8>,
    /// Where the end-of-stream marker goes.
    pub end_of_stream_at: usize,
    /// Length of the whole stream (`vgi_rpc.shm_length`).
    pub len_bytes: usize,
}

impl InPlaceStream {
    /// The end-of-stream marker.
    pub const END_OF_STREAM: [u8; 8] = END_OF_STREAM;

    /// Frames `batch` around its own buffers inside `region` (the addresses of the memory that
    /// will hold the stream). `None` when a layout needs arrow-rs's encoder, when a buffer lies
    /// outside the region or too close to its start for the framing, or when a buffer is not
    /// 8-byte aligned relative to the body.
    pub fn of(batch: &RecordBatch, region: Range<usize>) -> Option<InPlaceStream> {
        let mut layout = BodyLayout::of(batch)?;
        let mut prefix = Vec::new();
        StreamWriter::begin(batch.schema_ref(), &mut prefix).ok()?;
        let schema_len = prefix.len();
        // The header's size does not depend on the offsets' values (fixed-size structs), but a
        // field equal to its default is left out, so settle the length by re-encoding.
        let mut body_start = region.start + schema_len;
        for _ in 0..3 {
            let end = place(&mut layout, body_start)?;
            layout.body_len = padded_len(end - body_start);
            let header = record_batch_header(batch.num_rows(), &layout, &BatchMetadata::new());
            let mut message = Vec::with_capacity(header.len() + 16);
            append_frame_prefix(&mut message, &header);
            let start = region.start + schema_len + message.len();
            if start == body_start {
                let end_of_stream_at = body_start - region.start + layout.body_len;
                let len_bytes = end_of_stream_at + END_OF_STREAM.len();
                if region.start + len_bytes > region.end {
                    return None;
                }
                prefix.extend_from_slice(&message);
                return Some(InPlaceStream {
                    prefix,
                    end_of_stream_at,
                    len_bytes,
                });
            }
            body_start = start;
        }
        None
    }
}

/// Sets each buffer's offset to its address relative to `body_start`; returns the address where
/// the last buffer ends. `None` if a buffer lies before the body or off the 8-byte grid.
fn place(layout: &mut BodyLayout, body_start: usize) -> Option<usize> {
    let mut end = body_start;
    for (entry, part) in layout.buffers.iter_mut().zip(&layout.parts) {
        if part.is_empty() {
            *entry = arrow_ipc::Buffer::new(0, 0);
            continue;
        }
        let address = part.as_ptr() as usize;
        let offset = address.checked_sub(body_start)?;
        if offset % ALIGNMENT_BYTES != 0 {
            return None;
        }
        *entry = arrow_ipc::Buffer::new(offset as i64, part.len() as i64);
        end = end.max(address + part.len());
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_buffer::{Buffer, MutableBuffer, OffsetBuffer, ScalarBuffer};

    use super::InPlaceStream;
    use crate::{decode_stream, Limits};

    const REGION_BYTES: usize = 64 << 10;

    /// A region, and a batch whose buffers are slices of it at `at` (ints) and after (strings).
    fn batch_in(region: &Buffer, at: usize) -> RecordBatch {
        let ints = region.slice_with_length(at, 80);
        let offsets = region.slice_with_length(at + 128, 4 * 11);
        let values = region.slice_with_length(at + 192, 10);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::new(ScalarBuffer::new(ints, 0, 10), None)),
            Arc::new(StringArray::new(
                OffsetBuffer::new(ScalarBuffer::new(offsets, 0, 11)),
                values,
                None,
            )),
        ];
        RecordBatch::try_from_iter(["i", "s"].into_iter().zip(columns)).unwrap()
    }

    fn region_with_values(at: usize) -> Buffer {
        let mut bytes = MutableBuffer::from_len_zeroed(REGION_BYTES);
        let slice = bytes.as_slice_mut();
        for i in 0..10usize {
            slice[at + 8 * i..at + 8 * i + 8].copy_from_slice(&(i as i64 * 3).to_le_bytes());
            slice[at + 128 + 4 * (i + 1)..at + 128 + 4 * (i + 2)]
                .copy_from_slice(&(i as i32 + 1).to_le_bytes());
            slice[at + 192 + i] = b'a' + i as u8;
        }
        bytes.into()
    }

    #[test]
    fn a_batch_framed_around_its_buffers_decodes_with_any_reader() {
        let at = 4096;
        let region = region_with_values(at);
        let batch = batch_in(&region, at);
        let start = region.as_ptr() as usize;
        let stream = InPlaceStream::of(&batch, start..start + REGION_BYTES).unwrap();
        assert!(stream.prefix.len() <= at);
        let mut bytes = region.as_slice().to_vec();
        bytes[..stream.prefix.len()].copy_from_slice(&stream.prefix);
        bytes[stream.end_of_stream_at..stream.end_of_stream_at + 8]
            .copy_from_slice(&InPlaceStream::END_OF_STREAM);
        bytes.truncate(stream.len_bytes);
        let (_, batches) = decode_stream(Buffer::from(bytes.clone()), Limits::DEFAULT).unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].0, batch);
        // arrow-rs's own reader, as a second opinion.
        let reader = arrow_ipc::reader::StreamReader::try_new(bytes.as_slice(), None).unwrap();
        let decoded: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        assert_eq!(decoded, vec![batch]);
    }

    #[test]
    fn buffers_without_room_for_the_framing_or_outside_the_region_are_refused() {
        let region = region_with_values(64);
        let start = region.as_ptr() as usize;
        let batch = batch_in(&region, 64);
        assert!(
            InPlaceStream::of(&batch, start..start + REGION_BYTES).is_none(),
            "64 bytes cannot hold the schema and batch messages"
        );
        let region = region_with_values(4096);
        let start = region.as_ptr() as usize;
        let batch = batch_in(&region, 4096);
        assert!(InPlaceStream::of(&batch, start..start + REGION_BYTES).is_some());
        assert!(
            InPlaceStream::of(&batch, start..start + 4096 + 100).is_none(),
            "the strings lie past the region's end"
        );
        let other = region_with_values(4096);
        let elsewhere = other.as_ptr() as usize;
        assert!(InPlaceStream::of(&batch, elsewhere..elsewhere + REGION_BYTES).is_none());
    }
}
