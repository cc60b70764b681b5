//! Worker processes, in one place: how they are started, told apart, stopped, and cleaned up after.
//!
//! * [`child`] — the one supervised child-process type. Every child is spawned from one long-lived
//!   thread with a parent-death signal, so it cannot outlive the process that started it; its
//!   stderr is kept in a bounded tail for error messages; it is always reaped.
//! * [`announce`] — the launch handshake: a socket worker prints `UNIX:<path>` (or `PORT:<n>`) on
//!   stdout once it listens. Written once ([`announce::announce`]) and parsed once
//!   ([`announce::read_announcement`], with a deadline).
//! * [`cleanup`] — one async-signal-safe registry of what this process must remove when it ends
//!   (shared-memory names, socket and work-file paths): on `SIGTERM`/`SIGINT` and at `exit`.
//! * [`stderr`] — log lines that never fail the process: a worker must not die, panic or hang
//!   because nobody reads its stderr any more.
//! * [`stop`] — a graceful stop on `SIGTERM` for socket servers: a flag and a self-pipe to poll.
//! * [`command`] — splitting a worker command line the way a shell would (quotes, no expansion).
//!
//! The crate depends on `libc` only and sits at the bottom of the stack, beside `quiver-wire`.
#![warn(missing_docs)]

pub mod announce;
pub mod child;
pub mod cleanup;
pub mod command;
mod spawner;
pub mod stderr;
pub mod stop;

pub use announce::{announce, read_announcement, Announcement};
pub use child::{describe_status, Child, StderrMode, EXIT_GRACE};
pub use command::split_command;
pub use stop::StopSignal;

/// Whether a process with this pid exists (a zombie counts as existing).
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
