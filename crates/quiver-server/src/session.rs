//! One session per connection: its DuckDB connection (opened by `connect`), its prepared
//! statements, and what other threads may do to it (interrupt its statement, close its socket).
//! The registry lists the open sessions for `cancel` and for the server's stop.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{IpAddr, Shutdown};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use quiver_server_protocol::errors;
use quiver_server_protocol::limits::PREPARED_PER_SESSION_MAX;
use quiver_wire::ErrorReport;

use crate::admission::{Door, Pending};
use crate::duck::{DuckError, DuckSession, InterruptHandle, Prepared};
use crate::events::Field;
use crate::metrics::metrics;
use crate::server::Shared;

/// Longest statement text kept for the slow-statement log.
const STATEMENT_CHARS_MAX: usize = 256;

/// Where a session's client came from.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The door it came through.
    pub door: Door,
    /// The peer, as logs name it.
    pub peer: String,
    /// The peer's address, for a TCP peer (what failed authentication is throttled by).
    pub ip: Option<IpAddr>,
}

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
    /// `id` as a secret: a `cancel` from a connection that never authenticated presents it as its
    /// one credential, so it is compared as a token is.
    id_secret: quiver_secret::Secret,
    /// Whether the listener it came through requires a token.
    pub token_required: bool,
    /// Where its client came from.
    pub origin: Origin,
    /// The spine connection's socket; `None` for a Flight SQL call, which has no socket of its own.
    socket: Option<SocketHandle>,
    /// Shared with the session's `HangUpReader`.
    hung_up: Arc<AtomicBool>,
    open: Mutex<Option<Open>>,
    /// For other threads: the interrupt handle while the session is open.
    interrupt: Mutex<Option<InterruptHandle>>,
    /// Whether a statement runs now (what `cancel` reports).
    running: AtomicBool,
    /// Whether it holds one of the `max_connections` places (from `open` to `close`).
    admitted: AtomicBool,
    /// Set by `close`.
    closed: AtomicBool,
    /// The statement the next `with` runs, as the slow-statement log names it.
    statement: Mutex<Option<String>>,
    /// Statements run, and when the session opened (for the log).
    statements: AtomicU64,
    opened_at: Mutex<Option<Instant>>,
}

