//! A server process this client starts and owns: it runs
//! `python -m quiver.serve --watch-stdin ...`, reads the listeners it announces (`PORT:<n>`,
//! `UNIX:<path>`, `FLIGHT_SQL:<uri>`, `TOKEN:<hex>`, then `READY`), and stops it on drop (SIGTERM, a grace, then
//! SIGKILL). The child's stdin is a pipe this struct holds and never writes: when this process
//! dies, the pipe closes and the server stops (the dead-man switch).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use quiver_process::announce::{Announcement, ServerLine};
use quiver_process::{Child, StderrMode};
use quiver_server_protocol::Address;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::options::ConnectOptions;

/// The variable naming the Python that runs `quiver.serve`.
pub const ENV_PYTHON: &str = "QUIVER_SERVER_PYTHON";
/// The variable holding a whole server command line (split like a shell's words) used instead of
/// `<python> -m quiver.serve`, e.g. to run another build of the server.
pub const ENV_COMMAND: &str = "QUIVER_SERVER_COMMAND";
/// The variable naming the extension file the server loads.
pub const ENV_EXTENSION: &str = "QUIVER_SERVER_EXTENSION";
/// The variable the server reads its token from (its `--token-env` default).
pub const ENV_TOKEN: &str = "QUIVER_TOKEN";
/// How long a server may take to print `READY` by default (a cold DuckDB and extension load on
/// a loaded machine).
pub const READY_WAIT_DEFAULT: Duration = Duration::from_secs(60);
/// How long a stopping server may take to exit after SIGTERM before it is killed (it
/// checkpoints a file database).
pub const STOP_GRACE_DEFAULT: Duration = Duration::from_secs(20);
/// Most lines read from the server's stdout before `READY`.
const ANNOUNCEMENT_LINES_MAX: usize = 64;

/// How to start a server.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The program and arguments before the server's flags; `None`: [`ENV_COMMAND`] if set, else
    /// `<python> -m quiver.serve` with the Python from [`ENV_PYTHON`], else [`SERVER_PROGRAM`] on
    /// PATH, else `-m quiver.serve` with the nearest `.venv/bin/python` above the current
    /// directory, else with `python3`.
    pub command: Option<Vec<String>>,
    /// The database file; `None` for an in-memory database.
    pub database: Option<PathBuf>,
    /// Listeners: `tcp://127.0.0.1:0` (a free port) and/or `unix:///path`.
    pub listen: Vec<Address>,
    /// The token TCP clients must present; `None` lets the server make one (read back from its
    /// `TOKEN:` line).
    pub token: Option<String>,
    /// `--no-auth` (allowed for loopback listeners only).
    pub no_auth: bool,
    /// The extension file (`--extension`); `None`: [`ENV_EXTENSION`] if set, else the server's
    /// default (its tree's build).
    pub extension: Option<PathBuf>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--memory-limit`, DuckDB's syntax (`4GB`).
    pub memory_limit: Option<String>,
    /// `--max-connections`.
    pub max_connections: Option<usize>,
    /// Further flags, appended as given.
    pub extra_args: Vec<String>,
    /// How long to wait for `READY`.
    pub ready_wait: Duration,
    /// How long SIGTERM may take before SIGKILL.
    pub stop_grace: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            command: None,
            database: None,
            listen: vec![Address::Tcp {
                host: "127.0.0.1".into(),
                port: 0,
            }],
            token: None,
            no_auth: false,
            extension: None,
            threads: None,
            memory_limit: None,
            max_connections: None,
            extra_args: Vec::new(),
            ready_wait: READY_WAIT_DEFAULT,
            stop_grace: STOP_GRACE_DEFAULT,
        }
    }
}

/// A running server, stopped when dropped.
pub struct ServerProcess {
    child: Child,
    /// Held, never written: its close is the server's signal to stop.
    stdin: Option<ChildStdin>,
    addresses: Vec<Address>,
    /// The Flight SQL front door's URI, when a `grpc://` listener was asked for in `extra_args`.
    flight_sql: Option<String>,
    token: Option<String>,
    stop_grace: Duration,
}

