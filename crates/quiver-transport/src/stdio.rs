use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

use crate::connection::{Connection, TransportKind};

/// This process's stdin and stdout as a connection, for a worker launched with
/// pipes.
///
/// Protocol bytes must be the only thing on stdout, so the original stdout is
/// moved to a private descriptor and fd 1 is pointed at stderr: a stray `println!`
/// anywhere in the process lands in the log instead of corrupting the stream.
pub fn stdio_connection() -> io::Result<Connection> {
    // SAFETY: dup/dup2 on the process's own standard descriptors.
    let protocol_out = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if protocol_out < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: dup2 on the process's own standard descriptors; fd 1's original is kept above.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: duplicating the process's own stdin; the new fd is owned below.
    let protocol_in = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if protocol_in < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just duplicated and are owned here alone.
    let (reader, writer) = unsafe {
        (
            File::from_raw_fd(protocol_in),
            File::from_raw_fd(protocol_out),
        )
    };
    crate::pipe_size::grow_pipe(&reader);
    crate::pipe_size::grow_pipe(&writer);
    let fd = reader.as_raw_fd();
    Ok(Connection::new(
        Box::new(reader),
        Box::new(writer),
        TransportKind::Stdio,
        "stdio",
    )
    .spinning(fd))
}
