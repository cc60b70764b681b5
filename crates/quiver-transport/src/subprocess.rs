//! A worker process on our end of its stdin and stdout, supervised by `quiver-process`.

use std::ffi::OsStr;
use std::io;
use std::process::{Command, Stdio};

use quiver_process::{Child, StderrMode};

use crate::connection::{Connection, TransportKind};

/// Spawns `program args...` and returns the child and a connection to it. The child's stderr is
/// inherited.
pub fn spawn<S: AsRef<OsStr>>(program: S, args: &[S]) -> io::Result<(Child, Connection)> {
    let mut command = Command::new(program.as_ref());
    command.args(args);
    spawn_command(command, StderrMode::Inherit)
}

/// Spawns a prepared command with its stdin/stdout replaced by pipes and stderr as `stderr` says.
///
/// Dropping the child waits briefly for it to exit (drop the connection first: closing the pipes
/// is what tells a worker to exit), then terminates it; it is always reaped.
pub fn spawn_command(mut command: Command, stderr: StderrMode) -> io::Result<(Child, Connection)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = Child::spawn(command, stderr)?;
    let stdin = child.take_stdin().expect("stdin was piped");
    let stdout = child.take_stdout().expect("stdout was piped");
    crate::pipe_size::grow_pipe(&stdin);
    crate::pipe_size::grow_pipe(&stdout);
    let peer = format!("subprocess {}", child.pid());
    let connection = Connection::new(
        Box::new(stdout),
        Box::new(stdin),
        TransportKind::Stdio,
        peer,
    );
    Ok((child, connection))
}
