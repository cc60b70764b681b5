//! The conformance worker: serves `ConformanceService` over stdio (default), a Unix
//! socket (prints `UNIX:<path>`), TCP (prints `PORT:<n>`) or vgi-rpc's HTTP transport (`--http`,
//! prints `PORT:<n>`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use quiver_rpc::serve::{http_config, serve_http, serve_stdio, serve_tcp, serve_unix};
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
    /// Serve vgi-rpc's HTTP transport on this address (default 127.0.0.1:0; prints PORT:<n>).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0",
          conflicts_with_all = ["unix", "tcp"])]
    http: Option<String>,
    /// With --http: serve HTTPS with this PEM certificate chain.
    #[arg(long, value_name = "PEM", requires = "http")]
    http_tls_cert: Option<PathBuf>,
    /// With --http: the PEM private key of --http-tls-cert.
    #[arg(long, value_name = "PEM", requires = "http")]
    http_tls_key: Option<PathBuf>,
    /// With --http: cap every response at this many bytes (at least 65536).
    #[arg(long, value_name = "BYTES", requires = "http")]
    http_max_response_bytes: Option<u64>,
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
    if let Some(address) = &args.http {
        let served = http_config(
            args.http_tls_cert.clone(),
            args.http_tls_key.clone(),
            args.http_max_response_bytes,
        )
        .and_then(|config| serve_http(Arc::new(server), address, config));
        if let Err(error) = served {
            quiver_process::log_line!("quiver-conformance-worker: {error}");
            std::process::exit(1);
        }
        return;
    }
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
