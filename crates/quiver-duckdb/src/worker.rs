//! One attached worker: where it lives, the processes we started for it, and a pool of idle
//! connections to it.
//!
//! Three kinds of location, as `ATTACH '<location>'` spells them:
//!
//! * `<command>` — stdio: every connection is its own process (`command` with its stdin and
//!   stdout as the pipe). Parallel scans open several; idle ones are pooled.
//! * `launch:<command>` — one shared process, started with `--unix <path> --idle-timeout <secs>`
//!   appended; it prints `UNIX:<path>` and every connection is a socket to it. Restarted on the
//!   next call if it died.
//! * `unix://<path>` — a worker someone else runs, listening on that socket.
//! * `http://host:port[/prefix]`, `https://...` — a worker (or replicas behind a load balancer)
//!   serving vgi-rpc's HTTP transport; every connection is its own kept-alive HTTP connection,
//!   with the bearer token and certificate authorities of [`Remote`].
//!
//! Every failure on a connection becomes one message naming the worker, what it was doing, how
//! the process ended and the tail of its stderr (see [`Worker::failure`]).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quiver_process::announce::AnnounceError;
use quiver_process::{read_announcement, split_command, Announcement, Child, EXIT_GRACE};
use quiver_rpc::http::HttpOptions;
use quiver_rpc::{Client, RpcError};
use quiver_shm::ShmConfig;
use quiver_transport::fd_io::{self, FdReader, Stopped};
use quiver_transport::Connection;
use quiver_vgi_contract::Dialect;
use quiver_wire::WireError;

use crate::ffi::{Failure, FailureCode, Outcome};
use crate::socket_dir;

/// Idle connections kept per worker; more are closed when returned.
pub const IDLE_CONNECTIONS_MAX: usize = 64;
/// How long a `launch:` worker gets to print `UNIX:<path>`.
pub const LAUNCH_ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(60);
/// The `--idle-timeout` a `launch:` worker gets. It does not bound how long the worker outlives
/// us: every child gets a parent-death signal (`quiver-process`'s spawner), so it ends with us.
pub const LAUNCH_IDLE_TIMEOUT_SECS: u32 = 60;
/// How long we wait for a failing worker to exit and flush stderr before describing it.
const SETTLE: Duration = Duration::from_millis(300);
/// How long a stdio worker whose connection broke gets between SIGTERM and SIGKILL.
const BROKEN_GRACE: Duration = Duration::from_millis(100);

/// Where a worker lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A command run per connection, speaking on its stdin/stdout.
    Stdio(Vec<String>),
    /// A command run once with `--unix`, shared by every connection.
    Launch(Vec<String>),
    /// A socket someone else listens on.
    Unix(PathBuf),
    /// An HTTP(S) base URL.
    Http(String),
}

/// How to reach a remote (HTTP) worker: `ATTACH ... (TYPE quiver, TOKEN '...', CA_FILE '...')`.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    /// Sent as `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// PEM certificate authorities an `https://` worker must chain to (default: the system's).
    pub ca_file: Option<PathBuf>,
}

impl Location {
    /// Parses an ATTACH location.
    pub fn parse(text: &str) -> Outcome<Location> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Ok(Location::Http(text.to_string()));
        }
        if let Some(path) = text.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(Failure::invalid("unix:// needs a socket path"));
            }
            return Ok(Location::Unix(PathBuf::from(path)));
        }
        let (launch, command) = match text.strip_prefix("launch:") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let argv = split_command(command).map_err(|e| {
            Failure::invalid(format!("cannot parse worker command '{command}': {e}"))
        })?;
        if argv.is_empty() {
            return Err(Failure::invalid("the worker location is empty"));
        }
        Ok(if launch {
            Location::Launch(argv)
        } else {
            Location::Stdio(argv)
        })
    }

    fn program(&self) -> String {
        match self {
            Location::Stdio(argv) | Location::Launch(argv) => {
                let program = Path::new(&argv[0]);
                program
                    .file_name()
                    .map_or_else(|| argv[0].clone(), |n| n.to_string_lossy().into_owned())
            }
            Location::Unix(path) => format!("unix://{}", path.display()),
            Location::Http(url) => url.clone(),
        }
    }
}

