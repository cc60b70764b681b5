//! Which contract version to speak to a worker: discovery's calls run through [`negotiated`],
//! which starts in the worker's current dialect and, when the worker refuses the request's
//! protocol name or version, moves the worker to the dialect the refusal names and tries again
//! (crates/quiver-vgi-contract/src/dialects.rs). Where no dialect fits, the error names what the
//! worker serves and everything quiver speaks.

use quiver_rpc::{Client, RpcError};
use quiver_vgi_contract::dialects::{self, Next, DIALECTS};
use quiver_vgi_contract::Dialect;
use quiver_wire::ErrorReport;

use crate::ffi::{Failure, FailureCode, Outcome};
use crate::worker::Worker;

/// Why one attempt stopped: the connection failed, or a reply could not be read.
pub enum Step {
    /// The call failed (a remote error included).
    Client(RpcError),
    /// The reply broke the contract.
    Decode(ErrorReport),
}

impl From<RpcError> for Step {
    fn from(error: RpcError) -> Step {
        Step::Client(error)
    }
}

impl From<ErrorReport> for Step {
    fn from(report: ErrorReport) -> Step {
        Step::Decode(report)
    }
}

/// Runs `body` on one of `worker`'s connections, in the dialect it speaks, until the worker
/// accepts the dialect: at most one attempt per dialect, plus the first.
pub fn negotiated<T>(
    worker: &Worker,
    during: &str,
    mut body: impl FnMut(&mut Client, Dialect) -> Result<T, Step>,
) -> Outcome<T> {
    for _ in 0..=DIALECTS.len() {
        let dialect = worker.dialect();
        let mut stopped = None;
        let answer = worker.with_conn(during, |client| match body(client, dialect) {
            Ok(value) => Ok(Some(value)),
            Err(Step::Client(RpcError::Remote(report))) => match dialect.after_refusal(&report) {
                Next::NotARefusal => Err(RpcError::Remote(report)),
                next => {
                    stopped = Some(Err(next));
                    Ok(None)
                }
            },
            Err(Step::Client(error)) => Err(error),
            Err(Step::Decode(report)) => {
                stopped = Some(Ok(report));
                Ok(None)
            }
        })?;
        if let Some(value) = answer {
            return Ok(value);
        }
        match stopped.expect("set when there is no answer") {
            Ok(unreadable) => {
                return Err(Failure::new(
                    FailureCode::Worker,
                    format!(
                        "{}: unreadable answer to {during} ({}): {}",
                        worker.label(),
                        dialect.label(),
                        unreadable.message
                    ),
                ))
            }
            Err(Next::Speak(older)) => worker.speak(older),
            Err(Next::NoCommonGround(served)) => {
                return Err(Failure::new(
                    FailureCode::Worker,
                    format!(
                        "{}: {}",
                        worker.label(),
                        dialects::no_common_ground(&served)
                    ),
                ))
            }
            Err(Next::NotARefusal) => unreachable!("passed on as the call's error"),
        }
    }
    Err(Failure::new(
        FailureCode::Worker,
        format!(
            "{}: refused every dialect during {during}; {}",
            worker.label(),
            dialects::no_common_ground("a protocol it keeps changing its answer about")
        ),
    ))
}
