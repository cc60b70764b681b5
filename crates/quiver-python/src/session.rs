//! One connection shared by the Python objects that use it: the `Connection`, its prepared
//! statements, its open query result and its open inserter.
//!
//! The Rust client's query streams and inserters borrow their connection (`&mut Connection`), but
//! Python objects cannot hold borrows: a `pyarrow.RecordBatchReader` outlives the call that made
//! it. So the session owns the connection and, while a stream or inserter is open, lends it: the
//! connection moves to the heap, the borrower is built on a `'static` borrow of it, and both live
//! together in [`Lent`] until the borrower is dropped, after which the connection comes back. The
//! wire is lockstep, so at most one borrower exists; a new statement on the connection ends an
//! unfinished result first (as the pure-Python client does, `python/quiver/client/connection.py`).

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

use quiver_client::{ArrowInserter, Connection, Error, QueryStream, Result};

/// A borrower of the connection together with the connection it borrows.
pub(crate) struct Lent<B> {
    /// Dropped (or consumed) before `connection` is taken back.
    borrower: ManuallyDrop<B>,
    /// From `Box::into_raw`; `borrower` holds the only reference to it.
    connection: NonNull<Connection>,
    /// Which open result or inserter this is, so a stale Python object cannot act on a newer one.
    pub(crate) id: u64,
}

// SAFETY: the connection is `Send` and the borrower only refers to it, so both may move between
// threads together; the session's mutex gives one thread at a time access.
unsafe impl<B: Send> Send for Lent<B> {}

