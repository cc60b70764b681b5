//! Running a server: over stdio, or a Unix/TCP listener with one thread per
//! connection, as worker processes are launched.
//!
//! A listening server stops gracefully on `SIGTERM` (see `quiver_process::stop`): it
//! stops accepting, removes its socket, gives open sessions up to [`STOP_GRACE`] to end
//! (a session whose client already closed ends at once and logs its end, e.g. the
//! shared-memory summary that `VGI_RPC_SHM_DEBUG=1` promises), and returns `Ok(())`
//! for the caller to exit 0. Busy sessions do not hold the process past the bound.

use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quiver_process::{announce, log_line, Announcement, StopSignal, EXIT_GRACE};
use quiver_transport::socket::{TcpListener, UnixListener};
use quiver_transport::{stdio_connection, Connection};

use crate::http::HttpConfig;
use crate::server::{Server, SessionEnd};

pub use crate::http::serve_http;

/// An HTTP server's settings from a worker's flags and the environment: the shared token key
/// (`QUIVER_HTTP_TOKEN_KEY`) and the bearer token (`QUIVER_HTTP_TOKEN`) come from the
/// environment, so they never show in a process listing.
pub fn http_config(
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    max_response_bytes: Option<u64>,
) -> std::io::Result<HttpConfig> {
    let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, message);
    let mut config = HttpConfig::from_env().map_err(invalid)?;
    config.tls = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => {
            return Err(invalid(
                "--http-tls-cert and --http-tls-key go together".into(),
            ))
        }
    };
    if let Some(max) = max_response_bytes {
        if max < crate::http::RESPONSE_BYTES_MIN {
            return Err(invalid(format!(
                "--http-max-response-bytes must be at least {}",
                crate::http::RESPONSE_BYTES_MIN
            )));
        }
        config.max_response_bytes = Some(max);
    }
    Ok(config)
}

/// Most connections served at once; further clients wait in the accept backlog.
pub const CONNECTIONS_MAX: usize = 256;

/// Longest a stopping server waits for its open sessions. Shorter than the grace an
/// engine gives a worker between `SIGTERM` and `SIGKILL`, so a stop ends by our exit.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

const _: () = assert!(STOP_GRACE.as_millis() < EXIT_GRACE.as_millis());

/// How often a stopping server looks whether its sessions have ended.
const STOP_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// Serves the process's stdin/stdout until the client closes stdin.
pub fn serve_stdio(server: &Server) -> std::io::Result<()> {
    let connection = stdio_connection()?;
    report_end(server.serve(connection), "stdio");
    Ok(())
}

/// Binds `path`, prints `UNIX:<absolute path>` on stdout, and serves every client
/// on its own thread until `SIGTERM`. With `idle_timeout`, exits once no client has
/// been connected for that long.
pub fn serve_unix(
    server: Arc<Server>,
    path: &Path,
    idle_timeout: Option<Duration>,
) -> std::io::Result<()> {
    let stop = StopSignal::install()?;
    let listener = UnixListener::bind(path)?;
    listener.inner().set_nonblocking(true)?;
    announce(&Announcement::Unix(listener.path().to_path_buf()))?;
    let activity = Activity::new(idle_timeout);
    activity.watch(listener.path().to_path_buf());
    accept_until_stopped(listener.inner().as_raw_fd(), stop, || {
        listener
            .accept()
            .map(|connection| spawn_session(&server, connection, &activity))
    });
    // Dropping the listener removes the socket: no new client can reach us.
    drop(listener);
    activity.wait_for_sessions(STOP_GRACE);
    Ok(())
}

/// Binds `address`, prints `PORT:<port>` on stdout, and serves every client on
/// its own thread until `SIGTERM`.
pub fn serve_tcp(
    server: Arc<Server>,
    address: &str,
    idle_timeout: Option<Duration>,
) -> std::io::Result<()> {
    let stop = StopSignal::install()?;
    let listener = TcpListener::bind(address)?;
    listener.inner().set_nonblocking(true)?;
    announce(&Announcement::Port(listener.port()?))?;
    let activity = Activity::new(idle_timeout);
    activity.watch(std::path::PathBuf::new());
    accept_until_stopped(listener.inner().as_raw_fd(), stop, || {
        listener
            .accept()
            .map(|connection| spawn_session(&server, connection, &activity))
    });
    drop(listener);
    activity.wait_for_sessions(STOP_GRACE);
    Ok(())
}

