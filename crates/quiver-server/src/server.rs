//! The running server: listeners on TCP and Unix sockets, one thread per connection, the limits,
//! and the stop; the Flight SQL front door (`flight_sql`) on a `grpc://` listener beside them.
//! Started and stopped through `ffi.rs` (`quiver_serve_start` / `_stop`).
//!
//! Stop: listeners close (Unix sockets are removed), every running statement is interrupted (its
//! caller gets `ServerStoppingError`), every session ends after its current call and closes its
//! DuckDB connection, which rolls back a transaction left open. The stop waits for the sessions at
//! most [`STOP_WAIT`].

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use quiver_process::announce::{Announcement, ServerLine};
use quiver_process::log_line;
use quiver_rpc::{Server, ServerConfig};
use quiver_server_protocol::limits::{CONNECTIONS_DEFAULT, MESSAGE_BYTES_DEFAULT};
use quiver_server_protocol::{errors, Address, PROTOCOL_NAME};
use quiver_shm::ShmConfig;
use quiver_transport::socket::UnixListener;
use quiver_transport::{Connection, TransportKind};
use quiver_wire::Limits;

use crate::admission::{AdmissionLimits, Door, Expiry, PendingPool};
use crate::auth::Token;
use crate::events::{EventLog, Field};
use crate::ffi::Ops;
use crate::flight_sql::{self, FlightSqlServer, GrpcAddress, TlsFiles};
use crate::metrics::metrics;
use crate::service::session_service;
use crate::session::{HangUpReader, Origin, Registry, Session, SocketHandle};
use crate::throttle::Throttle;

/// Longest the stop waits for open sessions to end.
pub const STOP_WAIT: Duration = Duration::from_secs(10);
/// How often accept loops look whether the server stops.
const ACCEPT_POLL: Duration = Duration::from_millis(100);
/// Most listeners one server opens.
pub const LISTENERS_MAX: usize = 16;

/// How the server is started.
pub struct ServeOptions {
    /// The token TCP and gRPC listeners require; `None`: generated (and announced).
    pub token: Option<String>,
    /// Serve TCP without a token (loopback listeners only).
    pub no_auth: bool,
    /// Most sessions at once (default `CONNECTIONS_DEFAULT`).
    pub max_connections: Option<usize>,
    /// Largest message read (default `MESSAGE_BYTES_DEFAULT`).
    pub message_bytes_max: Option<u64>,
    /// What `connect` reports as the database.
    pub database: String,
    /// What `connect` reports as DuckDB's version.
    pub duckdb_version: String,
    /// The PEM certificate file of a `grpc+tls://` listener.
    pub tls_cert: Option<String>,
    /// The PEM private key file of a `grpc+tls://` listener.
    pub tls_key: Option<String>,
    /// How long a connection may take to authenticate, and how many may wait at each door.
    pub admission: AdmissionLimits,
    /// How events are logged.
    pub events: EventLog,
    /// The address of the metrics listener (`tcp://127.0.0.1:0`); `None`: none.
    pub metrics: Option<String>,
}

/// What every session of one server shares.
pub struct Shared {
    /// DuckDB's operations.
    pub ops: Arc<Ops>,
    /// The token TCP connections must present; `None` with `no_auth`.
    pub token: Option<Token>,
    /// The open sessions.
    pub registry: Registry,
    /// Most sessions at once.
    pub max_connections: usize,
    /// What `connect` reports.
    pub database: String,
    /// What `connect` reports.
    pub duckdb_version: String,
    /// Largest message read (the spine's and the Flight SQL service's).
    pub message_bytes_max: u64,
    /// Admission before authentication.
    pub admission: AdmissionLimits,
    /// Failed authentication, per peer.
    pub throttle: Throttle,
    /// The log.
    pub events: EventLog,
    rpc_config: ServerConfig,
    stopping: AtomicBool,
}

