//! The vgi-rpc v1 wire, on arrow-rs.
//!
//! Every message between peers is a complete Arrow IPC stream (schema, batches, end
//! marker), written back to back on one byte stream. Framework keys (method names,
//! logs, errors, shared-memory pointers, cancel) ride in each batch's custom
//! metadata. This crate reads and writes such streams and says what a batch means;
//! it knows nothing of transports or method dispatch.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{Float64Array, RecordBatch};
//! use arrow_schema::{DataType, Field, Schema};
//! use quiver_wire::{keys, BatchMetadata, StreamReader, StreamWriter, Limits};
//!
//! let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Float64, false)]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(vec![1.5]))]).unwrap();
//! let mut bytes = Vec::new();
//! let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
//! writer.write(&batch, &BatchMetadata::from_pairs([(keys::METHOD, "add")]), &mut bytes).unwrap();
//! writer.finish(&mut bytes);
//!
//! let mut input = bytes.as_slice();
//! let mut reader = StreamReader::begin(&mut input, Limits::DEFAULT).unwrap().unwrap();
//! let (decoded, metadata) = reader.next(&mut input).unwrap().unwrap();
//! assert_eq!(decoded, batch);
//! assert_eq!(metadata.get(keys::METHOD), Some("add"));
//! assert!(reader.next(&mut input).unwrap().is_none());
//! ```
#![warn(missing_docs)]

mod body;
mod body_pool;
mod error;
mod frames;
mod framing;
mod in_place;
pub mod keys;
mod limits;
mod log;
mod metadata;
mod nullability;
mod reader;
mod role;
mod schema_cache;
pub mod schema_message;
mod sink;
mod writer;

pub use body::BatchMessage;
pub use error::{Result, WireError};
pub use frames::{BufferFrames, FrameSource, IoFrames};
pub use framing::{ALIGNMENT_BYTES, END_OF_STREAM};
pub use in_place::InPlaceStream;
pub use limits::Limits;
pub use log::{
    ErrorCode, ErrorReport, LogLevel, LogRecord, ERROR_DETAILS_BYTES_MAX, LIMIT_EXCEEDED_KIND,
    LIMIT_EXCEEDED_TYPE,
};
pub use metadata::BatchMetadata;
pub use nullability::Nullability;
pub use reader::{
    decode_region, decode_region_with, decode_stream, decode_stream_with, StreamReader,
};
pub use role::{classify, BatchRole};
pub use schema_cache::SCHEMA_CACHE_ENTRIES_MAX;
pub use sink::{GatherBuffer, IpcSink, GATHER_MIN_BYTES};
pub use writer::{empty_batch, empty_schema, encode_stream, StreamWriter};
