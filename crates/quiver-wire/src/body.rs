//! The IPC body of a record batch, laid out over the arrays' own buffers.
//!
//! arrow-rs encodes a body by copying every buffer into one `Vec`. For the
//! layouts that dominate real traffic (primitives, booleans, strings and binaries,
//! lists, structs) this module instead records *which* slices of the existing
//! buffers make up the body, so a writer can hand them to `writev` or copy them
//! once into shared memory. Anything else (dictionaries, unions, views, bit
//! offsets that are not byte aligned) returns `None` and takes arrow-rs's path.

use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::DataType;

use crate::framing::padded_len;

/// The body of one batch: field nodes, buffer positions and the slices to write.
pub(crate) struct BodyLayout {
    pub nodes: Vec<arrow_ipc::FieldNode>,
    pub buffers: Vec<arrow_ipc::Buffer>,
    /// Slices in body order; each is followed by zero padding up to 8 bytes.
    pub parts: Vec<Buffer>,
    /// Total body length, padding included.
    pub body_len: usize,
}

impl BodyLayout {
    /// The layout of `batch`, or `None` when a column needs arrow-rs's encoder.
    pub fn of(batch: &RecordBatch) -> Option<BodyLayout> {
        let mut layout = BodyLayout {
            nodes: Vec::new(),
            buffers: Vec::new(),
            parts: Vec::new(),
            body_len: 0,
        };
        for column in batch.columns() {
            layout.add_array(&column.to_data())?;
        }
        Some(layout)
    }

    fn push(&mut self, buffer: Buffer) {
        self.buffers.push(arrow_ipc::Buffer::new(
            self.body_len as i64,
            buffer.len() as i64,
        ));
        self.body_len += padded_len(buffer.len());
        self.parts.push(buffer);
    }

    fn add_array(&mut self, data: &ArrayData) -> Option<()> {
        let len = data.len();
        let offset = data.offset();
        self.nodes.push(arrow_ipc::FieldNode::new(
            len as i64,
            data.null_count() as i64,
        ));
        match data.nulls() {
            Some(nulls) if data.null_count() > 0 => {
                let bit_offset = nulls.offset();
                if !bit_offset.is_multiple_of(8) {
                    return None;
                }
                self.push(
                    nulls
                        .buffer()
                        .slice_with_length(bit_offset / 8, len.div_ceil(8)),
                );
            }
            _ => self.push(Buffer::from(Vec::<u8>::new())),
        }
        match data.data_type() {
            DataType::Boolean => {
                if !offset.is_multiple_of(8) {
                    return None;
                }
                self.push(data.buffers()[0].slice_with_length(offset / 8, len.div_ceil(8)));
            }
            DataType::Utf8 | DataType::Binary => self.add_var_width::<i32>(data)?,
            DataType::LargeUtf8 | DataType::LargeBinary => self.add_var_width::<i64>(data)?,
            DataType::List(_) | DataType::Map(_, _) => {
                let child_len = self.add_offsets::<i32>(data)?;
                self.add_array(&data.child_data()[0].slice(0, child_len))?;
            }
            DataType::LargeList(_) => {
                let child_len = self.add_offsets::<i64>(data)?;
                self.add_array(&data.child_data()[0].slice(0, child_len))?;
            }
            DataType::Struct(_) => {
                for child in data.child_data() {
                    self.add_array(&child.slice(offset, len))?;
                }
            }
            DataType::FixedSizeList(_, size) => {
                let size = *size as usize;
                self.add_array(&data.child_data()[0].slice(offset * size, len * size))?;
            }
            DataType::FixedSizeBinary(width) => {
                let width = *width as usize;
                self.push(data.buffers()[0].slice_with_length(offset * width, len * width));
            }
            data_type if data_type.is_primitive() => {
                let width = data_type.primitive_width()?;
                self.push(data.buffers()[0].slice_with_length(offset * width, len * width));
            }
            _ => return None,
        }
        Some(())
    }

    /// Offsets and values of a string or binary array.
    fn add_var_width<O: arrow_array::OffsetSizeTrait>(&mut self, data: &ArrayData) -> Option<()> {
        let values_len = self.add_offsets::<O>(data)?;
        self.push(data.buffers()[1].slice_with_length(0, values_len));
        Some(())
    }

