//! A `DoGet` response body that hands the result's own buffers to the transport: each message's
//! gRPC prefix and `FlightData` fields before the body are one small chunk, and the body's slices
//! follow as chunks that share the Arrow buffers (`Bytes::from_owner`), so hyper writes them to the
//! socket straight from DuckDB's batch. tonic's encoder would first copy every message into its
//! frame buffer: for a scan, a copy of the whole result on the gRPC workers.
//!
//! The bytes are what tonic and prost write, field for field: the 5-byte gRPC prefix (not
//! compressed, the length big-endian), then `FlightData`'s fields in prost's order
//! (`flight_descriptor` = 1, `data_header` = 2, `app_metadata` = 3, `data_body` = 1000, empty ones
//! left out); the stream ends with the `grpc-status` trailers tonic sends, an error's included.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use http_body::{Body, Frame};
use prost::bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;
use tonic::codegen::http::HeaderMap;
use tonic::Status;

use super::statements::{padded, DataMessage, MessageStream};

const DATA_HEADER_FIELD: u32 = 2;
const DATA_BODY_FIELD: u32 = 1000;
/// gRPC's message prefix: the compressed flag and the length.
const GRPC_PREFIX_BYTES: usize = 5;
/// The header field's key and length (a varint of at most 10 bytes).
const HEADER_FIELD_PREFIX_BYTES_MAX: usize = 1 + 10;
/// The body field's key and length.
const BODY_FIELD_PREFIX_BYTES_MAX: usize = 2 + 10;
/// What a body slice is padded with (to the IPC body's 8-byte alignment).
const ZEROS: [u8; quiver_wire::ALIGNMENT_BYTES] = [0; quiver_wire::ALIGNMENT_BYTES];

/// The body of a `DoGet` response: `messages`, none over `bytes_max` bytes, then the trailers.
pub struct DataBody {
    messages: Option<MessageStream>,
    chunks: VecDeque<Bytes>,
    bytes_max: usize,
}

impl DataBody {
    /// The body that streams `messages`.
    pub fn new(messages: MessageStream, bytes_max: usize) -> DataBody {
        DataBody {
            messages: Some(messages),
            chunks: VecDeque::new(),
            bytes_max,
        }
    }

    /// The last frame: `status` as trailers; the messages (and the result behind them) are let go.
    fn end(&mut self, status: &Status) -> Frame<Bytes> {
        self.messages = None;
        self.chunks.clear();
        Frame::trailers(trailers(status))
    }
}

impl Body for DataBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        let Some(messages) = self.messages.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = match std::task::ready!(messages.poll_next_unpin(cx)) {
            Some(Ok(message)) => match chunks(message, self.bytes_max) {
                Ok(chunks) => {
                    self.chunks = chunks;
                    let first = self.chunks.pop_front().expect("a message has a prefix");
                    Frame::data(first)
                }
                Err(status) => self.end(&status),
            },
            Some(Err(status)) => self.end(&status),
            None => self.end(&Status::ok("")),
        };
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.messages.is_none() && self.chunks.is_empty()
    }
}

/// `status` as gRPC trailers (a status whose message cannot be a header value says so instead).
fn trailers(status: &Status) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(3);
    if let Err(error) = status.add_header(&mut headers) {
        headers.clear();
        Status::internal(format!("a status that cannot be sent: {error}"))
            .add_header(&mut headers)
            .expect("a plain message is a header value");
    }
    headers
}

/// The length of a length-delimited field `tag` of `len` bytes.
fn field_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// `message` as gRPC's framing of its `FlightData`: the prefix and every field before the body in
/// one chunk, then the body's slices (shared, not copied) and their padding.
pub fn chunks(message: DataMessage, bytes_max: usize) -> Result<VecDeque<Bytes>, Status> {
    match message {
        DataMessage::Batch(message) => {
            let header = &message.header;
            let len = field_len(DATA_HEADER_FIELD, header.len())
                + field_len(DATA_BODY_FIELD, message.body_len);
            let mut prefix = BytesMut::with_capacity(
                GRPC_PREFIX_BYTES
                    + HEADER_FIELD_PREFIX_BYTES_MAX
                    + header.len()
                    + BODY_FIELD_PREFIX_BYTES_MAX,
            );
            put_grpc_prefix(&mut prefix, len, bytes_max)?;
            encode_key(DATA_HEADER_FIELD, WireType::LengthDelimited, &mut prefix);
            encode_varint(header.len() as u64, &mut prefix);
            prefix.put_slice(header);
            put_body_prefix(&mut prefix, message.body_len);
            let mut chunks = VecDeque::with_capacity(1 + 2 * message.parts.len());
            chunks.push_back(prefix.freeze());
            let mut written = 0;
            for part in message.parts {
                let len = part.len();
                let padding = padded(len) - len;
                written += len + padding;
                if len > 0 {
                    chunks.push_back(Bytes::from_owner(part));
                }
                if padding > 0 {
                    chunks.push_back(Bytes::from_static(&ZEROS[..padding]));
                }
            }
            assert_eq!(written, message.body_len, "the body is its layout's length");
            Ok(chunks)
        }
        DataMessage::Encoded(mut data) => {
            let body = std::mem::take(&mut data.data_body);
            let body_field = if body.is_empty() {
                0
            } else {
                field_len(DATA_BODY_FIELD, body.len())
            };
            let len = data.encoded_len() + body_field;
            let mut prefix = BytesMut::with_capacity(
                GRPC_PREFIX_BYTES + data.encoded_len() + BODY_FIELD_PREFIX_BYTES_MAX,
            );
            put_grpc_prefix(&mut prefix, len, bytes_max)?;
            data.encode(&mut prefix)
                .map_err(|e| Status::internal(format!("encoding a Flight message: {e}")))?;
            let mut chunks = VecDeque::with_capacity(2);
            if !body.is_empty() {
                put_body_prefix(&mut prefix, body.len());
                chunks.push_back(prefix.freeze());
                chunks.push_back(body);
            } else {
                chunks.push_back(prefix.freeze());
            }
            Ok(chunks)
        }
    }
}

