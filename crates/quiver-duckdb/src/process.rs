//! Worker processes we start: their stderr kept in a bounded ring (for error messages), their
//! exit described in words, and their end guaranteed — every process is reaped when its handle
//! drops (terminate, wait briefly, kill, wait), so none outlives us as a zombie.

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of a worker's stderr kept for error messages (the most recent ones).
pub const STDERR_TAIL_BYTES_MAX: usize = 16 * 1024;
/// Lines of stderr quoted in an error message.
pub const STDERR_TAIL_LINES: usize = 20;
/// How long a worker gets to exit after its input closes or SIGTERM, before SIGKILL.
pub const EXIT_GRACE: Duration = Duration::from_millis(1500);

/// The last [`STDERR_TAIL_BYTES_MAX`] bytes a process wrote to stderr.
#[derive(Default)]
pub struct StderrTail {
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
    }

    fn close(&self) {
        self.state.lock().expect("stderr tail lock").closed = true;
        self.closed.notify_all();
    }

    /// Waits up to `limit` for the process to close its stderr (so a dying worker's last words are
    /// in), then returns the last `lines` lines.
    pub fn tail_after(&self, limit: Duration, lines: usize) -> String {
        let state = self.state.lock().expect("stderr tail lock");
        let (state, _) = self
            .closed
            .wait_timeout_while(state, limit, |s| !s.closed)
            .expect("stderr tail lock");
        let bytes: Vec<u8> = state.bytes.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let kept: Vec<&str> = text.trim_end().lines().collect();
        let start = kept.len().saturating_sub(lines);
        kept[start..].join("\n")
    }
}

/// Copies a child's stderr into `tail` until EOF; echoes it to our stderr when `echo`.
fn drain(mut stderr: ChildStderr, tail: Arc<StderrTail>, echo: bool) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                tail.push(&buf[..n]);
                if echo {
                    use std::io::Write;
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    tail.close();
}

/// Whether worker stderr is echoed to ours (`QUIVER_WORKER_STDERR=1`, or shm debugging on).
fn echo_stderr() -> bool {
    let on = |name: &str| {
        std::env::var(name)
            .map(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"))
            .unwrap_or(false)
    };
    on("QUIVER_WORKER_STDERR") || on("VGI_RPC_SHM_DEBUG")
}

/// A worker process we started.
pub struct Process {
    child: Child,
    status: Option<ExitStatus>,
    stderr: Arc<StderrTail>,
    drain: Option<JoinHandle<()>>,
    /// The program, for messages.
    pub program: String,
}

impl Process {
    /// Starts `argv` with `stdin`/`stdout` as given and stderr captured.
    pub fn spawn(argv: &[String], stdin: Stdio, stdout: Stdio) -> std::io::Result<Process> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty command"))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stderr = child.stderr.take().expect("stderr was piped");
        let tail = Arc::new(StderrTail::default());
        let drain_tail = tail.clone();
        let echo = echo_stderr();
        let drain = std::thread::Builder::new()
            .name("quiver-worker-stderr".into())
            .spawn(move || drain(stderr, drain_tail, echo))?;
        Ok(Process {
            child,
            status: None,
            stderr: tail,
            drain: Some(drain),
            program: program.clone(),
        })
    }

    /// The child's pipes (stdin, stdout), if they were piped and not taken yet.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        self.poll_status().is_some()
    }

    fn poll_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits up to `limit` for the process to exit, returning its status if it did.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.poll_status() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// "exited with status 3", "was killed by signal 9 (SIGKILL)" or "is still running".
    pub fn describe_state(&mut self, settle: Duration) -> String {
        match self.wait_for_exit(settle) {
            Some(status) => describe_status(status),
            None => "is still running".to_string(),
        }
    }

    /// The last lines of stderr, waiting up to `settle` for a dying process to finish writing.
    pub fn stderr_tail(&self, settle: Duration) -> String {
        self.stderr.tail_after(settle, STDERR_TAIL_LINES)
    }

    /// Ends the process: SIGTERM, up to `grace` to exit, then SIGKILL; always reaps it.
    pub fn terminate(&mut self, grace: Duration) {
        if self.poll_status().is_none() {
            // SAFETY: kill on our own child's pid, which cannot have been reused: we have not
            // reaped it.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
            }
            if self.wait_for_exit(grace).is_none() {
                let _ = self.child.kill();
                self.status = self.child.wait().ok();
            }
        }
        if let Some(drain) = self.drain.take() {
            // The pipe closes with the process (unless it handed stderr to a grandchild).
            if drain.is_finished() || self.stderr.wait_closed(Duration::from_millis(200)) {
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

impl StderrTail {
    fn wait_closed(&self, limit: Duration) -> bool {
        let state = self.state.lock().expect("stderr tail lock");
        let (state, _) = self
            .closed
            .wait_timeout_while(state, limit, |s| !s.closed)
            .expect("stderr tail lock");
        state.closed
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.terminate(EXIT_GRACE);
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

/// Splits a command line with POSIX shell quoting rules (quotes and backslashes; no expansion).
pub fn split_command(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err("trailing backslash".into()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_command(r#"  /bin/w --name "a b" 'c d' e\ f "x\"y" "#).unwrap(),
            ["/bin/w", "--name", "a b", "c d", "e f", "x\"y"]
        );
        assert_eq!(split_command("''").unwrap(), [""]);
        assert!(split_command("'open").is_err());
    }

    #[test]
    fn a_dying_process_is_described_with_its_last_words() {
        let argv: Vec<String> = ["sh", "-c", "echo one >&2; echo two >&2; exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut process = Process::spawn(&argv, Stdio::null(), Stdio::null()).unwrap();
        assert_eq!(
            process.describe_state(Duration::from_secs(5)),
            "exited with status 3"
        );
        assert_eq!(process.stderr_tail(Duration::from_secs(5)), "one\ntwo");
    }

    #[test]
    fn terminate_kills_and_reaps() {
        let argv: Vec<String> = ["sh", "-c", "trap '' TERM; sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut process = Process::spawn(&argv, Stdio::null(), Stdio::null()).unwrap();
        let pid = process.pid() as libc::pid_t;
        process.terminate(Duration::from_millis(100));
        assert!(process.exited());
        // SAFETY: probing a pid we reaped: it must be gone (ESRCH) or someone else's.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive || process.status.is_some());
    }

    #[test]
    fn the_tail_is_bounded() {
        let tail = StderrTail::default();
        for i in 0..10_000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        tail.close();
        let text = tail.tail_after(Duration::ZERO, 2);
        assert_eq!(text, "line 9998\nline 9999");
        assert!(tail.state.lock().unwrap().bytes.len() <= STDERR_TAIL_BYTES_MAX);
    }
}