impl ServerProcess {
    /// Starts a server and waits until it is ready.
    pub fn spawn(options: ServerOptions) -> Result<ServerProcess> {
        let argv = server_argv(&options)?;
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        match &options.token {
            Some(token) => command.env(ENV_TOKEN, token),
            None => command.env_remove(ENV_TOKEN),
        };
        let mut child = Child::spawn(command, StderrMode::Tail)
            .map_err(|error| Error::Spawn(format!("cannot start {}: {error}", argv[0])))?;
        let stdin = child.take_stdin();
        let stdout = child.take_stdout().expect("stdout was piped");
        let lines = read_lines(stdout);
        let mut server = ServerProcess {
            child,
            stdin,
            addresses: Vec::new(),
            flight_sql: None,
            token: options.token.clone(),
            stop_grace: options.stop_grace,
        };
        server.await_ready(&lines, options.ready_wait, &argv)?;
        Ok(server)
    }

    fn await_ready(
        &mut self,
        lines: &mpsc::Receiver<String>,
        wait: Duration,
        argv: &[String],
    ) -> Result<()> {
        let deadline = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match lines.recv_timeout(left) {
                Ok(line) => line,
                Err(error) => {
                    let why = match error {
                        mpsc::RecvTimeoutError::Timeout => {
                            format!("no READY within {} s", wait.as_secs_f64())
                        }
                        mpsc::RecvTimeoutError::Disconnected => format!(
                            "it {} before READY",
                            self.child.describe_state(Duration::from_secs(2))
                        ),
                    };
                    return Err(Error::Spawn(format!(
                        "{} : {why}; its stdout: {:?}; its stderr: {}",
                        argv.join(" "),
                        seen,
                        self.child.stderr_tail(Duration::from_millis(500))
                    )));
                }
            };
            let line = line.trim().to_string();
            match ServerLine::parse(&line) {
                Some(ServerLine::Ready) if self.addresses.is_empty() => {
                    return Err(Error::Spawn(format!("READY without a listener: {seen:?}")));
                }
                Some(ServerLine::Ready) => return Ok(()),
                Some(ServerLine::Listener(Announcement::Port(port))) => {
                    self.addresses.push(Address::Tcp {
                        host: "127.0.0.1".into(),
                        port,
                    })
                }
                Some(ServerLine::Listener(Announcement::Unix(path))) => {
                    self.addresses.push(Address::Unix(path))
                }
                Some(ServerLine::FlightSql(uri)) => self.flight_sql = Some(uri),
                Some(ServerLine::Token(token)) => self.token = Some(token),
                None if line.starts_with("PORT:") => return Err(bad_line(&line)),
                _ => {}
            }
            if seen.len() >= ANNOUNCEMENT_LINES_MAX {
                return Err(Error::Spawn(format!("no READY in {seen:?}")));
            }
            seen.push(line);
        }
    }

    /// Every listener, in the order announced.
    pub fn addresses(&self) -> &[Address] {
        &self.addresses
    }

    /// The TCP listener, if any.
    pub fn tcp_address(&self) -> Option<&Address> {
        self.addresses
            .iter()
            .find(|address| matches!(address, Address::Tcp { .. }))
    }

    /// The Unix socket listener, if any.
    pub fn unix_address(&self) -> Option<&Address> {
        self.addresses
            .iter()
            .find(|address| matches!(address, Address::Unix(_)))
    }

    /// The Flight SQL front door's URI (`grpc://host:port`), if the server announced one.
    pub fn flight_sql_uri(&self) -> Option<&str> {
        self.flight_sql.as_deref()
    }

    /// The token TCP clients present (given, or the one the server made).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Connects to the first listener with the server's token.
    pub fn connect(&self) -> Result<Connection> {
        self.connect_to(&self.addresses[0], ConnectOptions::default())
    }

    /// Connects to `address` with `options`, adding the server's token when none is set.
    pub fn connect_to(&self, address: &Address, mut options: ConnectOptions) -> Result<Connection> {
        if options.token.is_none() {
            options.token = self.token.clone();
        }
        Connection::connect_with(address, &options)
    }

    /// The last lines the server wrote on stderr.
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail(Duration::from_millis(200))
    }

    /// Stops the server: SIGTERM, then SIGKILL after the grace.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.child.terminate(self.stop_grace);
        self.stdin = None;
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop_now();
    }
}

