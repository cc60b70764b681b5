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

use std::io::{self, Read};
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

/// Polls `fd` without sleeping for up to [`spin_micros`]; whether it became readable (or hung
/// up: the read that follows reports it).
pub(crate) fn until_readable(fd: RawFd) -> bool {
    let budget = spin_micros();
    if budget == 0 {
        return false;
    }
    let until = Instant::now() + Duration::from_micros(budget);
    loop {
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout never sleeps.
        if unsafe { libc::poll(&mut pollfd, 1, 0) } != 0 {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        // Lets a peer waiting on this very CPU run (a no-op when nothing else is runnable here).
        // SAFETY: no arguments, no memory.
        unsafe { libc::sched_yield() };
    }
}

/// A blocking reader that spins for its peer before it blocks.
pub(crate) struct SpinningReader<R> {
    inner: R,
    fd: RawFd,
}

impl<R: Read + std::os::fd::AsRawFd> SpinningReader<R> {
    pub(crate) fn new(inner: R) -> SpinningReader<R> {
        let fd = inner.as_raw_fd();
        SpinningReader { inner, fd }
    }
}

impl<R: Read> Read for SpinningReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        until_readable(self.fd);
        self.inner.read(buf)
    }
}
