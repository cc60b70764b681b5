//! The one supervised child-process type: a worker we started, its stderr kept in a bounded tail
//! (for error messages), its exit described in words, and its end guaranteed — it dies with us
//! (parent-death signal, see `spawner.rs`), and it is reaped when its handle drops (wait for a
//! clean exit, SIGTERM, SIGKILL, wait), so none outlives us as a zombie.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of a child's stderr kept for error messages (the most recent ones).
pub const STDERR_TAIL_BYTES_MAX: usize = 16 * 1024;
/// Lines of stderr quoted in an error message.
pub const STDERR_TAIL_LINES: usize = 20;
/// How long a child gets to exit after its input closes or SIGTERM, before SIGKILL.
pub const EXIT_GRACE: Duration = Duration::from_millis(1500);
/// How often a wait for exit looks again.
const EXIT_POLL: Duration = Duration::from_millis(5);

/// Where a child's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StderrMode {
    /// Captured: the last [`STDERR_TAIL_BYTES_MAX`] bytes are kept for [`Child::stderr_tail`], and
    /// echoed to ours with `QUIVER_WORKER_STDERR=1` (or `VGI_RPC_SHM_DEBUG=1`);
    /// [`Child::spawn_argv_forwarding`] forwards every line after a prefix instead.
    Tail,
    /// Shared with ours.
    Inherit,
    /// Discarded.
    Null,
}

/// The last [`STDERR_TAIL_BYTES_MAX`] bytes a process wrote to stderr.
#[derive(Default)]
struct StderrTail {
    state: Mutex<TailState>,
    closed: Condvar,
}

#[derive(Default)]
struct TailState {
    bytes: VecDeque<u8>,
    dropped_bytes: u64,
    closed: bool,
}

impl StderrTail {
    fn push(&self, chunk: &[u8]) {
        let mut state = self.state.lock().expect("stderr tail lock");
        state.bytes.extend(chunk);
        let excess = state.bytes.len().saturating_sub(STDERR_TAIL_BYTES_MAX);
        if excess > 0 {
            state.bytes.drain(..excess);
            state.dropped_bytes += excess as u64;
        }
        assert!(state.bytes.len() <= STDERR_TAIL_BYTES_MAX);
    }

    fn close(&self) {
        self.state.lock().expect("stderr tail lock").closed = true;
        self.closed.notify_all();
    }

    /// Waits up to `limit` for the writer to close; whether it did.
    fn wait_closed(&self, limit: Duration) -> bool {
        let state = self.state.lock().expect("stderr tail lock");
        let (state, _) = self
            .closed
            .wait_timeout_while(state, limit, |s| !s.closed)
            .expect("stderr tail lock");
        state.closed
    }

    /// Waits up to `limit` for the process to close its stderr (so a dying child's last words are
    /// in), then returns the last `lines` lines.
    fn tail_after(&self, limit: Duration, lines: usize) -> String {
        self.wait_closed(limit);
        let state = self.state.lock().expect("stderr tail lock");
        let bytes: Vec<u8> = state.bytes.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let kept: Vec<&str> = text.trim_end().lines().collect();
        let start = kept.len().saturating_sub(lines);
        kept[start..].join("\n")
    }
}

/// Longest line forwarded whole; a longer one is forwarded in pieces of this size.
const FORWARDED_LINE_BYTES_MAX: usize = 4096;

/// Copies a child's stderr into `tail` until EOF; echoes it to our stderr when `echo` is set,
/// every line after that prefix.
fn drain(mut stderr: ChildStderr, tail: Arc<StderrTail>, echo: Option<String>) {
    let mut buf = [0u8; 4096];
    let mut line = Vec::new();
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(prefix) = &echo {
                    forward(prefix, &buf[..n], &mut line, false);
                }
                tail.push(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let Some(prefix) = &echo {
        forward(prefix, &[], &mut line, true);
    }
    // Closed only after the last line went out: whoever waited for the tail (an error message)
    // finds every line already on our stderr.
    tail.close();
}

/// Writes the complete lines of `pending` + `chunk` to our stderr, each after `prefix`; keeps the
/// unfinished rest in `pending` (all of it at `end`). Write errors are dropped: a closed stderr
/// must not stop the drain.
fn forward(prefix: &str, chunk: &[u8], pending: &mut Vec<u8>, end: bool) {
    use std::io::Write;
    pending.extend_from_slice(chunk);
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(at) = pending[start..].iter().position(|&b| b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(&pending[start..=start + at]);
        start += at + 1;
    }
    while pending.len() - start >= FORWARDED_LINE_BYTES_MAX || (end && pending.len() > start) {
        let piece = (pending.len() - start).min(FORWARDED_LINE_BYTES_MAX);
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(&pending[start..start + piece]);
        out.push(b'\n');
        start += piece;
    }
    pending.drain(..start);
    if !out.is_empty() {
        let _ = std::io::stderr().lock().write_all(&out);
    }
}

/// Whether child stderr is echoed to ours (`QUIVER_WORKER_STDERR=1`, or shm debugging on).
fn echo_stderr() -> bool {
    let on = |name: &str| {
        std::env::var(name)
            .map(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"))
            .unwrap_or(false)
    };
    on("QUIVER_WORKER_STDERR") || on("VGI_RPC_SHM_DEBUG")
}

/// The command `argv` with `stdin` and `stdout` as given.
fn command_of(argv: &[String], stdin: Stdio, stdout: Stdio) -> io::Result<Command> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::other("empty command"))?;
    let mut command = Command::new(program);
    command.args(args).stdin(stdin).stdout(stdout);
    Ok(command)
}