/// An open connection to the worker, with the process behind it when it is its own (stdio).
pub struct Conn {
    /// The RPC client (vgi.v2, with a shm segment when configured). Dropped first: closing our
    /// ends of the pipes is what tells a stdio worker to exit.
    pub client: Client,
    process: Option<Child>,
    /// The dialect its requests are addressed in (see [`Worker::speak`]).
    dialect: Dialect,
}

/// A stream call holds the whole connection, so that the process behind it comes back with it.
impl AsMut<Client> for Conn {
    fn as_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// The shared `launch:` process and the private directory holding its socket.
struct Launched {
    process: Child,
    socket: PathBuf,
    dir: PathBuf,
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.process.terminate(EXIT_GRACE);
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// An attached worker.
pub struct Worker {
    /// The name DuckDB attached it as, for messages.
    pub alias: String,
    location: Location,
    shm: ShmConfig,
    launched: Mutex<Option<Launched>>,
    remote: Remote,
    idle: Mutex<Vec<Conn>>,
    closed: AtomicBool,
    connections_opened: AtomicU64,
    /// The contract version new connections speak: the newest until discovery learns that the
    /// worker wants an older one (crates/quiver-vgi-contract/src/dialects.rs).
    dialect: Mutex<Dialect>,
}

/// The switch for forwarding workers' stderr (on unless set to `0`).
pub const WORKER_STDERR_VARIABLE: &str = "QUIVER_WORKER_STDERR";

impl Worker {
    /// Prepares the worker at `location` (starting it, for `launch:`); `alias` names it in errors.
    pub fn open(alias: &str, location: &str) -> Outcome<Arc<Worker>> {
        Worker::open_with(alias, location, Remote::default())
    }

    /// [`Worker::open`] with the credentials and trust of a remote (HTTP) worker; refused for a
    /// local location, where they would mean nothing.
    pub fn open_with(alias: &str, location: &str, remote: Remote) -> Outcome<Arc<Worker>> {
        let location = Location::parse(location)?;
        if !matches!(location, Location::Http(_))
            && (remote.token.is_some() || remote.ca_file.is_some())
        {
            return Err(Failure::invalid(
                "TOKEN and CA_FILE apply to http:// and https:// workers only",
            ));
        }
        let shm = ShmConfig::from_env().map_err(|e| Failure::invalid(e.to_string()))?;
        let worker = Arc::new(Worker {
            alias: alias.to_string(),
            location,
            shm,
            launched: Mutex::new(None),
            remote,
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            connections_opened: AtomicU64::new(0),
            dialect: Mutex::new(Dialect::NEWEST),
        });
        if let Location::Launch(_) = worker.location {
            worker.ensure_launched()?;
        }
        Ok(worker)
    }

    /// "worker 'w' (quiver-allinone)".
    pub fn label(&self) -> String {
        format!("worker '{}' ({})", self.alias, self.location.program())
    }

    /// The dialect this worker is spoken to in.
    pub fn dialect(&self) -> Dialect {
        *self.dialect.lock().expect("dialect lock")
    }

    /// Speaks `dialect` from now on: idle connections addressed in another are closed, and so is
    /// any such connection checked in later.
    pub fn speak(&self, dialect: Dialect) {
        *self.dialect.lock().expect("dialect lock") = dialect;
        let stale = std::mem::take(&mut *self.idle.lock().expect("pool lock"));
        for mut conn in stale {
            let process = conn.process.take();
            drop(conn);
            if let Some(mut process) = process {
                process.finish(EXIT_GRACE);
            }
        }
    }

    /// Connections opened so far (for tests and diagnostics).
    pub fn connections_opened(&self) -> u64 {
        self.connections_opened.load(Ordering::Relaxed)
    }

    /// Pids of the processes we started that are alive (stdio pool and `launch:`), for tests.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .idle
            .lock()
            .expect("pool lock")
            .iter()
            .filter_map(|c| c.process.as_ref().map(Child::pid))
            .collect();
        if let Some(launched) = self.launched.lock().expect("launch lock").as_ref() {
            pids.push(launched.process.pid());
        }
        pids
    }

