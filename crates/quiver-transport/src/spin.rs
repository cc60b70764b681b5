//! Waiting for a peer's answer without sleeping, for a short while.
//!
//! A reader that sleeps in `read(2)` or `poll(2)` is woken by the peer's write through the
//! scheduler: on a virtual machine a wake-up across cores costs tens of microseconds (a
//! one-byte round trip between two processes here: 44 µs asleep, 2-3 µs polling), which is more
//! than a scalar call's whole turn. So a reader first polls without sleeping for up to
//! [`spin_micros`]: a peer that answers within that budget is seen at once, a slower one costs
//! the budget in spinning before the usual wait. The default outlasts a turn of a scalar call
//! (DuckDB's side of a 2,048-row chunk plus the worker's), so over a run of calls neither side
//! sleeps; shorter budgets expire just before the answer and save little.
//!
//! A connection spins before it reads a message (`Connection::read_next`), not inside its
//! reader: a reader of its own would hide the standard library's reads into uninitialised
//! memory (sockets and pipes fill fresh buffers without zeroing them first; any other `Read`
//! zero-fills every buffer before each read).

use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The default of [`spin_micros`].
pub const SPIN_MICROS_DEFAULT: u64 = 200;

/// How long a reader polls before it sleeps, in microseconds: `QUIVER_SPIN_MICROS`, else
/// [`SPIN_MICROS_DEFAULT`]; 0 turns spinning off.
pub fn spin_micros() -> u64 {
    static SPIN_MICROS: OnceLock<u64> = OnceLock::new();
    *SPIN_MICROS.get_or_init(|| {
        std::env::var("QUIVER_SPIN_MICROS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(SPIN_MICROS_DEFAULT)
    })
}

/// Whether `fd` has something to read now (or hung up: the read that follows reports it).
fn readable(fd: RawFd) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout never sleeps.
    unsafe { libc::poll(&mut pollfd, 1, 0) != 0 }
}

/// Waits below this are reads that found data, not waits on the peer.
const WAITED_MIN: Duration = Duration::from_micros(10);

/// Spins for one descriptor's peer while that pays: while its recent waits were short enough
/// to be caught. A peer that answers in a few microseconds (a scalar call, a unary call) is met
/// by spinning; one that takes longer (a scan's next batch while the server computes it) is
/// waited for asleep after the first miss, so a stream does not burn a core its peer needs.
pub(crate) struct Spinner {
    fd: RawFd,
    worth_it: bool,
}

impl Spinner {
    pub(crate) fn new(fd: RawFd) -> Spinner {
        Spinner { fd, worth_it: true }
    }

    /// Before a read that may block: whether `fd` is readable now, after spinning for up to
    /// [`spin_micros`] when that has been paying. `false`: block, and report the wait to
    /// [`Spinner::slept`].
    pub(crate) fn spin(&mut self) -> bool {
        let budget = Duration::from_micros(spin_micros());
        if readable(self.fd) {
            return true;
        }
        if !self.worth_it || budget.is_zero() {
            return false;
        }
        let until = Instant::now() + budget;
        while Instant::now() < until {
            // Lets a peer waiting on this very CPU run (a no-op when nothing else is runnable).
            // SAFETY: no arguments, no memory.
            unsafe { libc::sched_yield() };
            if readable(self.fd) {
                return true;
            }
        }
        self.worth_it = false;
        false
    }

    /// Blocks until `fd` is readable (or hung up, or failed: the read that follows reports it):
    /// the wait for the peer's first byte, timed as [`Spinner::timed`] does.
    pub(crate) fn wait(&mut self) {
        let fd = self.fd;
        self.timed(|| {
            let mut pollfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; EINTR is retried, any other error left to the read.
            while unsafe { libc::poll(&mut pollfd, 1, -1) } < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        })
    }

    /// Runs `wait`, a blocking wait for the peer, and lets its length decide whether the next
    /// wait spins ([`Spinner::slept`]).
    pub(crate) fn timed<T>(&mut self, wait: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let waited = wait();
        self.slept(started.elapsed());
        waited
    }

    /// After a blocking wait of `waited`: spin next time if this wait would have been caught.
    fn slept(&mut self, waited: Duration) {
        if waited >= WAITED_MIN {
            self.worth_it = waited <= Duration::from_micros(spin_micros());
        }
    }
}
