//! The DuckDB session a Flight SQL call runs on: a `crate::session::Session` like a spine
//! connection's (in the registry, so `max_connections` bounds it and the stop interrupts it),
//! opened for the call and closed when its last holder lets go — or, inside a transaction, the
//! transaction's own session.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use quiver_server_protocol::errors;
use tonic::Status;

use super::service::status;
use crate::admission::Door;
use crate::server::Shared;
use crate::session::{Origin, Session};

/// An open session in the registry; dropping the last holder closes it (which rolls back a
/// transaction left open) and removes it from the registry.
pub struct OwnedSession {
    session: Arc<Session>,
    number: u64,
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
        let owned = OwnedSession { session, number };
        owned.session.open().map_err(status)?;
        Ok(owned)
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl Drop for OwnedSession {
    fn drop(&mut self) {
        self.session.close();
        self.session.shared.registry.remove(self.number);
    }
}

/// What one call holds: a session of its own, or its transaction's.
pub type Lease = Arc<OwnedSession>;
