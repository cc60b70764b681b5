//! The real server for the tests in `server.rs`: `python -m quiver.serve` (or
//! `QUIVER_SERVER_COMMAND`) started through `ServerProcess`, listening on TCP (with a token) and a
//! Unix socket. One server is shared by the tests of a binary; tests that kill or stop a server
//! start their own.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use quiver_client::{Address, ServerOptions, ServerProcess};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A Unix socket path no other test uses.
pub fn socket_path() -> PathBuf {
    std::env::temp_dir().join(format!(
        "quiver-client-test-{}-{}.sock",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Options for a server on TCP loopback and a fresh Unix socket.
pub fn options() -> ServerOptions {
    ServerOptions {
        listen: vec![
            "tcp://127.0.0.1:0".parse().unwrap(),
            Address::Unix(socket_path()),
        ],
        ..ServerOptions::default()
    }
}

/// Starts a server of this test's own; a failure says how to get one.
pub fn spawn() -> ServerProcess {
    ServerProcess::spawn(options()).unwrap_or_else(|error| {
        panic!(
            "the quiver server did not start ({error}); build it (./quiver test runs \
             tools/setup.sh) or point QUIVER_SERVER_COMMAND at one"
        )
    })
}

/// The server the tests of this binary share.
pub fn shared() -> &'static ServerProcess {
    static SERVER: OnceLock<ServerProcess> = OnceLock::new();
    SERVER.get_or_init(spawn)
}

/// A table name no other test uses.
pub fn table(prefix: &str) -> String {
    format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
