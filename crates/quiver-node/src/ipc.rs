//! Arrow IPC streams, the form in which batches cross the JS boundary (apache-arrow reads and
//! writes them without a copy of its own).

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{Schema, SchemaRef};

use crate::error::invalid;

/// Batches given by JS to insert.
pub const DECODED_BATCHES_MAX: usize = 1 << 20;

/// One IPC stream of `batches` (the schema first, then each batch, then the end marker).
pub fn encode(schema: &Schema, batches: &[RecordBatch]) -> napi::Result<Vec<u8>> {
    let body_bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
    let mut writer = StreamWriter::try_new(Vec::with_capacity(body_bytes + 4096), schema)
        .map_err(|error| invalid(format!("Arrow IPC: {error}")))?;
    for batch in batches {
        writer
            .write(batch)
            .map_err(|error| invalid(format!("Arrow IPC: {error}")))?;
    }
    writer
        .into_inner()
        .map_err(|error| invalid(format!("Arrow IPC: {error}")))
}

/// The schema and batches of one IPC stream; the arrays are views over `bytes` (no copy when
/// aligned).
pub fn decode(bytes: Vec<u8>) -> napi::Result<(SchemaRef, Vec<RecordBatch>)> {
    let mut buffer = Buffer::from_vec(bytes);
    let mut decoder = StreamDecoder::new();
    let mut batches = Vec::new();
    while !buffer.is_empty() {
        if let Some(batch) = decoder
            .decode(&mut buffer)
            .map_err(|error| invalid(format!("not an Arrow IPC stream: {error}")))?
        {
            if batches.len() == DECODED_BATCHES_MAX {
                return Err(invalid(format!(
                    "an IPC stream of more than {DECODED_BATCHES_MAX} batches"
                )));
            }
            batches.push(batch);
        }
    }
    decoder
        .finish()
        .map_err(|error| invalid(format!("a truncated Arrow IPC stream: {error}")))?;
    let schema = decoder
        .schema()
        .ok_or_else(|| invalid("an Arrow IPC stream without a schema"))?;
    Ok((schema, batches))
}