/// gRPC's prefix of a message of `len` bytes, within the server's limit on messages.
fn put_grpc_prefix(dst: &mut BytesMut, len: usize, bytes_max: usize) -> Result<(), Status> {
    if len > bytes_max {
        return Err(Status::out_of_range(format!(
            "a result message of {len} bytes exceeds the limit of {bytes_max} bytes"
        )));
    }
    let len = u32::try_from(len).map_err(|_| {
        Status::resource_exhausted(format!("a result message of {len} bytes exceeds 4 GiB"))
    })?;
    dst.put_u8(0);
    dst.put_u32(len);
    Ok(())
}

fn put_body_prefix(dst: &mut BytesMut, body_len: usize) {
    encode_key(DATA_BODY_FIELD, WireType::LengthDelimited, dst);
    encode_varint(body_len as u64, dst);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int32Array, RecordBatch, StringArray};
    use arrow_flight::{FlightData, FlightDescriptor, SchemaAsIpc};

    use super::*;

    fn batch() -> RecordBatch {
        RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as _,
            ),
            (
                "value",
                Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5])) as _,
            ),
            (
                "name",
                Arc::new(StringArray::from(vec!["a", "bcd", ""])) as _,
            ),
        ])
        .unwrap()
    }

    /// What tonic writes for `data`: the gRPC prefix, then prost's encoding.
    fn tonic_bytes(data: &FlightData) -> Vec<u8> {
        let encoded = data.encode_to_vec();
        let mut framed = vec![0];
        framed.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
        framed.extend_from_slice(&encoded);
        framed
    }

    fn joined(chunks: VecDeque<Bytes>) -> Vec<u8> {
        chunks.iter().flat_map(|c| c.iter().copied()).collect()
    }

    #[test]
    fn a_batch_sent_from_its_buffers_is_the_message_tonic_and_prost_write() {
        let batch = batch();
        let message = quiver_wire::BatchMessage::of(&batch).unwrap();
        let body_buffers = message.parts.clone();
        let expected =
            DataMessage::Batch(quiver_wire::BatchMessage::of(&batch).unwrap()).into_flight_data();
        let chunks = chunks(DataMessage::Batch(message), usize::MAX).unwrap();
        // The body's slices are the batch's own memory, not copies.
        for buffer in body_buffers.iter().filter(|b| !b.is_empty()) {
            assert!(chunks.iter().any(|c| c.as_ptr() == buffer.as_ptr()));
        }
        let written = joined(chunks);
        assert_eq!(written, tonic_bytes(&expected));
        let decoded = FlightData::decode(&written[GRPC_PREFIX_BYTES..]).unwrap();
        let batches = arrow_flight::utils::flight_data_to_batches(&[
            FlightData::from(SchemaAsIpc::new(&batch.schema(), &Default::default())),
            decoded,
        ])
        .unwrap();
        assert_eq!(batches, vec![batch]);
    }

    #[test]
    fn an_encoded_message_is_the_message_tonic_and_prost_write() {
        let with_everything = FlightData::new()
            .with_descriptor(FlightDescriptor::new_cmd("cmd"))
            .with_data_header(vec![1, 2, 3])
            .with_app_metadata(vec![4])
            .with_data_body(vec![5; 300]);
        let schema_only =
            FlightData::from(SchemaAsIpc::new(&batch().schema(), &Default::default()));
        for data in [with_everything, schema_only, FlightData::new()] {
            let expected = tonic_bytes(&data);
            let chunks = chunks(DataMessage::Encoded(data), usize::MAX).unwrap();
            assert_eq!(joined(chunks), expected);
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_by_name() {
        let message = quiver_wire::BatchMessage::of(&batch()).unwrap();
        let error = chunks(DataMessage::Batch(message), 64).unwrap_err();
        assert_eq!(error.code(), tonic::Code::OutOfRange);
        assert!(error.message().contains("exceeds the limit of 64 bytes"));
    }
}
