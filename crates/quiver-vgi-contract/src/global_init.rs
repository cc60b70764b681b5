//! `GlobalInitResponse`: the header every `init` stream starts with. The worker writes it
//! ([`GlobalInitResponse::encode`]); the engine reads it ([`GlobalInitResponse::parse`]) to learn
//! the execution it joined and how many connections that execution may use.

use arrow_array::RecordBatch;
use quiver_wire::ErrorReport;

use crate::errors;
use crate::limits::MAX_WORKERS_UNBOUNDED;
use crate::row::{RowBuilder, RowReader};
use crate::schemas;

/// The header of an `init` stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalInitResponse {
    /// The execution this stream belongs to (minted by the primary init).
    pub execution_id: Vec<u8>,
    /// Echoed on secondary and FINALIZE inits.
    pub opaque_data: Option<Vec<u8>>,
    /// Most connections the execution may use.
    pub max_workers: i64,
}

impl Default for GlobalInitResponse {
    fn default() -> GlobalInitResponse {
        GlobalInitResponse {
            execution_id: Vec::new(),
            opaque_data: None,
            max_workers: MAX_WORKERS_UNBOUNDED,
        }
    }
}

impl GlobalInitResponse {
    /// The header as the one-row batch of [`schemas::GLOBAL_INIT_RESPONSE`].
    pub fn encode(&self) -> RecordBatch {
        RowBuilder::new(schemas::GLOBAL_INIT_RESPONSE.clone())
            .bytes("execution_id", Some(&self.execution_id))
            .bytes("opaque_data", self.opaque_data.as_deref())
            .int("max_workers", Some(self.max_workers))
            .finish()
    }

    /// Reads a header batch leniently (by column name, as vgi-python does); a missing
    /// `max_workers` means unbounded.
    pub fn parse(batch: &RecordBatch) -> Result<GlobalInitResponse, ErrorReport> {
        if batch.num_rows() != 1 {
            return Err(errors::malformed(
                "GlobalInitResponse",
                format!("{} rows", batch.num_rows()),
            ));
        }
        let row = RowReader::new(batch, "GlobalInitResponse");
        Ok(GlobalInitResponse {
            execution_id: row.bytes("execution_id")?.unwrap_or_default().to_vec(),
            opaque_data: row.bytes("opaque_data")?.map(<[u8]>::to_vec),
            max_workers: row.int("max_workers")?.unwrap_or(MAX_WORKERS_UNBOUNDED),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let header = GlobalInitResponse {
            execution_id: vec![7; 16],
            opaque_data: Some(b"token".to_vec()),
            max_workers: 4,
        };
        let batch = header.encode();
        assert_eq!(batch.schema(), *schemas::GLOBAL_INIT_RESPONSE);
        assert_eq!(GlobalInitResponse::parse(&batch).unwrap(), header);
    }

    #[test]
    fn absent_values_read_as_defaults() {
        let batch = GlobalInitResponse {
            opaque_data: None,
            ..GlobalInitResponse::default()
        }
        .encode();
        let parsed = GlobalInitResponse::parse(&batch).unwrap();
        assert_eq!(parsed.opaque_data, None);
        assert_eq!(parsed.max_workers, MAX_WORKERS_UNBOUNDED);
    }

    #[test]
    fn a_header_is_exactly_one_row() {
        let empty = GlobalInitResponse::default().encode().slice(0, 0);
        let error = GlobalInitResponse::parse(&empty).unwrap_err();
        assert!(error.message.contains("0 rows"), "{error}");
    }
}