impl Shared {
    /// Whether the server is stopping.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// A started server.
pub struct Running {
    shared: Arc<Shared>,
    accept_threads: Vec<JoinHandle<()>>,
    flight_sql: Option<FlightSqlServer>,
    metrics: Option<crate::metrics_http::MetricsServer>,
}

enum Listener {
    Tcp(std::net::TcpListener),
    Unix(UnixListener),
}

impl Listener {
    fn bind(address: &Address) -> Result<(Listener, String), String> {
        match address {
            Address::Tcp { host, port } => {
                let listener = std::net::TcpListener::bind((host.as_str(), *port))
                    .map_err(|e| format!("cannot listen on {address}: {e}"))?;
                let port = listener.local_addr().map_err(|e| e.to_string())?.port();
                Ok((
                    Listener::Tcp(listener),
                    ServerLine::Listener(Announcement::Port(port)).to_string(),
                ))
            }
            Address::Unix(path) => {
                let listener = UnixListener::bind(path)
                    .map_err(|e| format!("cannot listen on {address}: {e}"))?;
                // Only the server's user may connect: a Unix socket needs no token.
                std::fs::set_permissions(listener.path(), std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| format!("{}: {e}", listener.path().display()))?;
                let line = ServerLine::Listener(Announcement::Unix(listener.path().to_path_buf()))
                    .to_string();
                Ok((Listener::Unix(listener), line))
            }
        }
    }

    fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listener::Tcp(listener) => listener.set_nonblocking(true),
            Listener::Unix(listener) => listener.inner().set_nonblocking(true),
        }
    }

    fn raw_fd(&self) -> i32 {
        match self {
            Listener::Tcp(listener) => listener.as_raw_fd(),
            Listener::Unix(listener) => listener.inner().as_raw_fd(),
        }
    }

    /// The next client: its connection, a handle to wake its reads, its hang-up flag, and where
    /// it came from.
    fn accept(&self) -> std::io::Result<(Connection, SocketHandle, Arc<AtomicBool>, Origin)> {
        let hung_up = Arc::new(AtomicBool::new(false));
        match self {
            Listener::Tcp(listener) => {
                let (stream, peer) = listener.accept()?;
                stream.set_nonblocking(false)?;
                stream.set_nodelay(true)?;
                let handle = SocketHandle::Tcp(stream.try_clone()?);
                let reader = HangUpReader::new(stream.try_clone()?, Arc::clone(&hung_up));
                let connection = Connection::new(
                    Box::new(reader),
                    Box::new(stream),
                    TransportKind::Tcp,
                    peer.to_string(),
                );
                let origin = Origin {
                    door: Door::Tcp,
                    peer: peer.to_string(),
                    ip: Some(peer.ip()),
                };
                Ok((connection, handle, hung_up, origin))
            }
            Listener::Unix(listener) => {
                let (stream, _) = listener.inner().accept()?;
                stream.set_nonblocking(false)?;
                let handle = SocketHandle::Unix(stream.try_clone()?);
                let reader = HangUpReader::new(stream.try_clone()?, Arc::clone(&hung_up));
                let peer = format!("{} client", listener.path().display());
                let origin = Origin {
                    door: Door::Unix,
                    peer: format!("unix:{}", listener.path().display()),
                    ip: None,
                };
                let connection = Connection::new(
                    Box::new(reader),
                    Box::new(stream),
                    TransportKind::Unix,
                    peer,
                );
                Ok((connection, handle, hung_up, origin))
            }
        }
    }

    fn requires_token(&self) -> bool {
        matches!(self, Listener::Tcp(_))
    }

    fn door(&self) -> Door {
        match self {
            Listener::Tcp(_) => Door::Tcp,
            Listener::Unix(_) => Door::Unix,
        }
    }
}

/// The listen list: the spine's addresses and the Flight SQL one (at most one), one per line.
struct ListenList {
    spine: Vec<Address>,
    grpc: Option<GrpcAddress>,
}

