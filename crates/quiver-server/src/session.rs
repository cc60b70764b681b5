//! One session per connection: its DuckDB connection (opened by `connect`), its prepared
//! statements, and what other threads may do to it (interrupt its statement, close its socket).
//! The registry lists the open sessions for `cancel` and for the server's stop.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use quiver_server_protocol::errors;
use quiver_server_protocol::limits::PREPARED_PER_SESSION_MAX;
use quiver_wire::ErrorReport;

use crate::duck::{DuckError, DuckSession, InterruptHandle, Prepared};
use crate::server::Shared;

/// A socket another thread may hang up, ending the session after its current call.
pub enum SocketHandle {
    /// A TCP connection.
    Tcp(std::net::TcpStream),
    /// A Unix socket connection.
    Unix(std::os::unix::net::UnixStream),
}

/// The session's input: the socket, until the session hangs up. From then on it reads as ended,
/// whatever the peer sends (Linux keeps accepting TCP data after `shutdown(SHUT_RD)`, so the
/// shutdown alone would not end a session whose peer keeps talking).
pub struct HangUpReader<R> {
    inner: R,
    hung_up: Arc<AtomicBool>,
}

impl<R: Read> HangUpReader<R> {
    /// Reads `inner` until `hung_up` is set.
    pub fn new(inner: R, hung_up: Arc<AtomicBool>) -> HangUpReader<R> {
        HangUpReader { inner, hung_up }
    }
}

impl<R: Read> Read for HangUpReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.hung_up.load(Ordering::SeqCst) {
            return Ok(0);
        }
        self.inner.read(buffer)
    }
}

impl SocketHandle {
    /// Wakes a read blocked on the socket (it then sees the hang-up).
    fn stop_reading(&self) {
        let _ = match self {
            SocketHandle::Tcp(stream) => stream.shutdown(Shutdown::Read),
            SocketHandle::Unix(stream) => stream.shutdown(Shutdown::Read),
        };
    }
}

/// What a session owns once `connect` succeeded.
pub struct Open {
    /// The DuckDB connection.
    pub duck: DuckSession,
    /// Prepared statements by id.
    pub prepared: BTreeMap<i64, Prepared>,
    next_statement_id: i64,
}

/// One connection's session.
pub struct Session {
    /// Server-wide state.
    pub shared: Arc<Shared>,
    /// 32 hex digits; what `cancel` names.
    pub id: String,
    /// Whether the listener it came through requires a token.
    pub token_required: bool,
    /// Set when the server already serves its maximum: `connect` answers `busy`.
    pub over_capacity: bool,
    /// The spine connection's socket; `None` for a Flight SQL call, which has no socket of its own.
    socket: Option<SocketHandle>,
    /// Shared with the session's `HangUpReader`.
    hung_up: Arc<AtomicBool>,
    open: Mutex<Option<Open>>,
    /// For other threads: the interrupt handle while the session is open.
    interrupt: Mutex<Option<InterruptHandle>>,
    /// Whether a statement runs now (what `cancel` reports).
    running: AtomicBool,
}

impl Session {
    /// A session not yet connected.
    pub fn new(
        shared: Arc<Shared>,
        socket: Option<SocketHandle>,
        hung_up: Arc<AtomicBool>,
        token_required: bool,
        over_capacity: bool,
    ) -> Session {
        Session {
            shared,
            id: crate::auth::random_hex(16),
            token_required,
            over_capacity,
            socket,
            hung_up,
            open: Mutex::new(None),
            interrupt: Mutex::new(None),
            running: AtomicBool::new(false),
        }
    }

    /// Ends the session after the current call: its input reads as ended, and calls already
    /// buffered get the `unauthenticated` answer.
    pub fn hang_up(&self) {
        self.hung_up.store(true, Ordering::SeqCst);
        if let Some(socket) = &self.socket {
            socket.stop_reading();
        }
    }

    /// Whether the session hung up.
    pub fn is_hung_up(&self) -> bool {
        self.hung_up.load(Ordering::SeqCst)
    }

    /// Opens the DuckDB connection (`connect`).
    pub fn open(&self) -> Result<(), ErrorReport> {
        let mut open = self.lock_open();
        if open.is_some() {
            return Err(errors::protocol(
                "connect: this connection is connected already",
            ));
        }
        let duck = DuckSession::open(Arc::clone(&self.shared.ops)).map_err(|e| e.report())?;
        *self.interrupt.lock().unwrap_or_else(|e| e.into_inner()) = Some(duck.interrupt_handle());
        *open = Some(Open {
            duck,
            prepared: BTreeMap::new(),
            next_statement_id: 1,
        });
        Ok(())
    }

