//! What [`App`] reads from a request before a call runs: its response cap, its body within
//! the size limit, and the Arrow stream in it, each refused with vgi-rpc's status when wrong.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use quiver_wire::{decode_stream, BatchMetadata, ErrorReport, WireError};

use super::super::codec;
use super::{
    malformed, too_large, App, AppRequest, Refused, ACCEPT_MAX_RESPONSE_BYTES, BUDGET_BYTES_MAX,
    RESPONSE_BYTES_MIN,
};

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
}
