//! Stream states that travel in their HTTP cursor token, so a stream's next turn can run on
//! any replica sharing the token key (see `quiver_rpc::http`'s `streams.rs`: "carried" state).
//!
//! What a turn needs is small: the `init` request the stream was opened with (the bound
//! arguments, projection, filters and split it names are rebuilt from it, exactly as `init`
//! built them) and the position the stream had reached: a scan's own cursor
//! ([`crate::TableScan::snapshot`]) and its shared-work counter, a table-in-out state
//! ([`crate::InOutState::snapshot`]) and the output still waiting for `CONTINUE`. A scalar
//! stream has no position at all. The token is sealed by the HTTP layer; this module only lays
//! out its plaintext:
//!
//! ```text
//! format u8 | kind u8 | request (u32 length, bytes) | the kind's own fields
//! ```
//!
//! A snapshot past [`SNAPSHOT_BYTES_MAX`] is not carried: the stream stays held by its replica.

use std::sync::Arc;

use quiver_rpc::StreamState;
use quiver_vgi_contract::{errors, InitRequest};
use quiver_wire::ErrorReport;

use crate::init::InitContext;

/// Largest carried state: past it a stream stays in the process that holds it. It travels
/// in every turn's token, there and back, so it is a cursor's size, not a data buffer's.
pub const SNAPSHOT_BYTES_MAX: usize = 1 << 20;

const FORMAT: u8 = 1;
/// A scalar stream.
pub(crate) const SCALAR: u8 = 1;
/// A table function's scan.
pub(crate) const TABLE: u8 = 2;
/// A table-in-out function's INPUT stream.
pub(crate) const INPUT: u8 = 3;

/// The `init` request a resumable stream was opened with, kept to be carried.
pub(crate) type Request = Arc<[u8]>;

/// Lays out one snapshot.
pub(crate) struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub fn new(kind: u8, request: &[u8]) -> Writer {
        let mut writer = Writer {
            bytes: vec![FORMAT, kind],
        };
        writer.blob(request);
        writer
    }

    pub fn u8(&mut self, value: u8) -> &mut Writer {
        self.bytes.push(value);
        self
    }

    pub fn u64(&mut self, value: u64) -> &mut Writer {
        self.bytes.extend_from_slice(&value.to_be_bytes());
        self
    }

    pub fn blob(&mut self, bytes: &[u8]) -> &mut Writer {
        self.bytes
            .extend_from_slice(&(bytes.len().min(u32::MAX as usize) as u32).to_be_bytes());
        self.bytes.extend_from_slice(bytes);
        self
    }

    /// The snapshot, or `None` when it is too large to carry.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let bytes = std::mem::take(&mut self.bytes);
        (bytes.len() <= SNAPSHOT_BYTES_MAX).then_some(bytes)
    }
}

/// Reads one snapshot back; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], ErrorReport> {
        if self.rest.len() < count {
            return Err(malformed("truncated"));
        }
        let (taken, rest) = self.rest.split_at(count);
        self.rest = rest;
        Ok(taken)
    }

    pub fn u8(&mut self) -> Result<u8, ErrorReport> {
        Ok(self.take(1)?[0])
    }

    pub fn u64(&mut self) -> Result<u64, ErrorReport> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn blob(&mut self) -> Result<&'a [u8], ErrorReport> {
        let length = u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes"));
        self.take(length as usize)
    }

    /// Fails unless every byte was read.
    pub fn end(&self) -> Result<(), ErrorReport> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(malformed("trailing bytes"))
        }
    }
}

fn malformed(why: &str) -> ErrorReport {
    errors::invalid_argument(format!("carried stream state is malformed: {why}"))
}

/// Rebuilds a carried stream from its snapshot: the method's resume hook.
pub(crate) fn resume(
    context: &InitContext,
    snapshot: &[u8],
) -> Result<Box<dyn StreamState>, ErrorReport> {
    let mut reader = Reader { rest: snapshot };
    if reader.u8()? != FORMAT {
        return Err(malformed("unknown format"));
    }
    let kind = reader.u8()?;
    let raw = reader.blob()?;
    let request = InitRequest::decode(raw)?;
    let raw: Request = Arc::from(raw);
    let state = match kind {
        SCALAR => crate::init::resume_scalar(context, raw, &request)?,
        TABLE => crate::init::resume_table(context, raw, &request, &mut reader)?,
        INPUT => crate::init::resume_input(context, raw, &request, &mut reader)?,
        _ => return Err(malformed("unknown stream kind")),
    };
    reader.end()?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_as_written() {
        let bytes = Writer::new(TABLE, b"request")
            .u8(1)
            .u64(42)
            .blob(b"cursor")
            .finish()
            .unwrap();
        let mut reader = Reader { rest: &bytes };
        assert_eq!(
            (reader.u8().unwrap(), reader.u8().unwrap()),
            (FORMAT, TABLE)
        );
        assert_eq!(reader.blob().unwrap(), b"request");
        assert_eq!(reader.u8().unwrap(), 1);
        assert_eq!(reader.u64().unwrap(), 42);
        assert_eq!(reader.blob().unwrap(), b"cursor");
        reader.end().unwrap();
        assert!(reader.u8().is_err(), "reads past the end fail");
    }

    #[test]
    fn an_oversized_snapshot_is_not_carried() {
        let big = vec![0u8; SNAPSHOT_BYTES_MAX];
        assert!(Writer::new(SCALAR, &big).finish().is_none());
    }

    #[test]
    fn a_truncated_length_is_refused() {
        let mut reader = Reader {
            rest: &[0, 0, 0, 9, 1, 2],
        };
        let error = reader.blob().unwrap_err();
        assert!(error.message.contains("truncated"), "{}", error.message);
    }
}
