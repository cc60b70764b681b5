use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

use crate::connection::{Connection, TransportKind};

/// Two connected ends over two OS pipes, for a client and a server in one process
/// (each end usually on its own thread).
pub fn pipe_pair() -> io::Result<(Connection, Connection)> {
    let (a_read, b_write) = os_pipe()?;
    let (b_read, a_write) = os_pipe()?;
    let end = |read: File, write: File| {
        let fd = read.as_raw_fd();
        let kind = TransportKind::Pipe;
        Connection::new(Box::new(read), Box::new(write), kind, "in-process pipe").spinning(fd)
    };
    let (a, b) = (end(a_read, a_write), end(b_read, b_write));
    Ok((a, b))
}

/// One OS pipe as (read end, write end), close-on-exec.
pub(crate) fn os_pipe() -> io::Result<(File, File)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the fds were just created and are owned by nobody else.
    let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    crate::pipe_size::grow_pipe(&write);
    Ok((read, write))
}