fn parse_listen(listen: &str) -> Result<ListenList, String> {
    let lines: Vec<&str> = listen
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return Err("no address to listen on".into());
    }
    if lines.len() > LISTENERS_MAX {
        return Err(format!("at most {LISTENERS_MAX} listeners"));
    }
    let mut list = ListenList {
        spine: Vec::new(),
        grpc: None,
    };
    for line in lines {
        if !GrpcAddress::is_grpc(line) {
            list.spine.push(line.parse()?);
            continue;
        }
        let address: GrpcAddress = line.parse()?;
        if let Some(first) = &list.grpc {
            return Err(format!(
                "at most one Flight SQL listener: {first} and {address}"
            ));
        }
        list.grpc = Some(address);
    }
    Ok(list)
}

/// The TLS files, checked against the listeners: required for a `grpc+tls://` listener and
/// allowed only with one.
fn tls_files(
    grpc: Option<&GrpcAddress>,
    cert: Option<String>,
    key: Option<String>,
) -> Result<Option<TlsFiles>, String> {
    let wants_tls = grpc.is_some_and(|address| address.tls);
    match (wants_tls, cert, key) {
        (true, Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
        (true, _, _) => Err("a grpc+tls:// listener needs both tls_cert and tls_key".into()),
        (false, None, None) => Ok(None),
        (false, _, _) => Err("tls_cert and tls_key are for a grpc+tls:// listener only".into()),
    }
}

/// Binds every listener and starts serving; the announcement lines (`PORT:`, `UNIX:`,
/// `FLIGHT_SQL:`, `TOKEN:`).
pub fn start(
    ops: Ops,
    listen: &str,
    mut options: ServeOptions,
) -> Result<(Running, Vec<String>), String> {
    let ListenList {
        spine: addresses,
        grpc,
    } = parse_listen(listen)?;
    let tls = tls_files(
        grpc.as_ref(),
        options.tls_cert.take(),
        options.tls_key.take(),
    )?;
    if options.no_auth {
        refuse_remote_without_auth(&addresses, grpc.as_ref())?;
    }
    let has_tcp = grpc.is_some() || addresses.iter().any(|a| matches!(a, Address::Tcp { .. }));
    let (token, announced) = token(options.no_auth, options.token.take(), has_tcp);
    let mut listeners = Vec::new();
    let mut lines = Vec::new();
    for address in &addresses {
        let (listener, line) = Listener::bind(address)?;
        listener.set_nonblocking().map_err(|e| e.to_string())?;
        listeners.push(listener);
        lines.push(line);
    }
    let metrics_address = options.metrics.take();
    let shared = shared_state(ops, token, options);
    // Before the Flight SQL listener: a bad metrics address fails the start with nothing to undo.
    let metrics = match &metrics_address {
        Some(address) => {
            let (server, line) = crate::metrics_http::start(address)?;
            lines.push(line);
            Some(server)
        }
        None => None,
    };
    let flight_sql = match &grpc {
        Some(address) => {
            let (server, line) = flight_sql::start(&shared, address, tls.as_ref())?;
            lines.push(line);
            Some(server)
        }
        None => None,
    };
    lines.extend(announced);
    let accept_threads = listeners
        .into_iter()
        .map(|listener| {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("quiver-accept".into())
                .spawn(move || accept_until_stopped(&shared, &listener))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        Running {
            shared,
            accept_threads,
            flight_sql,
            metrics,
        },
        lines,
    ))
}

/// `no_auth` is for loopback only: refuses a TCP or gRPC listener on any other address.
fn refuse_remote_without_auth(
    addresses: &[Address],
    grpc: Option<&GrpcAddress>,
) -> Result<(), String> {
    let remote = addresses
        .iter()
        .find(|a| !a.is_local())
        .map(ToString::to_string)
        .or_else(|| grpc.filter(|a| !a.is_local()).map(ToString::to_string));
    match remote {
        Some(remote) => Err(format!(
            "no_auth is allowed only when every TCP and gRPC listener is on loopback; {remote} is not"
        )),
        None => Ok(()),
    }
}

/// The token clients must present, and the `TOKEN:` line to announce when the server made it:
/// none with `no_auth`, the one given, else a random one wherever TCP is served.
fn token(no_auth: bool, given: Option<String>, has_tcp: bool) -> (Option<Token>, Option<String>) {
    match (no_auth, given) {
        (true, _) => (None, None),
        (false, Some(token)) => (Some(Token::new(&token)), None),
        (false, None) if has_tcp => {
            let token = quiver_secret::random::token();
            let line = ServerLine::Token(token.clone()).to_string();
            (Some(Token::new(&token)), Some(line))
        }
        (false, None) => (None, None),
    }
}

/// What every session of the server shares.
fn shared_state(ops: Ops, token: Option<Token>, options: ServeOptions) -> Arc<Shared> {
    let message_bytes_max = options.message_bytes_max.unwrap_or(MESSAGE_BYTES_DEFAULT);
    let limits = Limits {
        body_bytes_max: message_bytes_max,
        ..Limits::DEFAULT
    };
    let rpc_config = ServerConfig {
        limits,
        shm: ShmConfig::from_env().unwrap_or_default(),
        server_id: format!("quiver-server-{:x}", std::process::id()),
    };
    Arc::new(Shared {
        ops: Arc::new(ops),
        token,
        registry: Registry::default(),
        max_connections: options.max_connections.unwrap_or(CONNECTIONS_DEFAULT),
        database: options.database,
        duckdb_version: options.duckdb_version,
        message_bytes_max,
        admission: options.admission,
        throttle: Throttle::default(),
        events: options.events,
        rpc_config,
        stopping: AtomicBool::new(false),
    })
}

fn wait_readable(fd: i32, timeout: Duration) {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd we own.
    let _ = unsafe { libc::poll(&mut pollfd, 1, timeout.as_millis() as i32) };
}

fn accept_until_stopped(shared: &Arc<Shared>, listener: &Listener) {
    let door = listener.door();
    let pending = PendingPool::new(shared.admission);
    let waiting = metrics().unauthenticated_at(door.as_str());
    while !shared.is_stopping() {
        wait_readable(listener.raw_fd(), ACCEPT_POLL);
        let closed = pending.sweep(Instant::now());
        log_closed_unauthenticated(shared, door, &closed);
        match listener.accept() {
            Ok((connection, socket, hung_up, origin)) => {
                let session = spawn_session(
                    shared,
                    connection,
                    socket,
                    hung_up,
                    listener.requires_token(),
                    origin,
                );
                if let Some(session) = session {
                    let closed = pending.admit(session, Instant::now());
                    log_closed_unauthenticated(shared, door, &closed);
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(error) => {
                log_line!("quiver server: accept failed: {error}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        waiting.set(pending.len() as i64);
    }
    waiting.set(0);
}

/// Counts (and, past the deadline, logs) connections closed before they authenticated.
pub(crate) fn log_closed_unauthenticated(shared: &Shared, door: Door, closed: &[(Expiry, String)]) {
    for (expiry, peer) in closed {
        metrics().unauthenticated_closed(door.as_str(), expiry.as_str());
        // Evictions come as fast as a flood connects: counted, not logged one by one.
        if *expiry == Expiry::Deadline {
            shared.events.emit(
                "connection_closed",
                &[
                    ("door", Field::Text(door.as_str())),
                    ("peer", Field::Text(peer)),
                    ("reason", Field::Text(expiry.as_str())),
                ],
            );
        }
    }
}

/// Starts a connection's session on a thread of its own; the session, to wait in its door's
/// pool until it authenticates.
fn spawn_session(
    shared: &Arc<Shared>,
    connection: Connection,
    socket: SocketHandle,
    hung_up: Arc<AtomicBool>,
    token_required: bool,
    origin: Origin,
) -> Option<Arc<Session>> {
    let session = Arc::new(Session::new(
        Arc::clone(shared),
        Some(socket),
        hung_up,
        token_required && shared.token.is_some(),
        origin,
    ));
    let number = shared.registry.add(Arc::clone(&session));
    let config = shared.rpc_config.clone();
    let pending = Arc::clone(&session);
    let spawned = std::thread::Builder::new()
        .name("quiver-session".into())
        .spawn(move || {
            let admitted = Arc::clone(&session);
            let guarded = Arc::clone(&session);
            // quiver.server's methods answer for themselves (`connect` first); every other protocol
            // the spine hosts beside it (reflection) is for connected sessions only. Until
            // `connect` succeeds the framework tells a peer nothing but "authentication failed".
            let server = Server::new(session_service(Arc::clone(&session)), config)
                .with_admission(move |protocol, _method| {
                    (protocol != PROTOCOL_NAME && (admitted.is_hung_up() || !admitted.is_open()))
                        .then(errors::unauthenticated)
                })
                .with_guard(move || (!guarded.is_open()).then(errors::unauthenticated));
            let peer = connection.peer.clone();
            if let quiver_rpc::SessionEnd::Failed(error) = server.serve(connection) {
                log_line!("quiver server: connection {peer} ended: {error}");
            }
            drop(server);
            session.close();
            session.shared.registry.remove(number);
        });
    match spawned {
        Ok(_) => Some(pending),
        Err(error) => {
            log_line!("quiver server: cannot start a session thread: {error}");
            shared.registry.remove(number);
            None
        }
    }
}

impl Running {
    /// Stops the server (see the module's documentation).
    pub fn stop(self) {
        let shared = self.shared;
        shared.stopping.store(true, Ordering::SeqCst);
        for thread in self.accept_threads {
            let _ = thread.join();
        }
        let mut flight_sql = self.flight_sql;
        if let Some(flight_sql) = flight_sql.as_mut() {
            flight_sql.begin_stop();
        }
        let deadline = Instant::now() + STOP_WAIT;
        while !shared.registry.is_empty() {
            // Again each round: a statement may have started after the previous interrupt.
            shared.registry.stop_all();
            if Instant::now() >= deadline {
                log_line!(
                    "quiver server: stopping with {} session(s) still open after {STOP_WAIT:?}",
                    shared.registry.len()
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(flight_sql) = flight_sql {
            flight_sql.finish_stop();
        }
        if let Some(metrics) = self.metrics {
            metrics.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_lines_parse_and_are_bounded() {
        let list =
            parse_listen("tcp://127.0.0.1:0\n unix:///tmp/x.sock \n\ngrpc://127.0.0.1:0").unwrap();
        assert_eq!(list.spine.len(), 2);
        assert_eq!(list.grpc.unwrap().port, 0);
        let two = parse_listen("grpc://127.0.0.1:0\ngrpc+tls://127.0.0.1:0");
        assert!(two
            .err()
            .unwrap()
            .contains("at most one Flight SQL listener"));
        assert!(parse_listen("").is_err());
        assert!(parse_listen("http://x").is_err());
        let many = vec!["tcp://127.0.0.1:0"; LISTENERS_MAX + 1].join("\n");
        assert!(parse_listen(&many).err().unwrap().contains("at most"));
    }

    #[test]
    fn tls_files_go_with_a_tls_listener_only() {
        let tls: GrpcAddress = "grpc+tls://127.0.0.1:0".parse().unwrap();
        let plain: GrpcAddress = "grpc://127.0.0.1:0".parse().unwrap();
        let some = |s: &str| Some(s.to_string());
        assert!(tls_files(Some(&tls), some("c"), some("k"))
            .unwrap()
            .is_some());
        assert!(tls_files(Some(&tls), some("c"), None).is_err());
        assert!(tls_files(Some(&plain), some("c"), some("k")).is_err());
        assert!(tls_files(None, None, some("k")).is_err());
        assert!(tls_files(Some(&plain), None, None).unwrap().is_none());
    }
}
