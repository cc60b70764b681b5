//! What the raw-bytes server tests share: the `add` method they call, the metadata of a request
//! on their `Test` 1.0.0 service, and reading one reply stream.

pub mod counter;

use std::io::{BufReader, Read};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use arrow_schema::DataType;
use quiver_rpc::{field, Method};
use quiver_wire::{keys, BatchMetadata, Limits, StreamReader};

/// `add(a: float64, b: float64) -> float64`.
pub fn add_method() -> Method {
    Method::unary(
        "add",
        vec![
            field("a", DataType::Float64, false),
            field("b", DataType::Float64, false),
        ],
        Some(field("result", DataType::Float64, false)),
        |params, _| {
            Ok(Some(Arc::new(Float64Array::from(vec![
                params.f64("a")? + params.f64("b")?,
            ])) as ArrayRef))
        },
    )
}

/// The metadata of a well-formed request for `method` on the tests' `Test` 1.0.0 service.
pub fn request_metadata(method: &str) -> BatchMetadata {
    BatchMetadata::from_pairs([
        (keys::METHOD, method),
        (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        (keys::PROTOCOL, "Test"),
        (keys::PROTOCOL_VERSION, "1.0.0"),
    ])
}

/// One reply stream's batches with their metadata.
pub type Reply = Vec<(RecordBatch, BatchMetadata)>;

/// Reads one reply stream; `None` when the server closed the connection instead.
pub fn read_reply(reader: &mut BufReader<Box<dyn Read + Send>>) -> Option<Reply> {
    let mut stream = StreamReader::begin(reader, Limits::DEFAULT).expect("a readable reply")?;
    let mut batches = Vec::new();
    while let Some(batch) = stream.next(reader).expect("a readable reply") {
        batches.push(batch);
    }
    Some(batches)
}
