//! Byte pipes to a peer that never block forever.
//!
//! A thread waiting on a peer must notice two things a plain blocking `read(2)` would miss: its
//! caller asking it to stop (the per-thread check installed with [`with_interrupt_check`]; the
//! DuckDB engine installs the query's interrupt check there) and a deadline (closing a stream we
//! abandon must not hang on a hung peer). So descriptors are non-blocking; a read or write that
//! would block waits in `poll(2)` in slices of [`POLL_SLICE_MS`] and checks both between slices.
//! The fast path (data ready) costs no extra system call.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::connection::{Connection, TransportKind};
use crate::spin;

/// How long one `poll(2)` waits before checking the interrupt and the deadline again.
pub const POLL_SLICE_MS: i32 = 50;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static INTERRUPT_CHECK: Cell<Option<fn() -> bool>> = const { Cell::new(None) };
}

/// Why a wait on the peer stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The caller's interrupt check fired.
    Interrupted,
    /// The deadline set with [`with_deadline`] passed.
    TimedOut,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Interrupted => f.write_str("interrupted"),
            Stopped::TimedOut => f.write_str("timed out"),
        }
    }
}

impl std::error::Error for Stopped {}

/// Whether `error` (possibly wrapped by the wire layer) is a [`Stopped`] wait.
pub fn stopped(error: &io::Error) -> Option<Stopped> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<Stopped>())
        .copied()
}

/// Runs `body` with every wait on a worker bounded by `limit` (on this thread).
pub fn with_deadline<T>(limit: Duration, body: impl FnOnce() -> T) -> T {
    let previous = DEADLINE.with(|slot| slot.replace(Some(Instant::now() + limit)));
    let result = body();
    DEADLINE.with(|slot| slot.set(previous));
    result
}

/// Runs `body` with `check` as this thread's interrupt check: waits on a peer stop with
/// [`Stopped::Interrupted`] once it returns true. Nested calls restore the outer check.
pub fn with_interrupt_check<T>(check: fn() -> bool, body: impl FnOnce() -> T) -> T {
    let previous = INTERRUPT_CHECK.with(|slot| slot.replace(Some(check)));
    let result = body();
    INTERRUPT_CHECK.with(|slot| slot.set(previous));
    result
}

/// Why this thread's wait on a peer should stop now (its interrupt check fired or its deadline
/// passed), for waits that do not go through these descriptors (an HTTP request).
pub fn stop_reason() -> Option<Stopped> {
    if interrupted() {
        return Some(Stopped::Interrupted);
    }
    DEADLINE
        .with(Cell::get)
        .is_some_and(|d| Instant::now() >= d)
        .then_some(Stopped::TimedOut)
}

/// Whether this thread's interrupt check (if any) fires now.
pub fn interrupted() -> bool {
    INTERRUPT_CHECK.with(Cell::get).is_some_and(|check| check())
}

/// Puts `fd` in non-blocking mode.
pub fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller holds.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Waits until `fd` is ready for `events`, checking the interrupt and deadline every slice.
fn wait(fd: i32, events: i16) -> io::Result<()> {
    loop {
        if interrupted() {
            return Err(io::Error::other(Stopped::Interrupted));
        }
        if DEADLINE
            .with(Cell::get)
            .is_some_and(|d| Instant::now() >= d)
        {
            return Err(io::Error::other(Stopped::TimedOut));
        }
        let mut pollfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pollfd, 1, POLL_SLICE_MS) };
        if ready > 0 {
            return Ok(());
        }
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

/// The reading end of a pipe or socket to a peer.
pub struct FdReader {
    fd: OwnedFd,
    spinner: spin::Spinner,
}

impl FdReader {
    /// Takes `fd` and makes it non-blocking.
    pub fn new(fd: OwnedFd) -> io::Result<FdReader> {
        set_nonblocking(&fd)?;
        let spinner = spin::Spinner::new(fd.as_raw_fd());
        Ok(FdReader { fd, spinner })
    }
}

impl Read for FdReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is valid for `buf.len()` writable bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::WouldBlock if self.spinner.spin() => {}
                io::ErrorKind::WouldBlock => {
                    let fd = self.fd.as_raw_fd();
                    self.spinner.timed(|| wait(fd, libc::POLLIN))?;
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            }
        }
    }
}

/// The writing end of a pipe or socket to a peer.
pub struct FdWriter {
    fd: OwnedFd,
    socket: bool,
}

impl FdWriter {
    /// Takes `fd` and makes it non-blocking.
    pub fn new(fd: OwnedFd) -> io::Result<FdWriter> {
        set_nonblocking(&fd)?;
        let socket = is_socket(&fd);
        Ok(FdWriter { fd, socket })
    }

    fn write_once(&self, buf: &[u8]) -> isize {
        let fd = self.fd.as_raw_fd();
        if self.socket {
            // SAFETY: `buf` is valid for `buf.len()` readable bytes.
            return unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        }
        // A pipe has no MSG_NOSIGNAL: a write to a dead peer would raise SIGPIPE, which kills a
        // host that does not ignore it. Block it on this thread for the write, and swallow one
        // raised by this write (EPIPE) unless it was already pending.
        without_sigpipe(|| {
            // SAFETY: `buf` is valid for `buf.len()` readable bytes.
            unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
        })
    }
}

impl Write for FdWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            let n = self.write_once(buf);
            if n >= 0 {
                return Ok(n as usize);
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::WouldBlock => wait(self.fd.as_raw_fd(), libc::POLLOUT)?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn is_socket(fd: &impl AsRawFd) -> bool {
    // SAFETY: fstat into a zeroed struct on a descriptor we hold.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &mut stat) == 0
            && (stat.st_mode & libc::S_IFMT) == libc::S_IFSOCK
    }
}

/// Runs `write` (which returns a `write(2)` result) with SIGPIPE blocked on this thread; a SIGPIPE
/// it raised is consumed, errno is preserved.
fn without_sigpipe(write: impl FnOnce() -> isize) -> isize {
    // SAFETY: signal-mask manipulation of the calling thread only, with initialised sets.
    unsafe {
        let mut pipe_set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_set);
        libc::sigaddset(&mut pipe_set, libc::SIGPIPE);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_set, &mut old);
        let n = write();
        let errno = *libc::__errno_location();
        if n < 0 && errno == libc::EPIPE && !was_pending {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            while libc::sigtimedwait(&pipe_set, std::ptr::null_mut(), &zero) == -1
                && *libc::__errno_location() == libc::EINTR
            {}
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        *libc::__errno_location() = errno;
        n
    }
}

/// A connection over a child's stdout (to read) and stdin (to write), both made non-blocking.
pub fn pipe_connection(
    stdout: OwnedFd,
    stdin: OwnedFd,
    peer: impl Into<String>,
) -> io::Result<Connection> {
    crate::pipe_size::grow_pipe(&stdout);
    crate::pipe_size::grow_pipe(&stdin);
    Ok(Connection::new(
        Box::new(FdReader::new(stdout)?),
        Box::new(FdWriter::new(stdin)?),
        TransportKind::Stdio,
        peer,
    ))
}

/// Connects to a Unix socket; reads and writes wait as this module says.
pub fn connect_unix(path: &Path, peer: impl Into<String>) -> io::Result<Connection> {
    let stream = UnixStream::connect(path)?;
    let reader = stream.try_clone()?;
    Ok(Connection::new(
        Box::new(FdReader::new(OwnedFd::from(reader))?),
        Box::new(FdWriter::new(OwnedFd::from(stream))?),
        TransportKind::Unix,
        peer,
    ))
}