    /// Pushes the offsets buffer of `data` (which must start at zero) and returns
    /// the length of the values they span.
    fn add_offsets<O: arrow_array::OffsetSizeTrait>(&mut self, data: &ArrayData) -> Option<usize> {
        let width = std::mem::size_of::<O>();
        let offsets: &[O] = data.buffers()[0].typed_data::<O>();
        let window = offsets.get(data.offset()..=data.offset() + data.len())?;
        if window[0].as_usize() != 0 {
            return None;
        }
        let end = window[window.len() - 1].as_usize();
        self.push(
            data.buffers()[0].slice_with_length(data.offset() * width, (data.len() + 1) * width),
        );
        Some(end)
    }
}

/// Builds the `Message` flatbuffer of a record batch with `layout` and metadata.
pub(crate) fn record_batch_header(
    num_rows: usize,
    layout: &BodyLayout,
    metadata: &crate::BatchMetadata,
) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::with_capacity(256 + 32 * layout.buffers.len());
    let nodes = fbb.create_vector(&layout.nodes);
    let buffers = fbb.create_vector(&layout.buffers);
    let record_batch = arrow_ipc::RecordBatch::create(
        &mut fbb,
        &arrow_ipc::RecordBatchArgs {
            length: num_rows as i64,
            nodes: Some(nodes),
            buffers: Some(buffers),
            compression: None,
            variadicBufferCounts: None,
        },
    );
    let custom_metadata = (!metadata.is_empty()).then(|| {
        let pairs: Vec<_> = metadata
            .iter()
            .map(|(key, value)| {
                let key = fbb.create_string(key);
                let value = fbb.create_string(value);
                arrow_ipc::KeyValue::create(
                    &mut fbb,
                    &arrow_ipc::KeyValueArgs {
                        key: Some(key),
                        value: Some(value),
                    },
                )
            })
            .collect();
        fbb.create_vector(&pairs)
    });
    let message = arrow_ipc::Message::create(
        &mut fbb,
        &arrow_ipc::MessageArgs {
            version: arrow_ipc::MetadataVersion::V5,
            header_type: arrow_ipc::MessageHeader::RecordBatch,
            header: Some(record_batch.as_union_value()),
            bodyLength: layout.body_len as i64,
            custom_metadata,
        },
    );
    fbb.finish(message, None);
    fbb.finished_data().to_vec()
}

/// One record batch's IPC message laid over the batch's own buffers, for a transport that frames
/// messages itself (Flight's `FlightData`): the `Message` flatbuffer, and the body's slices.
pub struct BatchMessage {
    /// The `Message` flatbuffer (no continuation marker or length prefix).
    pub header: Vec<u8>,
    /// Slices in body order; each is followed by zero padding up to 8 bytes.
    pub parts: Vec<Buffer>,
    /// Total body length, padding included (the header's `bodyLength`).
    pub body_len: usize,
}

