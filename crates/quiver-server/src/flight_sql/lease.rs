//! The DuckDB session a Flight SQL call runs on: a `crate::session::Session` like a spine
//! connection's (in the registry, so `max_connections` bounds it and the stop interrupts it),
//! opened for the call and closed when its last holder lets go — or, inside a transaction, the
//! transaction's own session.
//!
//! A session holds at most one open result: DuckDB serves one per connection and refuses the next
//! statement while one is open ("connection has an open result"). Flight SQL clients do not drain
//! what they abandon: ADBC's DB-API runs `execute(q2)` while `q1`'s `DoGet` stream is still being
//! torn down, and a transaction's calls all run on one session. So every statement on a session
//! ([`OwnedSession::with`]) first ends the result still open there, as the spine ends an abandoned
//! cursor when the next call comes; the stream that read it then ends with [`superseded`]. The
//! result is kept here, under the session's own lock, so ending it never races a batch being read.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_server_protocol::errors;
use quiver_wire::ErrorReport;
use tonic::Status;

use super::status::status;
use crate::admission::Door;
use crate::duck::{Cursor, DuckError};
use crate::server::Shared;
use crate::session::{Open, Origin, Session};

/// An open session in the registry; dropping the last holder closes it (which rolls back a
/// transaction left open) and removes it from the registry.
pub struct OwnedSession {
    session: Arc<Session>,
    number: u64,
    /// The result a `DoGet` streams from this session, if one is open. Locked only inside the
    /// session's own lock (`Session::with`), or by the last holder.
    result: Mutex<Option<OpenResult>>,
    next_result: AtomicU64,
}

/// A result open on a session, and which one it is (so an ended stream cannot read a newer one).
struct OpenResult {
    number: u64,
    cursor: Cursor,
}

/// What reading an open result gave.
pub enum Step {
    /// The next batch.
    Batch(RecordBatch),
    /// The result ended (and was closed).
    End,
    /// A later statement on the session ended this result first.
    Superseded,
}

/// The status a stream ends with when a later statement on its session ended its result.
pub fn superseded() -> Status {
    Status::aborted(
        "this result was ended by a later statement on the same session: read a result to its end \
         before the next statement of a transaction",
    )
}

impl OwnedSession {
    /// Opens a session, within the server's limit on sessions.
    pub fn open(shared: &Arc<Shared>) -> Result<OwnedSession, Status> {
        if shared.is_stopping() {
            return Err(status(errors::stopping()));
        }
        // `open` takes one of the `max_connections` places, or answers `busy`.
        let origin = Origin {
            door: Door::FlightSql,
            peer: "flight_sql".into(),
            ip: None,
        };
        let session = Arc::new(Session::new(
            Arc::clone(shared),
            None,
            Arc::new(AtomicBool::new(false)),
            false,
            origin,
        ));
        let number = shared.registry.add(Arc::clone(&session));
        let owned = OwnedSession {
            session,
            number,
            result: Mutex::new(None),
            next_result: AtomicU64::new(1),
        };
        owned.session.open().map_err(status)?;
        Ok(owned)
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    fn result_slot(&self) -> MutexGuard<'_, Option<OpenResult>> {
        self.result.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs one statement's `body` on the session, after ending the result still open there.
    pub fn with<T>(
        &self,
        body: impl FnOnce(&mut Open) -> Result<T, DuckError>,
    ) -> Result<T, ErrorReport> {
        self.session.with(|open| {
            drop(self.result_slot().take());
            body(open)
        })
    }

    /// Starts the query `start` opens and keeps its cursor as the session's open result; its
    /// number (what [`OwnedSession::next_batch`] reads it by) and schema.
    pub fn start_result(
        &self,
        start: impl FnOnce(&mut Open) -> Result<Cursor, DuckError>,
    ) -> Result<(u64, SchemaRef), ErrorReport> {
        self.session.with(|open| {
            let mut slot = self.result_slot();
            drop(slot.take());
            let cursor = start(open)?;
            let schema = cursor.schema();
            let number = self.next_result.fetch_add(1, Ordering::SeqCst);
            *slot = Some(OpenResult { number, cursor });
            Ok((number, schema))
        })
    }

    /// The next batch of result `number`; the result closes at its end or error, so the session
    /// is free for the next statement as soon as DuckDB has produced the last batch.
    pub fn next_batch(&self, number: u64) -> Result<Step, ErrorReport> {
        self.session.with(|_| {
            let mut slot = self.result_slot();
            let Some(result) = slot.as_mut().filter(|r| r.number == number) else {
                return Ok(Step::Superseded);
            };
            match result.cursor.next_batch() {
                Ok(Some(batch)) => Ok(Step::Batch(batch)),
                Ok(None) => {
                    drop(slot.take());
                    Ok(Step::End)
                }
                Err(error) => {
                    drop(slot.take());
                    Err(error)
                }
            }
        })
    }

    /// Closes result `number` if it is still the open one (its reader went away).
    pub fn end_result(&self, number: u64) {
        let _ = self.session.with(|_| {
            let mut slot = self.result_slot();
            if slot.as_ref().is_some_and(|r| r.number == number) {
                drop(slot.take());
            }
            Ok(())
        });
    }
}

impl Drop for OwnedSession {
    fn drop(&mut self) {
        // The cursor before its connection.
        drop(self.result_slot().take());
        self.session.close();
        self.session.shared.registry.remove(self.number);
    }
}

/// What one call holds: a session of its own, or its transaction's.
pub type Lease = Arc<OwnedSession>;
