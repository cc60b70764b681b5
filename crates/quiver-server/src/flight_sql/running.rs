//! `CancelFlightInfo`: the reads (`DoGet`s) of statement and prepared-statement results in flight,
//! by their ticket's bytes, so that a client cancelling a `FlightInfo` stops the statement behind
//! each of its tickets. A read registers before it opens its session and leaves when its stream
//! ends, so the registry holds no more entries than there are reads (sessions, bounded by
//! `max_connections`).
//!
//! Cancelling marks the read and interrupts its session if a statement runs there; a read checks
//! the mark inside its session's lock before it starts its query and before each batch, so a
//! cancel is never lost between the two (an interrupt needs a running statement to land on).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use prost::bytes::Bytes;
use tonic::Status;

use crate::session::Session;

/// The reads in flight, by ticket.
#[derive(Default)]
pub struct Running {
    reads: Mutex<HashMap<Bytes, Vec<Arc<Read>>>>,
}

/// One read: whether it was cancelled, and its session once it has one.
#[derive(Default)]
pub struct Read {
    cancelled: AtomicBool,
    session: Mutex<Option<Arc<Session>>>,
}

/// The status of a read that was cancelled.
pub fn cancelled() -> Status {
    Status::cancelled("the statement was cancelled (CancelFlightInfo)")
}

impl Read {
    /// Whether a client cancelled it.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Notes the session the read runs on; refused if it was cancelled already.
    pub fn attach(&self, session: &Arc<Session>) -> Result<(), Status> {
        let mut slot = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_cancelled() {
            return Err(cancelled());
        }
        *slot = Some(Arc::clone(session));
        Ok(())
    }

    /// Marks it cancelled without interrupting anything: its call went away before the stream
    /// started (the query, if it has not started, never does).
    pub fn abandon(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    fn cancel(&self) {
        let slot = self.session.lock().unwrap_or_else(|e| e.into_inner());
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(session) = slot.as_ref() {
            session.interrupt();
        }
    }
}

/// A read's place in the registry; it leaves when this drops.
pub struct Registered {
    running: Arc<Running>,
    ticket: Bytes,
    read: Arc<Read>,
}

impl Registered {
    /// The read.
    pub fn read(&self) -> &Arc<Read> {
        &self.read
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut reads = self.running.lock();
        if let Some(same) = reads.get_mut(&self.ticket) {
            same.retain(|read| !Arc::ptr_eq(read, &self.read));
            if same.is_empty() {
                reads.remove(&self.ticket);
            }
        }
    }
}

impl Running {
    fn lock(&self) -> MutexGuard<'_, HashMap<Bytes, Vec<Arc<Read>>>> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a read of `ticket`.
    pub fn register(self: &Arc<Self>, ticket: Bytes) -> Registered {
        let read = Arc::new(Read::default());
        self.lock()
            .entry(ticket.clone())
            .or_default()
            .push(Arc::clone(&read));
        Registered {
            running: Arc::clone(self),
            ticket,
            read,
        }
    }

    /// Cancels every read of `ticket`; how many there were.
    pub fn cancel(&self, ticket: &[u8]) -> usize {
        let reads: Vec<Arc<Read>> = self.lock().get(ticket).cloned().unwrap_or_default();
        for read in &reads {
            read.cancel();
        }
        reads.len()
    }

    /// How many reads are in flight.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_leave_when_dropped_and_a_cancel_before_the_session_refuses_it() {
        let running = Arc::new(Running::default());
        let ticket = Bytes::from_static(b"t");
        let first = running.register(ticket.clone());
        let second = running.register(ticket.clone());
        assert_eq!(running.len(), 2);
        assert_eq!(running.cancel(b"other"), 0);
        assert_eq!(running.cancel(&ticket), 2);
        assert!(first.read().is_cancelled() && second.read().is_cancelled());
        drop(first);
        assert_eq!(running.len(), 1);
        drop(second);
        assert_eq!(running.len(), 0);
        assert_eq!(running.cancel(&ticket), 0);
    }
}