impl BatchMessage {
    /// The message of `batch`, or `None` when a column needs arrow-rs's encoder.
    pub fn of(batch: &RecordBatch) -> Option<BatchMessage> {
        let layout = BodyLayout::of(batch)?;
        let header = record_batch_header(batch.num_rows(), &layout, &crate::BatchMetadata::new());
        Some(BatchMessage {
            header,
            parts: layout.parts,
            body_len: layout.body_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{
        ArrayRef, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array,
        LargeStringArray, RecordBatch, StringArray, StructArray,
    };
    use arrow_schema::{DataType, Field};

    use super::BodyLayout;
    use crate::{BatchMetadata, GatherBuffer, Limits, StreamReader, StreamWriter};

    #[test]
    fn batch_message_decodes_to_its_batch() {
        let batch = sample();
        let message = super::BatchMessage::of(&batch).expect("sample's columns lay out");
        let mut body = Vec::new();
        for part in &message.parts {
            body.extend_from_slice(part);
            body.resize(
                body.len() + crate::framing::padded_len(part.len()) - part.len(),
                0,
            );
        }
        assert_eq!(body.len(), message.body_len);
        let header = arrow_ipc::root_as_message(&message.header).unwrap();
        assert_eq!(header.bodyLength(), message.body_len as i64);
        let decoded = arrow_ipc::reader::read_record_batch(
            &arrow_buffer::Buffer::from(body),
            header.header_as_record_batch().unwrap(),
            batch.schema(),
            &std::collections::HashMap::new(),
            None,
            &header.version(),
        )
        .unwrap();
        assert_eq!(decoded, batch);
    }

    fn sample() -> RecordBatch {
        let mut lists = ListBuilder::new(StringBuilder::new());
        for row in 0..10 {
            for item in 0..row % 3 {
                lists.values().append_value(format!("{row}-{item}"));
            }
            lists.append(row % 4 != 1);
        }
        let points = StructArray::from(vec![
            (
                Arc::new(Field::new("x", DataType::Float64, false)),
                Arc::new(Float64Array::from_iter_values((0..10).map(f64::from))) as ArrayRef,
            ),
            (
                Arc::new(Field::new("y", DataType::Int32, true)),
                Arc::new(Int32Array::from_iter(
                    (0..10).map(|i| (i % 3 != 0).then_some(i)),
                )),
            ),
        ]);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter(
                (0..10).map(|i| (i % 4 != 0).then_some(i * 7)),
            )),
            Arc::new(BooleanArray::from_iter(
                (0..10).map(|i| (i % 5 != 0).then_some(i % 2 == 0)),
            )),
            Arc::new(StringArray::from_iter(
                (0..10).map(|i| (i != 3).then(|| "é".repeat(i))),
            )),
            Arc::new(LargeStringArray::from_iter_values(
                (0..10).map(|i| format!("large-{i}")),
            )),
            Arc::new(FixedSizeBinaryArray::try_from_iter((0..10u8).map(|i| [i; 4])).unwrap()),
            Arc::new(lists.finish()),
            Arc::new(points),
        ];
        RecordBatch::try_from_iter(
            ["i", "b", "s", "ls", "fsb", "l", "p"]
                .into_iter()
                .zip(columns),
        )
        .unwrap()
    }

    fn roundtrip(batch: &RecordBatch) -> RecordBatch {
        let mut out = GatherBuffer::new();
        let mut writer = StreamWriter::begin(batch.schema_ref(), &mut out).unwrap();
        writer
            .write(batch, &BatchMetadata::from_pairs([("k", "v")]), &mut out)
            .unwrap();
        writer.finish(&mut out);
        let mut bytes = vec![0u8; out.len()];
        out.copy_into(&mut bytes);
        let mut input = bytes.as_slice();
        let mut reader = StreamReader::begin(&mut input, Limits::DEFAULT)
            .unwrap()
            .unwrap();
        let (decoded, metadata) = reader.next(&mut input).unwrap().unwrap();
        assert_eq!(metadata.get("k"), Some("v"));
        assert!(reader.next(&mut input).unwrap().is_none());
        assert!(input.is_empty());
        decoded
    }

    #[test]
    fn common_layouts_take_the_gather_path_and_round_trip() {
        let batch = sample();
        assert!(BodyLayout::of(&batch).is_some());
        assert_eq!(roundtrip(&batch), batch);
    }

    #[test]
    fn sliced_batches_round_trip() {
        let batch = sample();
        for (offset, len) in [(0, 10), (8, 2), (1, 5), (3, 7), (10, 0)] {
            let slice = batch.slice(offset, len);
            assert_eq!(roundtrip(&slice), slice, "slice {offset}+{len}");
        }
    }

    #[test]
    fn large_buffers_are_gathered_by_reference() {
        let column: Int64Array = (0..100_000).collect();
        let batch = RecordBatch::try_from_iter([("v", Arc::new(column) as ArrayRef)]).unwrap();
        let mut out = GatherBuffer::new();
        let mut writer = StreamWriter::begin(batch.schema_ref(), &mut out).unwrap();
        writer
            .write(&batch, &BatchMetadata::new(), &mut out)
            .unwrap();
        writer.finish(&mut out);
        assert!(out.len() > 800_000);
        assert_eq!(roundtrip(&batch), batch);
    }
}
