//! What [`App`] reads from a request before a call runs: its response cap, its body within
//! the size limit, the Arrow stream in it, and a call's one batch checked against the method,
//! each refused with vgi-rpc's status when wrong.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use quiver_wire::{decode_stream, keys, BatchMetadata, ErrorReport, WireError};

use super::super::codec;
use super::{
    malformed, too_large, App, AppRequest, Refused, ACCEPT_MAX_RESPONSE_BYTES, BUDGET_BYTES_MAX,
    RESPONSE_BYTES_MIN,
};
use crate::errors;
use crate::method::Method;
use crate::server::version_gate;
use crate::service::Service;

impl App {
    /// The response cap of this request: the server's and the client's, whichever is lower.
    pub(super) fn budget(&self, request: &AppRequest) -> Result<Option<u64>, Refused> {
        let client = match request.header(&ACCEPT_MAX_RESPONSE_BYTES.to_ascii_lowercase()) {
            None => None,
            Some(raw) => {
                let valid = !raw.is_empty()
                    && !raw.starts_with('0')
                    && raw.bytes().all(|b| b.is_ascii_digit());
                match raw.parse::<u64>() {
                    Ok(value)
                        if valid && (RESPONSE_BYTES_MIN..=BUDGET_BYTES_MAX).contains(&value) =>
                    {
                        Some(value)
                    }
                    _ => {
                        return Err(Refused(
                            400,
                            ErrorReport::new(
                                "ValueError",
                                format!(
                                    "{ACCEPT_MAX_RESPONSE_BYTES} must be one decimal integer from \
                                     {RESPONSE_BYTES_MIN} through {BUDGET_BYTES_MAX}"
                                ),
                            ),
                        ))
                    }
                }
            }
        };
        Ok([self.config.max_response_bytes, client]
            .into_iter()
            .flatten()
            .min())
    }

    pub(super) fn body(&self, request: &AppRequest) -> Result<Vec<u8>, Refused> {
        let max = self.config.max_request_bytes;
        if request.body.len() > max {
            return Err(Refused(413, too_large(request.body.len(), max)));
        }
        match request.header("content-encoding") {
            None => Ok(request.body.clone()),
            Some(coding) => codec::decode(request.body.clone(), coding, max).map_err(|error| {
                let status = match error {
                    codec::CodingError::TooLarge(..) => 413,
                    codec::CodingError::Unsupported(_) => 415,
                    codec::CodingError::Corrupt(..) => 400,
                };
                Refused(status, ErrorReport::new("ValueError", error.to_string()))
            }),
        }
    }

    /// The batches of a request body: one Arrow IPC stream.
    pub(super) fn stream(
        &self,
        body: Vec<u8>,
    ) -> Result<Vec<(RecordBatch, BatchMetadata)>, Refused> {
        if body.is_empty() {
            return Err(Refused(
                400,
                malformed("the request body is empty; expected an Arrow IPC stream".into()),
            ));
        }
        let limits = self.server.config().limits;
        match decode_stream(Buffer::from_vec(body), limits) {
            Ok((_, batches)) => Ok(batches),
            Err(error @ WireError::BodySkipped { .. }) => Err(Refused(
                413,
                ErrorReport::limit_exceeded(format!("request batch: {error}")),
            )),
            Err(error) => Err(Refused(400, malformed(error.to_string()))),
        }
    }

    // -- calls ------------------------------------------------------------------------------

    /// A call's one request batch and its metadata, checked against the method the URL names
    /// and against the service's protocol and version.
    pub(super) fn call_batch(
        &self,
        service: &Service,
        method: &Method,
        body: Vec<u8>,
    ) -> Result<(RecordBatch, BatchMetadata), Refused> {
        let mut batches = self.stream(body)?;
        if batches.len() != 1 {
            return Err(Refused(
                400,
                errors::protocol_error(format!(
                    "request stream carries {} batches; expected exactly one",
                    batches.len()
                )),
            ));
        }
        let (batch, metadata) = batches.pop().expect("one batch");
        let Some(named) = metadata.get(keys::METHOD) else {
            return Err(Refused(
                400,
                errors::protocol_error(
                    "Missing 'vgi_rpc.method' in request batch custom_metadata".into(),
                ),
            ));
        };
        match metadata.get(keys::REQUEST_VERSION_KEY) {
            Some(keys::REQUEST_VERSION) => {}
            other => return Err(Refused(400, errors::request_version(other))),
        }
        if named != method.name {
            return Err(Refused(
                400,
                ErrorReport::new(
                    "TypeError",
                    format!(
                        "Method name mismatch: URL path has '{}' but Arrow IPC custom_metadata \
                         'vgi_rpc.method' has '{named}'. These must match.",
                        method.name
                    ),
                ),
            ));
        }
        if batch.num_columns() > 0 && batch.num_rows() != 1 {
            return Err(Refused(
                400,
                errors::protocol_error(format!(
                    "Expected 1 row in request batch, got {}.",
                    batch.num_rows()
                )),
            ));
        }
        if let Some(named) = metadata.get(keys::PROTOCOL) {
            if named != service.protocol_name {
                return Err(Refused(
                    400,
                    errors::protocol_error(format!(
                        "the URL names protocol '{}' but the request names '{named}'",
                        service.protocol_name
                    )),
                ));
            }
        }
        if let Some(report) = version_gate(service, &metadata) {
            return Err(Refused(400, report));
        }
        Ok((batch, metadata))
    }
}
