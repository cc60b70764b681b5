//! The gateway's quiver server: spawned by default (its database file and Unix socket in the state
//! directory, stopped with the gateway: `ServerProcess` holds the child's stdin, the dead-man
//! switch), or reached by address. Requests borrow connections from one shared-memory pool;
//! materialize opens connections of its own so a long `CREATE TABLE` never holds a request's slot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quiver_client::{Address, ConnectOptions, Connection, Pool, ServerOptions, ServerProcess, Shm};

/// The shared-memory segment of each pooled connection: a response is at most `max_limit` rows,
/// far below this, and a pool of a few connections stays cheap.
pub const SHM_BYTES_PER_CONNECTION: u64 = 64 << 20;
/// The server's console script, looked for beside the gateway's own binary.
const INSTALLED_SERVER: &str = "quiver-server";
/// The file name of the spawned server's database inside the state directory.
pub const DATABASE_FILE: &str = "gateway.duckdb";
/// `sun_path` holds 108 bytes with its terminating NUL; a socket path longer than this goes to
/// the temporary directory instead of the state directory.
const SOCKET_PATH_BYTES_MAX: usize = 100;

static SOCKETS_MADE: AtomicU64 = AtomicU64::new(0);

/// Why the backend could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("{0}")]
    Start(String),
    #[error(transparent)]
    Client(#[from] quiver_client::Error),
}

pub type Result<T> = std::result::Result<T, BackendError>;

/// How to reach or start the server.
#[derive(Clone, Debug)]
pub struct BackendOptions {
    /// A running server and its token; `None`: spawn one.
    pub server: Option<(Address, Option<String>)>,
    /// Where a spawned server keeps its database file (and its socket, when the path is short).
    pub state_dir: PathBuf,
    /// Connections requests share, and how long one waits for a free one.
    pub pool_size: usize,
    pub pool_wait: Duration,
    /// A spawned server's `--threads` and `--memory-limit`.
    pub threads: Option<usize>,
    pub memory_limit: Option<String>,
}

/// A server the gateway talks to, and the pool requests use.
pub struct Backend {
    /// The spawned server; `None` when reached by address, or once stopped.
    process: Mutex<Option<ServerProcess>>,
    pid: Option<u32>,
    address: Address,
    /// Options of materialize's own connections (no shared memory: they move no rows).
    direct: ConnectOptions,
    pool: Arc<Pool>,
}

impl Backend {
    /// Spawns a server (or checks the given one answers), then builds the pool.
    pub fn start(options: BackendOptions) -> Result<Backend> {
        let (process, address, token) = match options.server.clone() {
            Some((address, token)) => (None, address, token),
            None => {
                let process = spawn(&options)?;
                let address = process
                    .unix_address()
                    .cloned()
                    .expect("the server was asked for a Unix socket and announced it");
                let token = process.token().map(str::to_string);
                (Some(process), address, token)
            }
        };
        let pid = process.as_ref().map(ServerProcess::pid);
        let direct = ConnectOptions {
            token,
            client_name: Some("quiver-gateway".into()),
            ..ConnectOptions::default()
        }
        .shm(Shm::Off);
        // Shared memory needs a Unix socket: a TCP server may be on another machine.
        let pooled = match &address {
            Address::Unix(_) => direct.clone().shm(Shm::Bytes(SHM_BYTES_PER_CONNECTION)),
            Address::Tcp { .. } => direct.clone(),
        };
        let pool = Pool::new(
            address.clone(),
            pooled,
            options.pool_size,
            options.pool_wait,
        )?;
        let backend = Backend {
            process: Mutex::new(process),
            pid,
            address,
            direct,
            pool: Arc::new(pool),
        };
        // One round trip now, so a wrong address or token fails the start, not the first request.
        let mut probe = backend.connection().map_err(|error| {
            backend.explain(format!("the quiver server does not answer: {error}"))
        })?;
        probe.query_scalar_i64("SELECT 1").map_err(|error| {
            backend.explain(format!("the quiver server does not answer: {error}"))
        })?;
        Ok(backend)
    }

    /// The pool requests borrow connections from.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// A connection of its own (materialize, status checks): not the pool's.
    pub fn connection(&self) -> Result<Connection> {
        Ok(Connection::connect_with(&self.address, &self.direct)?)
    }

