//! Split scans (`table_function_plan`), as vgi-python 0.47.0 defines them.
//!
//! The exchange:
//! 1. After `bind`, the engine calls the unary `table_function_plan` with a [`PlanRequest`] (the
//!    bind, its pushdown, sizing hints and `max_splits_per_response`; `cursor` unset).
//! 2. The worker answers a [`PlanResponse`]: one page of [`ScanSplit`]s (each a serialized
//!    `ScanSplit` in `list<binary>`), `next_cursors` to continue (normally 0 or 1; several must
//!    partition the rest of the enumeration), the plan's `execution_id` and `init_opaque_data`,
//!    `max_workers` (how many splits may be in flight at once) and estimates of the whole scan.
//! 3. The engine sends the same request with each cursor until no cursor is left, bounded by
//!    [`PLAN_PAGES_MAX`] pages and [`PLAN_SPLITS_MAX`] splits.
//! 4. Each split is redeemed by an ordinary `init` on any connection, carrying
//!    `split_tokens = [token]`, the plan's `execution_id` and `init_opaque_data`; the stream is a
//!    producer like any table scan. Zero splits means zero rows and no `init` at all.
//!
//! A token is the worker's payload in a framework envelope ([`split_token`]); the engine never
//! looks inside it, it only sends it back.

use arrow_array::cast::AsArray;
use arrow_array::Array;
use quiver_wire::ErrorReport;

use crate::errors;
use crate::ipc;
use crate::row::{RowBuilder, RowReader};
use crate::schemas;

/// Most plan pages an engine follows before it refuses the plan.
pub const PLAN_PAGES_MAX: usize = 4096;
/// Most splits one plan may name.
pub const PLAN_SPLITS_MAX: usize = 1 << 20;
/// Most bytes of one split token (a split names work, it does not carry it).
pub const SPLIT_TOKEN_BYTES_MAX: usize = 1 << 20;

/// `TableFunctionPlanRequest`: the parts quiver sends (the rest travel as nulls).
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// The serialized `BindRequest`.
    pub bind_call: Vec<u8>,
    /// `BindResponse.opaque_data`, echoed.
    pub bind_opaque_data: Option<Vec<u8>>,
    /// Columns the scan reads, as on `init`.
    pub projection_ids: Option<Vec<i64>>,
    /// A filter v2 batch as an IPC stream, as on `init`.
    pub pushdown_filters: Option<Vec<u8>>,
    /// A parallelism floor.
    pub min_splits: Option<i64>,
    /// Pagination cap for one response.
    pub max_splits_per_response: Option<i64>,
    /// Where to resume the enumeration of splits; `None` starts the plan.
    pub cursor: Option<Vec<u8>>,
}

impl PlanRequest {
    /// The one-row batch of [`schemas::PLAN_REQUEST`], as an IPC stream.
    pub fn encode(&self) -> Vec<u8> {
        let mut row = RowBuilder::new(schemas::PLAN_REQUEST.clone())
            .bytes("bind_call", Some(&self.bind_call))
            .bytes("bind_opaque_data", self.bind_opaque_data.as_deref())
            .bytes("pushdown_filters", self.pushdown_filters.as_deref())
            .int("min_splits", self.min_splits)
            .int("max_splits_per_response", self.max_splits_per_response)
            .bytes("cursor", self.cursor.as_deref())
            .bool("filters_complete", Some(true));
        if let Some(ids) = &self.projection_ids {
            row = row.list(
                "projection_ids",
                std::sync::Arc::new(arrow_array::Int64Array::from(ids.clone())),
            );
        }
        ipc::encode_batch(&row.finish())
    }

    /// Reads a request leniently (by column name).
    pub fn decode(bytes: &[u8]) -> Result<PlanRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "TableFunctionPlanRequest")?;
        let row = RowReader::new(&batch, "TableFunctionPlanRequest");
        Ok(PlanRequest {
            bind_call: row
                .bytes("bind_call")?
                .ok_or_else(|| row.missing("bind_call"))?
                .to_vec(),
            bind_opaque_data: row.bytes("bind_opaque_data")?.map(<[u8]>::to_vec),
            projection_ids: row.ints("projection_ids")?,
            pushdown_filters: row
                .bytes("pushdown_filters")?
                .filter(|b| !b.is_empty())
                .map(<[u8]>::to_vec),
            min_splits: row.int("min_splits")?,
            max_splits_per_response: row.int("max_splits_per_response")?,
            cursor: row.bytes("cursor")?.map(<[u8]>::to_vec),
        })
    }
}

/// `ScanSplit`: what the engine keeps of one split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSplit {
    /// The worker's own bytes (set by the worker's code; the engine ignores them).
    pub payload: Vec<u8>,
    /// The envelope the engine sends back to redeem the split.
    pub token: Vec<u8>,
    /// Rows it will produce, if known.
    pub estimated_rows: Option<i64>,
    /// `estimated_rows` is exact.
    pub rows_exact: bool,
    /// Bytes it will produce, if known.
    pub estimated_bytes: Option<i64>,
}

