use std::ffi::OsStr;
use std::io;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::connection::{Connection, TransportKind};

/// A worker process spawned with its stdin and stdout as our connection.
///
/// Dropping it closes the pipes (the worker sees EOF and exits), waits briefly,
/// then kills: no zombie outlives the handle.
pub struct Child {
    process: std::process::Child,
    /// How long `Drop` waits for a clean exit before killing.
    pub exit_grace: Duration,
}

/// Spawns `program args...` and returns the child and a connection to it. The
/// child's stderr is inherited.
pub fn spawn<S: AsRef<OsStr>>(program: S, args: &[S]) -> io::Result<(Child, Connection)> {
    let mut command = Command::new(program.as_ref());
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    spawn_command(command)
}

/// Spawns a prepared command (its stdin/stdout are replaced by pipes).
pub fn spawn_command(mut command: Command) -> io::Result<(Child, Connection)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut process = command.spawn()?;
    let stdin = process.stdin.take().expect("stdin was piped");
    let stdout = process.stdout.take().expect("stdout was piped");
    crate::pipe_size::grow_pipe(&stdin);
    crate::pipe_size::grow_pipe(&stdout);
    let peer = format!("subprocess {}", process.id());
    let connection = Connection::new(
        Box::new(stdout),
        Box::new(stdin),
        TransportKind::Stdio,
        peer,
    );
    Ok((
        Child {
            process,
            exit_grace: Duration::from_secs(2),
        },
        connection,
    ))
}

impl Child {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// Whether the child has exited, reaping it if so.
    pub fn try_wait(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        self.process.try_wait()
    }

    /// Waits up to `timeout` for exit, then kills and reaps.
    pub fn shutdown(&mut self, timeout: Duration) -> io::Result<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.process.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.process.kill();
                return self.process.wait();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.shutdown(self.exit_grace);
    }
}