    /// Where the server listens.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The spawned server's process id (`None` when reached by address).
    pub fn server_pid(&self) -> Option<u32> {
        self.pid
    }

    /// The spawned server's last stderr lines, for error reports (empty when reached by address).
    pub fn server_stderr_tail(&self) -> String {
        let process = self.process.lock().expect("backend lock");
        process
            .as_ref()
            .map(ServerProcess::stderr_tail)
            .unwrap_or_default()
    }

    /// Stops a spawned server (SIGTERM, a grace, then SIGKILL); a server reached by address is
    /// left running. Idempotent.
    pub fn stop(&self) {
        let process = self.process.lock().expect("backend lock").take();
        if let Some(process) = process {
            process.stop();
        }
    }

    fn explain(&self, what: String) -> BackendError {
        match self.pid {
            Some(pid) => BackendError::Start(format!(
                "{what} (server pid {pid}; its stderr: {})",
                self.server_stderr_tail()
            )),
            None => BackendError::Start(format!("{what} (server at {})", self.address)),
        }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("address", &self.address)
            .field("pid", &self.pid)
            .finish()
    }
}

fn spawn(options: &BackendOptions) -> Result<ServerProcess> {
    std::fs::create_dir_all(&options.state_dir).map_err(|error| {
        BackendError::Start(format!(
            "cannot create the state directory {}: {error}",
            options.state_dir.display()
        ))
    })?;
    let state_dir = std::fs::canonicalize(&options.state_dir).map_err(|error| {
        BackendError::Start(format!("{}: {error}", options.state_dir.display()))
    })?;
    let socket = socket_path(&state_dir);
    remove_stale_socket(&socket)?;
    let server_options = ServerOptions {
        command: installed_server(),
        database: Some(state_dir.join(DATABASE_FILE)),
        listen: vec![Address::Unix(socket)],
        threads: options.threads,
        memory_limit: options.memory_limit.clone(),
        ..ServerOptions::default()
    };
    ServerProcess::spawn(server_options)
        .map_err(|error| BackendError::Start(format!("the quiver server did not start: {error}")))
}

/// The `quiver-server` command installed beside this binary (a Python package's scripts directory
/// holds both: the platform wheel's `quiver-gateway` and the `quiver-server` console script, whose
/// interpreter has the `quiver` package), unless the environment names the server's command or
/// Python. `None`: `ServerOptions`' default (a source checkout's `.venv`, else `python3`).
fn installed_server() -> Option<Vec<String>> {
    let named = |variable: &str| std::env::var_os(variable).is_some_and(|value| !value.is_empty());
    if named(quiver_client::process::ENV_COMMAND) || named(quiver_client::process::ENV_PYTHON) {
        return None;
    }
    let beside = std::env::current_exe()
        .ok()?
        .parent()?
        .join(INSTALLED_SERVER);
    beside.is_file().then(|| vec![beside.display().to_string()])
}

/// `<state>/server.sock`, or a unique name in the temporary directory when that path would not
/// fit in `sun_path`.
fn socket_path(state_dir: &Path) -> PathBuf {
    let inside = state_dir.join("server.sock");
    if inside.as_os_str().len() <= SOCKET_PATH_BYTES_MAX {
        return inside;
    }
    std::env::temp_dir().join(format!(
        "quiver-gateway-{}-{}.sock",
        std::process::id(),
        SOCKETS_MADE.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A socket file left by a gateway that was killed: the server could not bind over it.
fn remove_stale_socket(socket: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(socket).map_err(|error| {
            BackendError::Start(format!(
                "cannot remove the stale socket {}: {error}",
                socket.display()
            ))
        }),
        Ok(_) => Err(BackendError::Start(format!(
            "{} exists and is not a socket",
            socket.display()
        ))),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_state_dirs_put_the_socket_in_the_temporary_directory() {
        let short = socket_path(Path::new("/tmp/state"));
        assert_eq!(short, PathBuf::from("/tmp/state/server.sock"));
        let deep = PathBuf::from(format!("/tmp/{}", "d".repeat(120)));
        let fallback = socket_path(&deep);
        assert!(fallback.starts_with(std::env::temp_dir()));
        assert!(fallback.as_os_str().len() <= SOCKET_PATH_BYTES_MAX);
    }
}