impl ScanSplit {
    /// The serialized one-row batch of [`schemas::SCAN_SPLIT`].
    pub fn encode(&self) -> Vec<u8> {
        ipc::encode_batch(
            &RowBuilder::new(schemas::SCAN_SPLIT.clone())
                .bytes("payload", Some(&self.payload))
                .bytes("token", Some(&self.token))
                .int("estimated_rows", self.estimated_rows)
                .bool("rows_exact", Some(self.rows_exact))
                .int("estimated_bytes", self.estimated_bytes)
                .finish(),
        )
    }

    /// Reads one serialized split; its token is bounded by [`SPLIT_TOKEN_BYTES_MAX`].
    pub fn decode(bytes: &[u8]) -> Result<ScanSplit, ErrorReport> {
        let batch = ipc::decode_row(bytes, "ScanSplit")?;
        let row = RowReader::new(&batch, "ScanSplit");
        let token = row.bytes("token")?.unwrap_or_default().to_vec();
        if token.len() > SPLIT_TOKEN_BYTES_MAX {
            return Err(errors::malformed(
                "ScanSplit",
                format!("a token of {} bytes", token.len()),
            ));
        }
        Ok(ScanSplit {
            payload: row.bytes("payload")?.unwrap_or_default().to_vec(),
            token,
            estimated_rows: row.int("estimated_rows")?,
            rows_exact: row.bool("rows_exact")?.unwrap_or(false),
            estimated_bytes: row.int("estimated_bytes")?,
        })
    }
}

/// `PlanResponse`: one page of a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanResponse {
    /// This page's splits.
    pub splits: Vec<ScanSplit>,
    /// Where to continue; empty when the plan is complete.
    pub next_cursors: Vec<Vec<u8>>,
    /// The execution every split's `init` joins.
    pub execution_id: Option<Vec<u8>>,
    /// Echoed on every split's `init`.
    pub init_opaque_data: Option<Vec<u8>>,
    /// Most splits in flight at once.
    pub max_workers: Option<i64>,
    /// Estimated number of splits in the whole plan.
    pub estimated_total_splits: Option<i64>,
    /// Estimated rows of the whole scan.
    pub estimated_total_rows: Option<i64>,
    /// Estimated bytes of the whole scan.
    pub estimated_total_bytes: Option<i64>,
}

impl PlanResponse {
    /// The serialized one-row batch of [`schemas::PLAN_RESPONSE`] (`scope` is `catalog`).
    pub fn encode(&self) -> Vec<u8> {
        let splits: Vec<Vec<u8>> = self.splits.iter().map(ScanSplit::encode).collect();
        let mut row = RowBuilder::new(schemas::PLAN_RESPONSE.clone())
            .bytes_list("splits", &splits)
            .bytes("execution_id", self.execution_id.as_deref())
            .bytes("init_opaque_data", self.init_opaque_data.as_deref())
            .int("max_workers", self.max_workers)
            .int("estimated_total_splits", self.estimated_total_splits)
            .int("estimated_total_rows", self.estimated_total_rows)
            .int("estimated_total_bytes", self.estimated_total_bytes)
            .str("scope", Some("catalog"));
        if !self.next_cursors.is_empty() {
            row = row.bytes_list("next_cursors", &self.next_cursors);
        }
        ipc::encode_batch(&row.finish())
    }

    /// Reads one page; at most `splits_left` splits are accepted.
    pub fn decode(bytes: &[u8], splits_left: usize) -> Result<PlanResponse, ErrorReport> {
        let batch = ipc::decode_row(bytes, "PlanResponse")?;
        let row = RowReader::new(&batch, "PlanResponse");
        let mut splits = Vec::new();
        if let Some(items) = row.list("splits")? {
            if items.len() > splits_left {
                return Err(errors::malformed(
                    "PlanResponse",
                    format!("a plan of more than {PLAN_SPLITS_MAX} splits"),
                ));
            }
            let items = items
                .as_binary_opt::<i32>()
                .ok_or_else(|| errors::malformed("PlanResponse", "'splits' is not binary"))?;
            for item in items.iter() {
                let item = item.ok_or_else(|| errors::malformed("PlanResponse", "a null split"))?;
                splits.push(ScanSplit::decode(item)?);
            }
        }
        Ok(PlanResponse {
            splits,
            next_cursors: row.bytes_list("next_cursors")?.unwrap_or_default(),
            execution_id: row.bytes("execution_id")?.map(<[u8]>::to_vec),
            init_opaque_data: row.bytes("init_opaque_data")?.map(<[u8]>::to_vec),
            max_workers: row.int("max_workers")?,
            estimated_total_splits: row.int("estimated_total_splits")?,
            estimated_total_rows: row.int("estimated_total_rows")?,
            estimated_total_bytes: row.int("estimated_total_bytes")?,
        })
    }
}

