//! A response's representation: the format a caller negotiates ([`format`]), the body written in
//! it from the batches a compiled query returned ([`encode`]), and its content coding
//! ([`encoding`]).
//!
//! A body is a pure function of the batches and [`BodyMeta`], which hold only what is the same for
//! every request with the same cache key: that is what lets the cache keep bodies, compressed, and
//! the ETag name them. The one exception is the JSON envelope, whose `meta` also says what is true
//! of one request ([`RequestFacts`]: its id, the time, the cache's answer, the freshness's age, as
//! offloader's clients read them): its body is the cached head ([`encode`]) joined to a tail
//! written per response ([`envelope_tail`], [`splice`]).

pub mod chunks;
pub mod columnar;
mod csv;
pub mod encoding;
pub mod format;
mod json;
pub mod splice;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};
use axum::body::Bytes;

pub use encoding::{compress, negotiate_encoding, Encoding};
pub use format::{negotiate, Format};
pub use json::envelope_tail;

use crate::project::ServingMode;

/// What a body says about itself besides its rows (the JSON envelope's `meta`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyMeta {
    pub endpoint: String,
    pub version: u32,
    pub snapshot_id: String,
    pub serving_mode: ServingMode,
    pub freshness: Freshness,
    /// The cursor of the next page, when the response is a full page of a keyset-paginated
    /// endpoint.
    pub next_cursor: Option<String>,
}

/// The snapshot's freshness as the endpoint declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Freshness {
    /// The manifest's watermark (RFC 3339).
    pub watermark: Option<String>,
    pub max_staleness_minutes: Option<u64>,
}

/// What a JSON envelope's `meta` says of the one response it is part of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFacts<'a> {
    pub request_id: &'a str,
    /// When this response was made: UTC with microseconds and `Z` (`2026-07-01T18:21:10.123456Z`).
    pub generated_at: String,
    /// `hit` (from the response cache), `miss` (computed and cached) or `off` (never cached).
    pub cache: &'a str,
    /// Whole seconds from the watermark to now (negative for a watermark in the future).
    pub age_seconds: Option<i64>,
    /// The age is over the endpoint's `max_staleness_minutes`.
    pub stale: bool,
}

/// A body could not be written. Never shown to a caller (it is an `internal` error there).
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("result column {index} is `{found}`, the result schema says `{expected}`")]
    SchemaMismatch {
        index: usize,
        expected: String,
        found: String,
    },
    #[error("result batch has {found} columns, the result schema {expected}")]
    ColumnCount { expected: usize, found: usize },
    #[error("encoding the body: {0}")]
    Arrow(#[from] ArrowError),
    #[error("writing parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// Writes the body of a response in `format` from the rows the compiled query returned; for
/// JSON, the envelope's head, which [`envelope_tail`] closes. `schema` is the query's result
/// schema: it names the columns of a response without rows.
pub fn encode(
    format: Format,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    meta: &BodyMeta,
) -> Result<Bytes, EncodeError> {
    for batch in batches {
        check_batch(schema, batch)?;
    }
    let body = match format {
        Format::Json => json::envelope_head(batches)?,
        Format::Ndjson => {
            let mut body = Vec::new();
            for batch in batches {
                json::ndjson_rows(batch, &mut body)?;
            }
            body
        }
        Format::Csv => csv::body(schema, batches)?,
        Format::ArrowStream => columnar::arrow_stream(schema, batches, meta)?,
        Format::Parquet => columnar::parquet_file(schema, batches, meta)?,
    };
    Ok(exact_bytes(body))
}

/// `body` as `Bytes` holding no spare capacity: `Bytes::from(Vec)` keeps the vector's whole
/// allocation (up to twice its length after growing), which a cached body would hold unseen by
/// the cache's byte bound.
pub fn exact_bytes(mut body: Vec<u8>) -> Bytes {
    body.shrink_to_fit();
    Bytes::from(body)
}

/// A batch holds the result schema's columns, in order, with the same names and types: a server
/// that answered anything else is not trusted with a response.
fn check_batch(schema: &SchemaRef, batch: &RecordBatch) -> Result<(), EncodeError> {
    let expected = schema.fields();
    let found = batch.schema_ref().fields();
    if expected.len() != found.len() {
        return Err(EncodeError::ColumnCount {
            expected: expected.len(),
            found: found.len(),
        });
    }
    for (index, (expected, found)) in expected.iter().zip(found.iter()).enumerate() {
        if expected.name() != found.name()
            || !expected.data_type().equals_datatype(found.data_type())
        {
            return Err(EncodeError::SchemaMismatch {
                index,
                expected: format!("{} {}", expected.name(), expected.data_type()),
                found: format!("{} {}", found.name(), found.data_type()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