    fn lock_open(&self) -> MutexGuard<'_, Option<Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `body` on the open session: the one `unauthenticated` answer before `connect`, the
    /// `stopping` answer while the server stops, DuckDB's errors as the protocol's.
    pub fn with<T>(
        &self,
        body: impl FnOnce(&mut Open) -> Result<T, DuckError>,
    ) -> Result<T, ErrorReport> {
        if self.shared.is_stopping() {
            return Err(errors::stopping());
        }
        let mut guard = self.lock_open();
        let Some(open) = guard.as_mut().filter(|_| !self.is_hung_up()) else {
            return Err(errors::unauthenticated());
        };
        self.running.store(true, Ordering::SeqCst);
        let outcome = body(open);
        self.running.store(false, Ordering::SeqCst);
        outcome.map_err(|error| self.report(&error))
    }

    /// DuckDB's error as the client sees it: an interrupt during the stop is the stop's.
    pub fn report(&self, error: &DuckError) -> ErrorReport {
        if error.is_interrupt() && self.shared.is_stopping() {
            errors::stopping()
        } else {
            error.report()
        }
    }

    /// Whether `connect` succeeded.
    pub fn is_open(&self) -> bool {
        // The interrupt handle, not the session itself: that is locked while a statement runs.
        self.interrupt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Interrupts the running statement; whether one was running. Nothing is interrupted when no
    /// statement runs: an interrupt delivered between calls would fail the session's next
    /// statement (or a query stream between two ticks) while the caller was told nothing ran.
    pub fn interrupt(&self) -> bool {
        let handle = self.interrupt.lock().unwrap_or_else(|e| e.into_inner());
        let Some(handle) = handle.as_ref() else {
            return false;
        };
        if !self.running.load(Ordering::SeqCst) {
            return false;
        }
        // SAFETY: the handle is cleared (under this lock) before its session closes.
        unsafe { handle.interrupt() };
        true
    }

    /// Closes the DuckDB connection: prepared statements first, then the connection, which rolls
    /// back a transaction left open.
    pub fn close(&self) {
        *self.interrupt.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let open = self.lock_open().take();
        if let Some(mut open) = open {
            open.prepared.clear();
            drop(open.duck);
        }
    }
}

impl Open {
    /// Keeps a prepared statement; its id.
    pub fn keep_prepared(&mut self, prepared: Prepared) -> Result<i64, ErrorReport> {
        if self.prepared.len() >= PREPARED_PER_SESSION_MAX {
            return Err(errors::limit(
                "prepared statements",
                self.prepared.len() as u64 + 1,
                PREPARED_PER_SESSION_MAX as u64,
            ));
        }
        let id = self.next_statement_id;
        self.next_statement_id += 1;
        self.prepared.insert(id, prepared);
        Ok(id)
    }
}

/// The open connections, by a number local to this server.
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<BTreeMap<u64, Arc<Session>>>,
    next: AtomicU64,
}

impl Registry {
    /// Adds a session; the number to remove it by.
    pub fn add(&self, session: Arc<Session>) -> u64 {
        let number = self.next.fetch_add(1, Ordering::SeqCst);
        self.lock().insert(number, session);
        number
    }

    /// Removes a session.
    pub fn remove(&self, number: u64) {
        self.lock().remove(&number);
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interrupts the connected session `id`; whether a statement was running.
    pub fn cancel(&self, id: &str) -> bool {
        let sessions = self.lock();
        let found = sessions
            .values()
            .find(|session| session.is_open() && session.id == id);
        found.is_some_and(|session| session.interrupt())
    }

    /// Interrupts every statement and ends every session after its current call.
    pub fn stop_all(&self) {
        for session in self.lock().values() {
            session.interrupt();
            session.hang_up();
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hung_up_reader_reads_as_ended_whatever_follows() {
        let hung_up = Arc::new(AtomicBool::new(false));
        let mut reader = HangUpReader::new(&b"abcdef"[..], Arc::clone(&hung_up));
        let mut buffer = [0u8; 3];
        assert_eq!(reader.read(&mut buffer).unwrap(), 3);
        hung_up.store(true, Ordering::SeqCst);
        assert_eq!(reader.read(&mut buffer).unwrap(), 0);
    }
}
