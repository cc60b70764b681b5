//! Running a server: over stdio, or a Unix/TCP listener with one thread per
//! connection, as worker processes are launched.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quiver_process::{announce, log_line, Announcement};
use quiver_transport::socket::{TcpListener, UnixListener};
use quiver_transport::{stdio_connection, Connection};

use crate::server::{Server, SessionEnd};

/// Most connections served at once; further clients wait in the accept backlog.
pub const CONNECTIONS_MAX: usize = 256;

/// Serves the process's stdin/stdout until the client closes stdin.
pub fn serve_stdio(server: &Server) -> std::io::Result<()> {
    let connection = stdio_connection()?;
    report_end(server.serve(connection), "stdio");
    Ok(())
}

/// Binds `path`, prints `UNIX:<absolute path>` on stdout, and serves every client
/// on its own thread. With `idle_timeout`, exits once no client has been
/// connected for that long.
pub fn serve_unix(
    server: Arc<Server>,
    path: &Path,
    idle_timeout: Option<Duration>,
) -> std::io::Result<()> {
    let listener = UnixListener::bind(path)?;
    announce(&Announcement::Unix(listener.path().to_path_buf()))?;
    let activity = Activity::new(idle_timeout);
    activity.watch(listener.path().to_path_buf());
    loop {
        match listener.accept() {
            Ok(connection) => spawn_session(&server, connection, &activity),
            Err(error) => backoff_after_accept_error(&error),
        }
    }
}

/// Binds `address`, prints `PORT:<port>` on stdout, and serves every client on
/// its own thread.
pub fn serve_tcp(
    server: Arc<Server>,
    address: &str,
    idle_timeout: Option<Duration>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(address)?;
    announce(&Announcement::Port(listener.port()?))?;
    let activity = Activity::new(idle_timeout);
    activity.watch(std::path::PathBuf::new());
    loop {
        match listener.accept() {
            Ok(connection) => spawn_session(&server, connection, &activity),
            Err(error) => backoff_after_accept_error(&error),
        }
    }
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