/// Accepts clients on the non-blocking `listener_fd` (through `accept_one`) until a stop
/// is requested; without `stop` (the host handles `SIGTERM`), forever.
///
/// Accepted sockets do not inherit the listener's `O_NONBLOCK` on Linux, so sessions
/// still read and write blocking.
fn accept_until_stopped(
    listener_fd: RawFd,
    stop: Option<StopSignal>,
    mut accept_one: impl FnMut() -> std::io::Result<()>,
) {
    loop {
        if stop.is_some_and(|stop| stop.requested()) {
            return;
        }
        wait_readable(listener_fd, stop);
        match accept_one() {
            Ok(()) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(error) => backoff_after_accept_error(&error),
        }
    }
}

/// Blocks until a client is waiting on `listener_fd` or `stop` is requested (or a
/// signal interrupts the wait); the caller looks which.
fn wait_readable(listener_fd: RawFd, stop: Option<StopSignal>) {
    let mut fds = [
        libc::pollfd {
            fd: listener_fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.map_or(-1, |stop| stop.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: poll reads and writes the two pollfds we own; a negative fd is ignored.
    let _ = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
}

/// A failed accept (out of descriptors, an aborted handshake) must not end a
/// worker that other clients are using: log it, pause briefly, keep listening.
fn backoff_after_accept_error(error: &std::io::Error) {
    log_line!("quiver: accept failed: {error}");
    std::thread::sleep(Duration::from_millis(10));
}

fn spawn_session(server: &Arc<Server>, connection: Connection, activity: &Activity) {
    if activity.active.load(Ordering::SeqCst) >= CONNECTIONS_MAX {
        log_line!(
            "quiver: refusing {}: {CONNECTIONS_MAX} connections already open",
            connection.peer
        );
        return;
    }
    let server = Arc::clone(server);
    let activity = activity.clone();
    activity.enter();
    std::thread::spawn(move || {
        let peer = connection.peer.clone();
        report_end(server.serve(connection), &peer);
        activity.leave();
    });
}

fn report_end(end: SessionEnd, peer: &str) {
    if let SessionEnd::Failed(error) = end {
        log_line!("quiver: connection {peer} ended: {error}");
    }
}

/// Counts open connections and exits the process after an idle period.
#[derive(Clone)]
struct Activity {
    active: Arc<AtomicUsize>,
    last_change: Arc<Mutex<Instant>>,
    idle_timeout: Option<Duration>,
}

impl Activity {
    fn new(idle_timeout: Option<Duration>) -> Self {
        Self {
            active: Arc::new(AtomicUsize::new(0)),
            last_change: Arc::new(Mutex::new(Instant::now())),
            idle_timeout,
        }
    }

    fn enter(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
        *self.last_change.lock().expect("activity lock") = Instant::now();
    }

    fn leave(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        *self.last_change.lock().expect("activity lock") = Instant::now();
    }

    /// Waits until no session is open, at most `grace`; logs the sessions it gives up on.
    fn wait_for_sessions(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        loop {
            let open = self.active.load(Ordering::SeqCst);
            if open == 0 {
                return;
            }
            if Instant::now() >= deadline {
                log_line!("quiver: stopping with {open} session(s) still open after {grace:?}");
                return;
            }
            std::thread::sleep(STOP_POLL_INTERVAL);
        }
    }

    /// Starts the idle watchdog; on timeout removes `socket_path` and exits 0.
    fn watch(&self, socket_path: std::path::PathBuf) {
        let Some(timeout) = self.idle_timeout else {
            return;
        };
        let activity = self.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100).min(timeout));
            let idle = activity.active.load(Ordering::SeqCst) == 0
                && activity
                    .last_change
                    .lock()
                    .expect("activity lock")
                    .elapsed()
                    >= timeout;
            if idle {
                if !socket_path.as_os_str().is_empty() {
                    let _ = std::fs::remove_file(&socket_path);
                }
                log_line!("quiver: idle for {timeout:?}, exiting");
                std::process::exit(0);
            }
        });
    }
}
