//! A write to a pipe whose reader is gone is an error, never a SIGPIPE that kills the process.
//! Its own test binary: it restores SIGPIPE's default (deadly) disposition for the whole process,
//! as a C host like DuckDB's shell has it, which must not leak into other tests.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

use quiver_transport::fd_io::FdWriter;

#[test]
fn writing_to_a_dead_reader_is_epipe_not_death() {
    // SAFETY: setting a signal disposition; this binary runs this one test.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array we own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds are fresh and owned here alone.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut writer = FdWriter::new(write_end).unwrap();
    writer.write_all(b"heard").unwrap();
    drop(read_end);
    let error = writer.write_all(b"unheard").unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EPIPE));
    // Still alive, and no SIGPIPE left pending to kill us later.
    // SAFETY: querying this thread's pending set into a zeroed sigset.
    let pending = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set);
        libc::sigismember(&set, libc::SIGPIPE)
    };
    assert_eq!(pending, 0);
}