/// The split-token envelope (format version 1), little-endian:
/// `version: u8 | flags: u8 | anchor_len: u16 | bind_fingerprint: [u8; 16] | anchor | payload`.
/// Flag bit 0 marks a sealed payload; quiver's workers hold no signing key and never seal, and
/// (as vgi-python does) refuse a sealed token rather than trust the flag.
pub mod split_token {
    /// The envelope's format version.
    pub const FORMAT_VERSION: u8 = 1;
    /// Flag bit 0: the payload is sealed.
    pub const FLAG_PAYLOAD_SEALED: u8 = 0x01;
    /// Bytes of the bind fingerprint.
    pub const FINGERPRINT_LEN: usize = 16;
    const HEADER_LEN: usize = 4 + FINGERPRINT_LEN;

    /// Wraps `payload` for the bind whose fingerprint is `fingerprint` (no anchor, unsealed).
    pub fn build(payload: &[u8], fingerprint: &[u8; FINGERPRINT_LEN]) -> Vec<u8> {
        let mut token = Vec::with_capacity(HEADER_LEN + payload.len());
        token.extend_from_slice(&[FORMAT_VERSION, 0, 0, 0]);
        token.extend_from_slice(fingerprint);
        token.extend_from_slice(payload);
        token
    }

    /// The payload of `token`, checked against the fingerprint of the bind redeeming it; the
    /// error names what is wrong (`[SPLIT_TOKEN_INVALID] ...`, as vgi-python words it).
    pub fn open<'a>(
        token: &'a [u8],
        fingerprint: &[u8; FINGERPRINT_LEN],
    ) -> Result<&'a [u8], String> {
        let invalid = |why: String| Err(format!("[SPLIT_TOKEN_INVALID] {why}"));
        if token.len() < HEADER_LEN {
            return invalid(format!(
                "split token too short: {} bytes, need at least {HEADER_LEN}",
                token.len()
            ));
        }
        if token[0] != FORMAT_VERSION {
            return invalid(format!(
                "unsupported split-token format_version {}; this worker speaks {FORMAT_VERSION}",
                token[0]
            ));
        }
        let flags = token[1];
        if flags & !FLAG_PAYLOAD_SEALED != 0 {
            return invalid(format!(
                "split token sets reserved flag bits (flags=0x{flags:02x})"
            ));
        }
        if flags & FLAG_PAYLOAD_SEALED != 0 {
            return invalid(
                "split token is sealed but this worker holds no signing key; cannot open it".into(),
            );
        }
        let anchor_len = usize::from(u16::from_le_bytes([token[2], token[3]]));
        let end_of_anchor = HEADER_LEN + anchor_len;
        if token.len() < end_of_anchor {
            return invalid(format!(
                "split token truncated: anchor_len={anchor_len} exceeds token length {}",
                token.len()
            ));
        }
        if token[4..HEADER_LEN] != fingerprint[..] {
            return invalid(
                "split token was minted for a different bind (fingerprint mismatch)".into(),
            );
        }
        Ok(&token[end_of_anchor..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_pages_round_trip() {
        let page = PlanResponse {
            splits: vec![ScanSplit {
                payload: b"p".to_vec(),
                token: b"t".to_vec(),
                estimated_rows: Some(3),
                rows_exact: true,
                estimated_bytes: None,
            }],
            next_cursors: vec![b"c".to_vec()],
            execution_id: Some(vec![1; 16]),
            max_workers: Some(4),
            ..PlanResponse::default()
        };
        assert_eq!(PlanResponse::decode(&page.encode(), 10).unwrap(), page);
        let refused = PlanResponse::decode(&page.encode(), 0).unwrap_err();
        assert!(refused.message.contains("more than"), "{refused:?}");
        let request = PlanRequest {
            bind_call: b"b".to_vec(),
            cursor: Some(b"c".to_vec()),
            projection_ids: Some(vec![1, 0]),
            ..PlanRequest::default()
        };
        let decoded = PlanRequest::decode(&request.encode()).unwrap();
        assert_eq!(decoded.cursor.as_deref(), Some(&b"c"[..]));
        assert_eq!(decoded.projection_ids, Some(vec![1, 0]));
    }

    #[test]
    fn tokens_open_only_for_their_bind() {
        let fingerprint = [7u8; 16];
        let token = split_token::build(b"range", &fingerprint);
        assert_eq!(split_token::open(&token, &fingerprint).unwrap(), b"range");
        let other = split_token::open(&token, &[8u8; 16]).unwrap_err();
        assert!(other.contains("different bind"), "{other}");
        let mut sealed = token.clone();
        sealed[1] = split_token::FLAG_PAYLOAD_SEALED;
        assert!(split_token::open(&sealed, &fingerprint)
            .unwrap_err()
            .contains("sealed"));
        assert!(split_token::open(&token[..5], &fingerprint)
            .unwrap_err()
            .contains("too short"));
    }
}