    /// An idle connection, or a new one.
    pub fn checkout(&self) -> Outcome<Conn> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::new(
                FailureCode::Worker,
                format!("{} was detached", self.label()),
            ));
        }
        if let Some(conn) = self.idle.lock().expect("pool lock").pop() {
            return Ok(conn);
        }
        self.connect()
    }

    /// Returns a connection that is between calls; it is closed instead when the pool is full or
    /// the worker detached.
    pub fn checkin(&self, conn: Conn) {
        if self.closed.load(Ordering::Acquire) || conn.dialect != self.dialect() {
            return;
        }
        let mut idle = self.idle.lock().expect("pool lock");
        if idle.len() < IDLE_CONNECTIONS_MAX {
            idle.push(conn);
        }
    }

    /// Runs one exchange of calls on a pooled connection; a failure is described (and the
    /// connection closed unless the worker merely raised an error).
    pub fn with_conn<T>(
        &self,
        during: &str,
        body: impl FnOnce(&mut Client) -> Result<T, RpcError>,
    ) -> Outcome<T> {
        let mut conn = self.checkout()?;
        match body(&mut conn.client) {
            Ok(value) => {
                self.checkin(conn);
                Ok(value)
            }
            Err(error) => Err(self.failure(conn, &error, during)),
        }
    }

    /// Describes `error` on `conn` during `during`; keeps the connection when it is still in step
    /// (the worker raised an error and the call completed), closes it otherwise.
    pub fn failure(&self, conn: Conn, error: &RpcError, during: &str) -> Failure {
        if let RpcError::Remote(report) = error {
            self.checkin(conn);
            return Failure::new(
                FailureCode::Remote,
                format!(
                    "{} raised during {during}: {}: {}",
                    self.label(),
                    report.error_type,
                    report.message
                ),
            );
        }
        self.broken(conn, error, during)
    }

    /// Describes a failure after which `conn` is out of step; closes it (a stdio worker process is
    /// ended at once: it is hung, dead, or mid-answer to a question nobody will read).
    pub fn broken(&self, mut conn: Conn, error: &RpcError, during: &str) -> Failure {
        if let Some(stop) = stopped(error) {
            let process = conn.process.take();
            drop(conn);
            if let Some(mut process) = process {
                process.terminate(BROKEN_GRACE);
            }
            return Failure::new(
                FailureCode::Interrupted,
                format!("{during}: {stop} while waiting for {}", self.label()),
            );
        }
        let what = match error {
            RpcError::Wire(e) if e.is_disconnect() => "closed the connection".to_string(),
            other => format!("failed: {other}"),
        };
        let mut message = format!("{} {what} during {during}", self.label());
        let process_words = match conn.process.as_mut() {
            Some(process) => Some(describe(process)),
            None => self
                .launched
                .lock()
                .expect("launch lock")
                .as_mut()
                .map(|l| describe(&mut l.process)),
        };
        if let Some(words) = process_words {
            message.push_str(&words);
        }
        let process = conn.process.take();
        drop(conn);
        if let Some(mut process) = process {
            process.terminate(BROKEN_GRACE);
        }
        Failure::new(FailureCode::Worker, message)
    }

    /// Detaches: closes every idle connection and ends the processes we started.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let idle = std::mem::take(&mut *self.idle.lock().expect("pool lock"));
        for mut conn in idle {
            let process = conn.process.take();
            drop(conn);
            if let Some(mut process) = process {
                process.finish(EXIT_GRACE);
            }
        }
        drop(self.launched.lock().expect("launch lock").take());
    }

    fn connect(&self) -> Outcome<Conn> {
        let (connection, process) = match &self.location {
            Location::Stdio(argv) => self.spawn_stdio(argv)?,
            Location::Launch(_) => {
                let socket = self.ensure_launched()?;
                (self.connect_unix(&socket)?, None)
            }
            Location::Unix(path) => (self.connect_unix(path)?, None),
            Location::Http(url) => return self.connect_http(url),
        };
        let dialect = self.dialect();
        let mut client = Client::new(connection)
            .with_protocol(dialect.protocol_name(), dialect.protocol_version())
            .with_shm_from_config(&self.shm)
            .map_err(|e| Failure::new(FailureCode::Worker, format!("{}: {e}", self.label())))?;
        if let Some(prefix) = self.stderr_prefix() {
            client = client.with_log_sink(log_forwarder(prefix));
        }
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
        Ok(Conn {
            client,
            process,
            dialect,
        })
    }

    /// A client of the HTTP worker at `url`: nothing is dialled until its first call.
    fn connect_http(&self, url: &str) -> Outcome<Conn> {
        let options = HttpOptions {
            bearer: self.remote.token.clone(),
            ca_file: self.remote.ca_file.clone(),
            ..HttpOptions::default()
        };
        let dialect = self.dialect();
        let client = Client::http(url, options)
            .map_err(|e| Failure::invalid(format!("{}: {e}", self.label())))?
            .with_protocol(dialect.protocol_name(), dialect.protocol_version());
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
        Ok(Conn {
            client,
            process: None,
            dialect,
        })
    }

    fn spawn_stdio(&self, argv: &[String]) -> Outcome<(Connection, Option<Child>)> {
        let mut process = Child::spawn_argv_forwarding(
            argv,
            Stdio::piped(),
            Stdio::piped(),
            self.stderr_prefix(),
        )
        .map_err(|e| self.spawn_failure(argv, e))?;
        let stdin = process.take_stdin().expect("stdin was piped");
        let stdout = process.take_stdout().expect("stdout was piped");
        let peer = format!("{} pid {}", self.label(), process.pid());
        let connection = fd_io::pipe_connection(OwnedFd::from(stdout), OwnedFd::from(stdin), peer)
            .map_err(|e| self.io_failure(e))?;
        Ok((connection, Some(process)))
    }

    fn connect_unix(&self, path: &Path) -> Outcome<Connection> {
        let peer = format!("{} at {}", self.label(), path.display());
        fd_io::connect_unix(path, peer).map_err(|e| {
            Failure::new(
                FailureCode::Worker,
                format!(
                    "{}: cannot connect to {}: {e}",
                    self.label(),
                    path.display()
                ),
            )
        })
    }

    /// The socket of the running `launch:` process, starting (or restarting) it as needed.
    fn ensure_launched(&self) -> Outcome<PathBuf> {
        let Location::Launch(argv) = &self.location else {
            unreachable!("only launch: locations launch");
        };
        let mut launched = self.launched.lock().expect("launch lock");
        if let Some(current) = launched.as_mut() {
            if !current.process.exited() {
                return Ok(current.socket.clone());
            }
        }
        *launched = None;
        let fresh = self.launch(argv)?;
        let socket = fresh.socket.clone();
        *launched = Some(fresh);
        Ok(socket)
    }

    fn launch(&self, argv: &[String]) -> Outcome<Launched> {
        let dir = socket_dir::private_dir().map_err(|e| self.io_failure(e))?;
        let socket = dir.join("worker.sock");
        let mut full = argv.to_vec();
        full.extend([
            "--unix".to_string(),
            socket.display().to_string(),
            "--idle-timeout".to_string(),
            LAUNCH_IDLE_TIMEOUT_SECS.to_string(),
        ]);
        let process = Child::spawn_argv_forwarding(
            &full,
            Stdio::null(),
            Stdio::piped(),
            self.stderr_prefix(),
        )
        .map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            self.spawn_failure(argv, e)
        })?;
        let mut launched = Launched {
            process,
            socket,
            dir,
        };
        let stdout = launched.process.take_stdout().expect("stdout was piped");
        let announced = expect_announcement(stdout, &launched.socket);
        match announced {
            Ok(()) => Ok(launched),
            Err(reason) => {
                let words = describe(&mut launched.process);
                Err(Failure::new(
                    FailureCode::Worker,
                    format!("{} did not start: {reason}{words}", self.label()),
                ))
            }
        }
    }

    /// What each line a worker writes to stderr, and each log record it sends on the wire, is
    /// forwarded to the engine's stderr after:
    /// `[w] ` for the worker attached as `w`, unless `QUIVER_WORKER_STDERR` is `0` (or `false`,
    /// `no`, `off`). The bounded tail quoted in errors is kept either way.
    fn stderr_prefix(&self) -> Option<String> {
        let off = std::env::var(WORKER_STDERR_VARIABLE).is_ok_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
        });
        (!off).then(|| format!("[{}] ", self.alias))
    }

    fn spawn_failure(&self, argv: &[String], error: std::io::Error) -> Failure {
        Failure::new(
            FailureCode::Worker,
            format!(
                "{}: cannot start '{}': {error}",
                self.label(),
                argv.join(" ")
            ),
        )
    }

    fn io_failure(&self, error: std::io::Error) -> Failure {
        Failure::new(FailureCode::Worker, format!("{}: {error}", self.label()))
    }
}