fn bad_line(line: &str) -> Error {
    Error::Spawn(format!("malformed announcement '{line}'"))
}

/// Reads the server's stdout on a thread of its own until EOF, so the server never blocks on a
/// full pipe; lines go to the channel while someone listens.
fn read_lines(stdout: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("quiver-server-stdout".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Nobody listens after READY: keep draining.
                let _ = sender.send(line);
            }
        })
        .expect("a thread to read the server's stdout");
    receiver
}

fn server_argv(options: &ServerOptions) -> Result<Vec<String>> {
    let mut argv = match &options.command {
        Some(command) if !command.is_empty() => command.clone(),
        Some(_) => return Err(Error::Spawn("an empty server command".into())),
        None => match std::env::var(ENV_COMMAND) {
            Ok(text) if !text.trim().is_empty() => quiver_process::split_command(&text)
                .map_err(|error| Error::Spawn(format!("{ENV_COMMAND}: {error}")))?,
            _ => default_command(),
        },
    };
    if let Some(database) = &options.database {
        argv.extend(["--database".into(), database.display().to_string()]);
    }
    if options.listen.is_empty() {
        return Err(Error::Spawn("a server needs at least one listener".into()));
    }
    for address in &options.listen {
        argv.extend(["--listen".into(), address.to_string()]);
    }
    if options.no_auth {
        argv.push("--no-auth".into());
    }
    let extension = options
        .extension
        .clone()
        .or_else(|| std::env::var_os(ENV_EXTENSION).map(PathBuf::from));
    if let Some(extension) = extension {
        argv.extend(["--extension".into(), extension.display().to_string()]);
    }
    if let Some(threads) = options.threads {
        argv.extend(["--threads".into(), threads.to_string()]);
    }
    if let Some(limit) = &options.memory_limit {
        argv.extend(["--memory-limit".into(), limit.clone()]);
    }
    if let Some(max) = options.max_connections {
        argv.extend(["--max-connections".into(), max.to_string()]);
    }
    argv.push("--watch-stdin".into());
    argv.extend(options.extra_args.iter().cloned());
    Ok(argv)
}

/// The program `pip install quiver-arrow` puts on PATH to start a server.
pub const SERVER_PROGRAM: &str = "quiver-server";

/// `<python> -m quiver.serve` with the Python from [`ENV_PYTHON`]; else [`SERVER_PROGRAM`] when it
/// is on PATH (an installed quiver); else `-m quiver.serve` with the nearest `.venv/bin/python`
/// at or above the current directory (a checkout), else with `python3`.
fn default_command() -> Vec<String> {
    let module = |python: String| vec![python, "-m".into(), "quiver.serve".into()];
    if let Some(python) = std::env::var_os(ENV_PYTHON) {
        return module(python.to_string_lossy().into_owned());
    }
    if let Ok(program) = which::which(SERVER_PROGRAM) {
        return vec![program.display().to_string()];
    }
    let python = nearest(".venv/bin/python")
        .map(|python| python.display().to_string())
        .unwrap_or_else(|| "python3".into());
    module(python)
}

/// `relative` under the current directory or the nearest of its ancestors that has it.
fn nearest(relative: &str) -> Option<PathBuf> {
    let here = std::env::current_dir().ok()?;
    here.ancestors()
        .map(|dir| dir.join(relative))
        .find(|path| Path::new(path).exists())
}