/// A child process we started.
pub struct Child {
    process: std::process::Child,
    status: Option<ExitStatus>,
    stderr: Option<Arc<StderrTail>>,
    drain: Option<JoinHandle<()>>,
    program: String,
}

impl Child {
    /// Starts `command` (its stdin and stdout as the caller set them) with stderr as `stderr`
    /// says, from the spawner thread, with a parent-death signal.
    pub fn spawn(command: Command, stderr: StderrMode) -> io::Result<Child> {
        Child::spawn_echoing(command, stderr, echo_stderr().then(String::new))
    }

    /// Starts `argv` like [`Child::spawn_argv`] with its stderr captured in the tail and, when
    /// `prefix` is given, every line of it also written to our stderr after `prefix` (a worker's
    /// output, named, where its author sees it).
    pub fn spawn_argv_forwarding(
        argv: &[String],
        stdin: Stdio,
        stdout: Stdio,
        prefix: Option<String>,
    ) -> io::Result<Child> {
        let command = command_of(argv, stdin, stdout)?;
        let echo = prefix.or_else(|| echo_stderr().then(String::new));
        Child::spawn_echoing(command, StderrMode::Tail, echo)
    }

    fn spawn_echoing(
        mut command: Command,
        stderr: StderrMode,
        echo: Option<String>,
    ) -> io::Result<Child> {
        let program = command.get_program().to_string_lossy().into_owned();
        command.stderr(match stderr {
            StderrMode::Tail => Stdio::piped(),
            StderrMode::Inherit => Stdio::inherit(),
            StderrMode::Null => Stdio::null(),
        });
        let mut process = crate::spawner::spawn(command)?;
        let (stderr, drain) = match process.stderr.take() {
            None => (None, None),
            Some(pipe) => {
                let tail = Arc::new(StderrTail::default());
                let drain_tail = tail.clone();
                let spawned = std::thread::Builder::new()
                    .name("quiver-child-stderr".into())
                    .spawn(move || drain(pipe, drain_tail, echo));
                match spawned {
                    Ok(handle) => (Some(tail), Some(handle)),
                    Err(error) => {
                        let _ = process.kill();
                        let _ = process.wait();
                        return Err(error);
                    }
                }
            }
        };
        Ok(Child {
            process,
            status: None,
            stderr,
            drain,
            program,
        })
    }

    /// Starts `argv` with `stdin`/`stdout` as given and stderr as `stderr` says.
    pub fn spawn_argv(
        argv: &[String],
        stdin: Stdio,
        stdout: Stdio,
        stderr: StderrMode,
    ) -> io::Result<Child> {
        Child::spawn(command_of(argv, stdin, stdout)?, stderr)
    }

    /// The child's stdin, if it was piped and not taken yet.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.process.stdin.take()
    }

    /// The child's stdout, if it was piped and not taken yet.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.process.stdout.take()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// The program, as spawned (for messages).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The exit status, if the process has exited (reaping it if so).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.process.try_wait().ok().flatten();
        }
        self.status
    }

    /// Whether the process has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        self.try_wait().is_some()
    }

    /// Waits up to `limit` for the process to exit, returning its status if it did.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(EXIT_POLL);
        }
    }

    /// "exited with status 3", "was killed by signal 9 (SIGKILL)" or "is still running".
    pub fn describe_state(&mut self, settle: Duration) -> String {
        match self.wait_for_exit(settle) {
            Some(status) => describe_status(status),
            None => "is still running".to_string(),
        }
    }

    /// The last lines of stderr (empty unless captured), waiting up to `settle` for a dying
    /// process to finish writing.
    pub fn stderr_tail(&self, settle: Duration) -> String {
        match &self.stderr {
            Some(tail) => tail.tail_after(settle, STDERR_TAIL_LINES),
            None => String::new(),
        }
    }

    /// Ends the process: SIGTERM, up to `grace` to exit, then SIGKILL; always reaps it.
    pub fn terminate(&mut self, grace: Duration) {
        if self.try_wait().is_none() {
            // SAFETY: kill on our own child's pid, which cannot have been reused: we have not
            // reaped it.
            unsafe {
                libc::kill(self.process.id() as libc::pid_t, libc::SIGTERM);
            }
            if self.wait_for_exit(grace).is_none() {
                let _ = self.process.kill();
                self.status = self.process.wait().ok();
            }
        }
        // No assertion that a status was collected: a host that ignores SIGCHLD has the kernel
        // reap its children itself, and `wait` then fails with ECHILD.
        if let Some(drain) = self.drain.take() {
            // The pipe closes with the process (unless it handed stderr to a grandchild, whose
            // drain thread then ends on its own).
            let closed = self
                .stderr
                .as_ref()
                .is_some_and(|tail| tail.wait_closed(Duration::from_millis(200)));
            if drain.is_finished() || closed {
                let _ = drain.join();
            }
        }
    }

    /// Waits up to `grace` for the process to exit by itself (its input closed), then terminates.
    pub fn finish(&mut self, grace: Duration) {
        if self.wait_for_exit(grace).is_none() {
            self.terminate(Duration::from_millis(200));
        } else {
            self.terminate(Duration::ZERO);
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.finish(EXIT_GRACE);
    }
}

/// An exit status in words.
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(signal) => format!("was killed by signal {signal} ({})", signal_name(signal)),
        None => format!("ended ({status})"),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}
