//! The cancel actions: Flight's `CancelFlightInfo` (body: a `CancelFlightInfoRequest`) and Flight
//! SQL's older `CancelQuery` (body: the `FlightInfo`'s bytes). Both cancel the reads in flight of
//! the `FlightInfo`'s tickets (`running.rs`); a `FlightInfo` nobody reads now (not yet read, or
//! read to its end) is `not_found`, as Flight's specification asks.

use arrow_flight::sql::ActionCancelQueryResult;
use arrow_flight::{CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, FlightInfo};
use prost::bytes::Bytes;
use prost::Message;
use tonic::Status;

use super::running::Running;

/// The action's type name.
pub const CANCEL_FLIGHT_INFO: &str = "CancelFlightInfo";

/// Cancels the reads of `info`'s tickets; refused when none runs.
fn cancel(running: &Running, info: &FlightInfo) -> Result<(), Status> {
    let cancelled: usize = info
        .endpoint
        .iter()
        .filter_map(|endpoint| endpoint.ticket.as_ref())
        .map(|ticket| running.cancel(&ticket.ticket))
        .sum();
    if cancelled == 0 {
        return Err(Status::not_found(
            "no statement reads this FlightInfo now (not started, or finished)",
        ));
    }
    Ok(())
}

/// `CancelFlightInfo`: the `CancelFlightInfoResult`'s bytes.
pub fn cancel_flight_info(running: &Running, body: &[u8]) -> Result<Bytes, Status> {
    let request = CancelFlightInfoRequest::decode(body)
        .map_err(|e| Status::invalid_argument(format!("CancelFlightInfo: {e}")))?;
    let info = request.info.ok_or_else(|| {
        Status::invalid_argument("CancelFlightInfo: the request has no FlightInfo")
    })?;
    cancel(running, &info)?;
    let result = CancelFlightInfoResult {
        status: CancelStatus::Cancelled as i32,
    };
    Ok(result.encode_to_vec().into())
}

/// `CancelQuery`.
pub fn cancel_query(running: &Running, info: &[u8]) -> Result<ActionCancelQueryResult, Status> {
    let info = FlightInfo::decode(info)
        .map_err(|e| Status::invalid_argument(format!("CancelQuery: {e}")))?;
    cancel(running, &info)?;
    // CancelQuery's CANCELLED is CancelFlightInfo's number (arrow-flight does not export the
    // older enum).
    Ok(ActionCancelQueryResult {
        result: CancelStatus::Cancelled as i32,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_flight::{FlightEndpoint, Ticket};

    use super::*;

    #[test]
    fn a_running_read_is_cancelled_and_an_unknown_one_is_not_found() {
        let running = Arc::new(Running::default());
        let info = FlightInfo::new()
            .with_endpoint(FlightEndpoint::new().with_ticket(Ticket::new(b"t".to_vec())));
        let body = CancelFlightInfoRequest::new(info.clone()).encode_to_vec();
        let refused = cancel_flight_info(&running, &body).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::NotFound);
        let read = running.register(Bytes::from_static(b"t"));
        let answer = cancel_flight_info(&running, &body).unwrap();
        let result = CancelFlightInfoResult::decode(answer).unwrap();
        assert_eq!(result.status, CancelStatus::Cancelled as i32);
        assert!(read.read().is_cancelled());
        let garbage = cancel_flight_info(&running, b"\xff\xff").unwrap_err();
        assert_eq!(garbage.code(), tonic::Code::InvalidArgument);
        assert!(cancel_query(&running, &info.encode_to_vec()).is_ok());
    }
}