impl Session {
    /// A session not yet connected.
    pub fn new(
        shared: Arc<Shared>,
        socket: Option<SocketHandle>,
        hung_up: Arc<AtomicBool>,
        token_required: bool,
        origin: Origin,
    ) -> Session {
        let id = quiver_secret::random::hex(16);
        Session {
            shared,
            id_secret: quiver_secret::Secret::new(&id),
            id,
            token_required,
            origin,
            socket,
            hung_up,
            open: Mutex::new(None),
            interrupt: Mutex::new(None),
            running: AtomicBool::new(false),
            admitted: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            statement: Mutex::new(None),
            statements: AtomicU64::new(0),
            opened_at: Mutex::new(None),
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

    /// Opens the DuckDB connection (`connect`), within `max_connections`: over it, `busy`.
    pub fn open(&self) -> Result<(), ErrorReport> {
        let mut open = self.lock_open();
        if open.is_some() {
            return Err(errors::protocol(
                "connect: this connection is connected already",
            ));
        }
        // Checked under the lock `expire` takes: a connection closed for its deadline stays closed.
        if self.is_hung_up() {
            return Err(errors::unauthenticated());
        }
        let max = self.shared.max_connections;
        if !self.shared.registry.admit(max) {
            return Err(errors::busy(max));
        }
        self.admitted.store(true, Ordering::SeqCst);
        let duck = match DuckSession::open(Arc::clone(&self.shared.ops)) {
            Ok(duck) => duck,
            Err(error) => {
                self.release();
                return Err(error.report());
            }
        };
        *self.interrupt.lock().unwrap_or_else(|e| e.into_inner()) = Some(duck.interrupt_handle());
        *open = Some(Open {
            duck,
            prepared: BTreeMap::new(),
            next_statement_id: 1,
        });
        *self.opened_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        if self.origin.door != Door::FlightSql {
            metrics().sessions_opened_at(self.origin.door);
        }
        Ok(())
    }

    /// Gives back the session's place among `max_connections`.
    fn release(&self) {
        if self.admitted.swap(false, Ordering::SeqCst) {
            self.shared.registry.release();
        }
    }

    /// Names the statement the next `with` runs (for the slow-statement log), and counts it.
    pub fn note_statement(&self, sql: &str) {
        let start = match sql.char_indices().nth(STATEMENT_CHARS_MAX) {
            Some((end, _)) => &sql[..end],
            None => sql,
        };
        *self.statement.lock().unwrap_or_else(|e| e.into_inner()) = Some(start.to_string());
        self.statements.fetch_add(1, Ordering::Relaxed);
        metrics().statements.inc();
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
        let statement = self
            .statement
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.running.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let outcome = body(open);
        let took = started.elapsed();
        self.running.store(false, Ordering::SeqCst);
        drop(guard);
        if let Some(statement) = &statement {
            self.log_if_slow(statement, took);
        }
        outcome.map_err(|error| {
            let report = self.report(&error);
            self.log_error(&report, statement.as_deref());
            report
        })
    }

    fn log_if_slow(&self, statement: &str, took: Duration) {
        let events = &self.shared.events;
        if events
            .slow_statement
            .is_none_or(|threshold| took < threshold)
        {
            return;
        }
        metrics().slow_statements.inc();
        events.emit(
            "slow_statement",
            &[
                ("door", Field::Text(self.origin.door.as_str())),
                ("session", Field::Text(&self.id)),
                ("took", Field::Millis(took)),
                ("sql", Field::Text(statement)),
            ],
        );
    }

    /// Logs and counts an error a statement ended with.
    fn log_error(&self, report: &ErrorReport, statement: Option<&str>) {
        metrics().error(report.kind.as_deref());
        let mut fields = vec![
            ("door", Field::Text(self.origin.door.as_str())),
            ("session", Field::Text(&self.id)),
            ("error_type", Field::Text(&report.error_type)),
            ("message", Field::Text(&report.message)),
        ];
        if let Some(statement) = statement {
            fields.push(("sql", Field::Text(statement)));
        }
        self.shared.events.emit("statement_failed", &fields);
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
            self.log_closed();
        }
        self.release();
        self.closed.store(true, Ordering::SeqCst);
    }

    /// The end of an authenticated spine session (a Flight SQL call's session is not logged: its
    /// gRPC connection is).
    fn log_closed(&self) {
        if self.origin.door == Door::FlightSql {
            return;
        }
        let opened_at = *self.opened_at.lock().unwrap_or_else(|e| e.into_inner());
        let lasted = opened_at.map(|t| t.elapsed()).unwrap_or_default();
        self.shared.events.emit(
            "session_closed",
            &[
                ("door", Field::Text(self.origin.door.as_str())),
                ("peer", Field::Text(&self.origin.peer)),
                ("session", Field::Text(&self.id)),
                (
                    "statements",
                    Field::Count(self.statements.load(Ordering::Relaxed)),
                ),
                ("lasted", Field::Millis(lasted)),
            ],
        );
    }
}

impl Pending for Session {
    fn is_settled(&self) -> bool {
        self.is_open() || self.closed.load(Ordering::SeqCst)
    }

    fn expire(&self) -> bool {
        // The lock `open` holds: either the session opens first and stays, or it is hung up
        // first and `open` refuses. A held lock means it is opening (or running): not idle.
        let open = match self.open.try_lock() {
            Ok(open) => open,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        if open.is_some() || self.closed.load(Ordering::SeqCst) || self.is_hung_up() {
            return false;
        }
        self.hang_up();
        true
    }

    fn peer(&self) -> String {
        self.origin.peer.clone()
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

/// The open connections, by a number local to this server, and how many of them hold one of
/// the `max_connections` places (the authenticated ones).
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<BTreeMap<u64, Arc<Session>>>,
    next: AtomicU64,
    admitted: AtomicUsize,
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

    /// Takes one of `max` places; `false` when all are taken.
    pub fn admit(&self, max: usize) -> bool {
        let taken = self
            .admitted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok();
        if taken {
            metrics().sessions.inc();
        }
        taken
    }

    /// Gives a place back.
    pub fn release(&self) {
        self.admitted.fetch_sub(1, Ordering::SeqCst);
        metrics().sessions.dec();
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interrupts the connected session `id`: `None` when no open session has that id, else
    /// whether a statement was running. Ids are compared as secrets (digests, in constant time).
    pub fn cancel(&self, id: &str) -> Option<bool> {
        let presented = quiver_secret::Secret::digest_of(id);
        let sessions = self.lock();
        let found = sessions
            .values()
            .find(|session| session.is_open() && session.id_secret.matches_digest(&presented));
        found.map(|session| session.interrupt())
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
