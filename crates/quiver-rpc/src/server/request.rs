//! Reading one request: its stream read to the end marker (so framing stays intact when the
//! request is refused), the wire-contract checks, and the segment it advertises attached.

use arrow_array::RecordBatch;
use quiver_wire::{keys, BatchMetadata, ErrorCode, ErrorReport, StreamReader, WireError};

use super::Session;
use crate::errors;
use crate::link::ConnectionError;

/// A decoded request.
pub(super) struct Request {
    pub(super) method: String,
    pub(super) metadata: BatchMetadata,
    pub(super) batch: RecordBatch,
}

/// Why a request could not be dispatched.
pub(super) enum RequestError {
    /// Framing is broken (or the segment failed); the connection cannot continue.
    Fatal(ConnectionError),
    /// The request was read whole but is not acceptable; answer and continue.
    Rejected(ErrorReport),
}

impl From<WireError> for RequestError {
    fn from(error: WireError) -> Self {
        RequestError::Fatal(error.into())
    }
}

impl Session<'_> {
    /// Reads one request stream to its end marker, so framing stays intact even
    /// when the request is rejected.
    pub(super) fn read_request(&mut self) -> Result<Option<Request>, RequestError> {
        let limits = self.limits();
        let read: Result<_, WireError> = self.link.wait_for_peer(self.shm.as_mut(), |input| {
            let Some(mut reader) = StreamReader::begin(input, limits)? else {
                return Ok(None);
            };
            let first = reader.next(input);
            // Drain only a stream whose framing survived (a message read whole but
            // refused, e.g. metadata that is not UTF-8); after a framing error the
            // bytes that follow are not messages.
            if !reader.framing_intact() {
                return Err(first.expect_err("framing is lost only by an error"));
            }
            let extra = reader.drain(input)?;
            Ok(Some((first, extra)))
        });
        let Some((first, extra)) = read? else {
            return Ok(None);
        };
        let first = first.map_err(|error| {
            RequestError::Rejected(match error {
                WireError::BodySkipped { .. } => {
                    ErrorReport::limit_exceeded(format!("request batch: {error}"))
                }
                error => errors::protocol_error(format!("unreadable request batch: {error}")),
            })
        })?;
        let Some((batch, metadata)) = first else {
            return Err(RequestError::Rejected(errors::rpc_error(
                "request stream carries no batch",
                ErrorCode::InvalidArgument,
            )));
        };
        if extra > 0 {
            return Err(RequestError::Rejected(errors::rpc_error(
                "request stream carries more than one batch",
                ErrorCode::InvalidArgument,
            )));
        }
        let Some(method) = metadata.get(keys::METHOD).map(str::to_string) else {
            return Err(RequestError::Rejected(errors::protocol_error(
                "Missing 'vgi_rpc.method' in request batch custom_metadata".into(),
            )));
        };
        match metadata.get(keys::REQUEST_VERSION_KEY) {
            Some(keys::REQUEST_VERSION) => {}
            other => {
                return Err(RequestError::Rejected(errors::request_version(other)));
            }
        }
        self.refresh_shm(&metadata)
            .map_err(RequestError::Rejected)?;
        let (batch, metadata) = self
            .resolve_input(batch, metadata)
            .map_err(RequestError::Fatal)?;
        if batch.num_columns() > 0 && batch.num_rows() != 1 {
            return Err(RequestError::Rejected(errors::protocol_error(format!(
                "Expected 1 row in request batch, got {}: each parameter is a column of one row",
                batch.num_rows()
            ))));
        }
        Ok(Some(Request {
            method,
            metadata,
            batch,
        }))
    }
}
