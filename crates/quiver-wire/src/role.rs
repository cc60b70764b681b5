//! What a batch means, read from its row count and metadata.

use arrow_array::RecordBatch;

use crate::keys;
use crate::log::LogRecord;
use crate::metadata::BatchMetadata;

/// The role of one batch on the wire.
#[derive(Debug, PartialEq)]
pub enum BatchRole {
    /// Data for the method (including zero-row producer ticks).
    Data,
    /// A log record, or at EXCEPTION level an error.
    Log(LogRecord),
    /// The batch's real content is an IPC stream in shared memory.
    ShmPointer {
        /// Absolute offset in the segment.
        offset: u64,
        /// Length in bytes.
        length: u64,
    },
    /// The peer cancels the stream.
    Cancel,
    /// The batch points at external storage, which this implementation does not fetch.
    External,
}

/// Classifies a batch. Only zero-row batches carry a control role; a pointer whose
/// offset or length is not a decimal number is reported as `Err`.
pub fn classify(batch: &RecordBatch, metadata: &BatchMetadata) -> Result<BatchRole, String> {
    if batch.num_rows() != 0 || metadata.is_empty() {
        return Ok(BatchRole::Data);
    }
    if let Some(record) = LogRecord::from_metadata(metadata) {
        return Ok(BatchRole::Log(record));
    }
    if let Some(offset) = metadata.get(keys::SHM_OFFSET) {
        let length = metadata
            .get(keys::SHM_LENGTH)
            .ok_or("shm pointer without a length")?;
        let offset = offset
            .parse::<u64>()
            .map_err(|_| format!("shm offset {offset:?} is not a number"))?;
        let length = length
            .parse::<u64>()
            .map_err(|_| format!("shm length {length:?} is not a number"))?;
        return Ok(BatchRole::ShmPointer { offset, length });
    }
    if metadata.get(keys::CANCEL).is_some() {
        return Ok(BatchRole::Cancel);
    }
    if metadata.contains(keys::LOCATION) {
        return Ok(BatchRole::External);
    }
    Ok(BatchRole::Data)
}