/// Forwards a worker's log records (vgi_rpc log batches) to the engine's stderr, one line each:
/// `[w] INFO: message {"extra": "..."}`, beside what the worker writes to its stderr.
fn log_forwarder(prefix: String) -> quiver_rpc::LogSink {
    Box::new(move |record: quiver_wire::LogRecord| {
        let extra = if record.extra.is_empty() {
            String::new()
        } else {
            format!(" {}", serde_json::Value::Object(record.extra))
        };
        quiver_process::log_line!(
            "{prefix}{}: {}{extra}",
            record.level.as_str(),
            record.message
        );
    })
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// ", pid 123 was killed by signal 9 (SIGKILL); its stderr ended with:\n..." for a failing process.
fn describe(process: &mut Child) -> String {
    let state = process.describe_state(SETTLE);
    let settle = if process.exited() {
        SETTLE
    } else {
        Duration::ZERO
    };
    let tail = process.stderr_tail(settle);
    let mut words = format!("; the process (pid {}) {state}", process.pid());
    if tail.is_empty() {
        words.push_str(" and wrote nothing to stderr");
    } else {
        words.push_str("; its stderr ended with:\n");
        words.push_str(&tail);
    }
    words
}

/// Whether a client error is a wait we stopped (interrupt or deadline).
pub fn stopped(error: &RpcError) -> Option<Stopped> {
    match error {
        RpcError::Wire(WireError::Io(e)) => fd_io::stopped(e),
        _ => None,
    }
}

/// Reads the launched worker's `UNIX:<socket>` line (see `quiver-process`'s `announce.rs`),
/// stopping at [`LAUNCH_ANNOUNCE_TIMEOUT`] or when the query is interrupted. The rest of stdout is
/// drained in the background so a chatty worker never blocks on a full pipe.
fn expect_announcement(stdout: std::process::ChildStdout, socket: &Path) -> Result<(), String> {
    let announced = read_announcement(&stdout, LAUNCH_ANNOUNCE_TIMEOUT, &fd_io::interrupted)
        .map_err(|error| match error {
            AnnounceError::TimedOut(_) => format!(
                "no UNIX:<path> line within {} s",
                LAUNCH_ANNOUNCE_TIMEOUT.as_secs()
            ),
            other => other.to_string(),
        })?;
    match announced {
        Announcement::Unix(path) if path == socket => {}
        other => {
            return Err(format!(
                "it announced {other}, not UNIX:{}",
                socket.display()
            ))
        }
    }
    let mut rest = FdReader::new(OwnedFd::from(stdout)).map_err(|e| e.to_string())?;
    std::thread::Builder::new()
        .name("quiver-worker-stdout".into())
        .spawn(move || {
            use std::io::Read;
            let mut sink = [0u8; 4096];
            while matches!(rest.read(&mut sink), Ok(n) if n > 0) {}
        })
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        assert_eq!(
            Location::parse("/bin/w --x 'a b'").unwrap(),
            Location::Stdio(vec!["/bin/w".into(), "--x".into(), "a b".into()])
        );
        assert_eq!(
            Location::parse("launch:/bin/w").unwrap(),
            Location::Launch(vec!["/bin/w".into()])
        );
        assert_eq!(
            Location::parse("unix:///tmp/w.sock").unwrap(),
            Location::Unix("/tmp/w.sock".into())
        );
        assert!(Location::parse("  ").is_err());
        assert_eq!(
            Location::parse(" https://w.example:8443/vgi ").unwrap(),
            Location::Http("https://w.example:8443/vgi".into())
        );
        assert!(Location::parse("launch:").is_err());
        assert!(Location::parse("unix://").is_err());
    }

    #[test]
    fn a_worker_that_cannot_start_is_named() {
        let error = match Worker::open("w", "launch:/nonexistent/worker") {
            Err(e) => e,
            Ok(_) => panic!("started a missing program"),
        };
        assert_eq!(error.code, FailureCode::Worker);
        assert!(
            error.message.contains("worker 'w' (worker)"),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("/nonexistent/worker"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_launch_worker_that_dies_before_announcing_is_described() {
        let error = match Worker::open("w", "launch:sh -c 'echo broken config >&2; exit 7'") {
            Err(e) => e,
            Ok(_) => panic!("no announcement"),
        };
        assert!(error.message.contains("did not start"), "{}", error.message);
        assert!(
            error.message.contains("exited with status 7"),
            "{}",
            error.message
        );
        assert!(error.message.contains("broken config"), "{}", error.message);
    }
}
