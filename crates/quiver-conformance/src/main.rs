//! The conformance worker: serves `ConformanceService` over stdio (default), a Unix
//! socket (prints `UNIX:<path>`) or TCP (prints `PORT:<n>`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use quiver_rpc::serve::{serve_stdio, serve_tcp, serve_unix};
use quiver_rpc::{Server, ServerConfig};
use quiver_shm::ShmConfig;

/// vgi-rpc ConformanceService worker.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Listen on this Unix socket path instead of stdio.
    #[arg(long, conflicts_with = "tcp")]
    unix: Option<PathBuf>,
    /// Listen on this TCP address (host:port; port 0 picks one) instead of stdio.
    #[arg(long)]
    tcp: Option<String>,
    /// With --unix/--tcp: exit after this many idle seconds with no client.
    #[arg(long)]
    idle_timeout: Option<u64>,
}

fn main() {
    let args = Args::parse();
    let shm = match ShmConfig::from_env() {
        Ok(shm) => shm,
        Err(error) => {
            quiver_process::log_line!("quiver-conformance-worker: {error}");
            std::process::exit(2);
        }
    };
    let config = ServerConfig {
        shm,
        ..ServerConfig::default()
    };
    let server = Server::hosting(
        quiver_conformance::conformance_service(),
        vec![quiver_conformance::secondary_service()],
        config,
    );
    let idle = args.idle_timeout.map(Duration::from_secs);
    let result = match (&args.unix, &args.tcp) {
        (Some(path), _) => serve_unix(Arc::new(server), path, idle),
        (None, Some(address)) => serve_tcp(Arc::new(server), address, idle),
        (None, None) => serve_stdio(&server),
    };
    if let Err(error) = result {
        quiver_process::log_line!("quiver-conformance-worker: {error}");
        std::process::exit(1);
    }
}