impl<B> Lent<B> {
    /// Lends `connection` to the borrower `start` builds; on failure the connection comes back.
    fn open(
        connection: Box<Connection>,
        id: u64,
        start: impl FnOnce(&'static mut Connection) -> Result<B>,
    ) -> std::result::Result<Lent<B>, (Error, Box<Connection>)> {
        let connection = NonNull::from(Box::leak(connection));
        // SAFETY: the pointer is unique (just leaked) and stays valid until `Box::from_raw` in
        // `take_back`, which runs only after the borrower built here is gone.
        let borrow: &'static mut Connection = unsafe { &mut *connection.as_ptr() };
        match start(borrow) {
            Ok(borrower) => Ok(Lent {
                borrower: ManuallyDrop::new(borrower),
                connection,
                id,
            }),
            // SAFETY: `start` failed, so no borrower holds the reference any more.
            Err(error) => Err((error, unsafe { Box::from_raw(connection.as_ptr()) })),
        }
    }

    pub(crate) fn borrower(&mut self) -> &mut B {
        &mut self.borrower
    }

    /// Ends the loan by `finish`ing the borrower, and returns what it answered and the connection.
    fn end_with<R>(self, finish: impl FnOnce(B) -> R) -> (R, Box<Connection>) {
        let mut lent = ManuallyDrop::new(self);
        // SAFETY: `lent` is never dropped, so the borrower is taken exactly once, here.
        let borrower = unsafe { ManuallyDrop::take(&mut lent.borrower) };
        let answer = finish(borrower);
        // SAFETY: the borrower has been consumed; the connection is ours again.
        let connection = unsafe { Box::from_raw(lent.connection.as_ptr()) };
        (answer, connection)
    }
}

impl<B> Drop for Lent<B> {
    fn drop(&mut self) {
        // SAFETY: drop runs once; the borrower goes first (an open stream cancels its call on
        // drop), then the connection it borrowed.
        unsafe {
            ManuallyDrop::drop(&mut self.borrower);
            drop(Box::from_raw(self.connection.as_ptr()));
        }
    }
}

/// Where the connection is.
pub(crate) enum State {
    Ready(Box<Connection>),
    Query(Lent<QueryStream<'static>>),
    Insert(Lent<ArrowInserter<'static>>),
    Closed,
}

/// The shared connection.
pub(crate) struct Session {
    state: Mutex<State>,
    /// The id of the last loan; ids are never reused.
    loans: Mutex<u64>,
}

impl Session {
    pub(crate) fn new(connection: Connection) -> Session {
        Session {
            state: Mutex::new(State::Ready(Box::new(connection))),
            loans: Mutex::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state as it was at the panic; the next call
        // finds the connection (or its loan) there and goes on.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn next_id(&self) -> u64 {
        let mut loans = self.loans.lock().unwrap_or_else(|p| p.into_inner());
        *loans += 1;
        *loans
    }

    /// Runs `call` on the connection, ending an unfinished result first. An open inserter is not
    /// ended for it: the caller must finish or abort the insert.
    pub(crate) fn with_connection<T>(
        &self,
        call: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Result<T> {
        let mut state = self.lock();
        let connection = ready(&mut state)?;
        call(connection)
    }

    /// Opens a query stream on the connection and keeps it in the session.
    pub(crate) fn open_query(
        &self,
        start: impl FnOnce(&'static mut Connection) -> Result<QueryStream<'static>>,
    ) -> Result<u64> {
        let id = self.next_id();
        let mut state = self.lock();
        ready(&mut state)?;
        let State::Ready(connection) = std::mem::replace(&mut *state, State::Closed) else {
            unreachable!("ready() leaves the connection ready");
        };
        match Lent::open(connection, id, start) {
            Ok(lent) => {
                *state = State::Query(lent);
                Ok(id)
            }
            Err((error, connection)) => {
                *state = State::Ready(connection);
                Err(error)
            }
        }
    }

    /// Opens an inserter on the connection and keeps it in the session.
    pub(crate) fn open_insert(
        &self,
        start: impl FnOnce(&'static mut Connection) -> Result<ArrowInserter<'static>>,
    ) -> Result<u64> {
        let id = self.next_id();
        let mut state = self.lock();
        ready(&mut state)?;
        let State::Ready(connection) = std::mem::replace(&mut *state, State::Closed) else {
            unreachable!("ready() leaves the connection ready");
        };
        match Lent::open(connection, id, start) {
            Ok(lent) => {
                *state = State::Insert(lent);
                Ok(id)
            }
            Err((error, connection)) => {
                *state = State::Ready(connection);
                Err(error)
            }
        }
    }

    /// Ends the query `id` if it is still open (an early end cancels it on the server).
    pub(crate) fn end_query(&self, id: u64) {
        let mut state = self.lock();
        if matches!(&*state, State::Query(lent) if lent.id == id) {
            end_loan(&mut state);
        }
    }

    /// Ends the insert `id` with `finish` (commit or abort) and gives the connection back.
    pub(crate) fn end_insert<R>(
        &self,
        id: u64,
        finish: impl FnOnce(ArrowInserter<'static>) -> Result<R>,
    ) -> Result<R> {
        let mut state = self.lock();
        if !matches!(&*state, State::Insert(lent) if lent.id == id) {
            return Err(Error::InvalidInput("the insert has already ended".into()));
        }
        let State::Insert(lent) = std::mem::replace(&mut *state, State::Closed) else {
            unreachable!("checked above");
        };
        let (answer, connection) = lent.end_with(finish);
        *state = State::Ready(connection);
        answer
    }

    /// Closes the connection: an open result or insert ends (an insert rolls back).
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        *state = State::Closed;
    }
}

/// The connection, after ending an unfinished query result; an error when an insert holds it or
/// it is closed.
pub(crate) fn ready(state: &mut State) -> Result<&mut Connection> {
    if matches!(state, State::Query(_)) {
        end_loan(state);
    }
    match state {
        State::Ready(connection) => Ok(connection),
        State::Insert(_) => Err(Error::InvalidInput(
            "an insert is open on this connection: finish or abort it first".into(),
        )),
        State::Closed => Err(Error::InvalidInput("the connection is closed".into())),
        State::Query(_) => unreachable!("ended above"),
    }
}

/// Ends the loan in `state` by dropping its borrower, and puts the connection back.
fn end_loan(state: &mut State) {
    let connection = match std::mem::replace(state, State::Closed) {
        State::Query(lent) => lent.end_with(drop).1,
        State::Insert(lent) => lent.end_with(drop).1,
        other => {
            *state = other;
            return;
        }
    };
    *state = State::Ready(connection);
}
