//! A graceful stop on `SIGTERM`, for a process that serves clients on a listening socket.
//!
//! The cleanup registry ([`crate::cleanup`]) answers `SIGTERM` by removing what is registered and
//! dying by the signal at once. A socket server can do better: stop accepting, give the sessions
//! whose client has already closed a moment to finish (their end-of-session logs, their shared
//! memory), and `exit(0)`, which runs the registry's `atexit` hook. [`StopSignal::install`] puts
//! that in place:
//!
//! * The handler only stores a flag and writes one byte into a pipe (both async-signal-safe). The
//!   byte is never read back: the pipe stays readable, so every loop that polls it wakes, now or
//!   later, and [`StopSignal::requested`] is the truth.
//! * A second `SIGTERM` while stopping does what the registry would have done: remove every
//!   registered entry and die by the signal. Whoever sends it does not want to wait.
//! * Ordering with the registry: `install` first installs the registry's hooks (so the `atexit`
//!   hook exists whatever registers first), then takes `SIGTERM` over from the registry's handler.
//!   A host's own handler (or `SIG_IGN`) is respected: `install` returns `None` and the caller
//!   serves without a graceful stop.
//! * `SIGINT` stays the registry's: an interactive user pressing Ctrl-C expects the process to go.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::Mutex;

use crate::cleanup;

/// Write end of the wake-up pipe, for the handler; -1 until installed.
static WAKE_WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// Read end of the wake-up pipe; -1 until installed.
static WAKE_READ_FD: AtomicI32 = AtomicI32::new(-1);
/// `SIGTERM`s received since installation.
static RECEIVED: AtomicU32 = AtomicU32::new(0);

/// A handle on the process's graceful-stop request; copies share the one process-wide state.
#[derive(Clone, Copy, Debug)]
pub struct StopSignal {
    read_fd: RawFd,
}

impl StopSignal {
    /// Makes `SIGTERM` a stop request for this process (idempotent). `Ok(None)` when the host has
    /// its own disposition for `SIGTERM`, which we leave alone.
    pub fn install() -> io::Result<Option<StopSignal>> {
        static INSTALL: Mutex<()> = Mutex::new(());
        let _installing = INSTALL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let read_fd = WAKE_READ_FD.load(Ordering::Acquire);
        if read_fd >= 0 {
            return Ok(Some(StopSignal { read_fd }));
        }
        cleanup::install();
        if !cleanup::terminate_disposition_is_ours_or_default() {
            return Ok(None);
        }
        let mut fds = [-1 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        WAKE_WRITE_FD.store(fds[1], Ordering::Release);
        WAKE_READ_FD.store(fds[0], Ordering::Release);
        set_terminate_handler(on_terminate);
        Ok(Some(StopSignal { read_fd: fds[0] }))
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        RECEIVED.load(Ordering::Acquire) > 0
    }
}

impl AsRawFd for StopSignal {
    /// A descriptor that becomes readable (and stays so) once a stop is requested: poll it beside
    /// a listener.
    fn as_raw_fd(&self) -> RawFd {
        self.read_fd
    }
}

extern "C" fn on_terminate(signal: libc::c_int) {
    // SAFETY: errno is thread-local; the handler must leave it as the interrupted code saw it.
    let saved_errno = unsafe { *libc::__errno_location() };
    if RECEIVED.fetch_add(1, Ordering::AcqRel) == 0 {
        let fd = WAKE_WRITE_FD.load(Ordering::Acquire);
        let byte = 1u8;
        // SAFETY: write is async-signal-safe; the pipe is non-blocking, so a full pipe (it
        // cannot be: one byte is ever written) would fail rather than hang the handler.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    } else {
        cleanup::remove_all_and_die_by(signal);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved_errno };
}

fn set_terminate_handler(handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a plain sigaction update with a zeroed, then filled, struct.
    unsafe {
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = handler as libc::sighandler_t;
        libc::sigemptyset(&mut ours.sa_mask);
        ours.sa_flags = libc::SA_RESTART;
        let status = libc::sigaction(libc::SIGTERM, &ours, std::ptr::null_mut());
        assert_eq!(status, 0, "sigaction(SIGTERM) failed");
    }
}
