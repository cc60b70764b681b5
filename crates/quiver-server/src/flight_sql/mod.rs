//! The Flight SQL front door: the Arrow ecosystem's standard database protocol (Flight SQL over
//! gRPC, what ADBC's and JDBC's Flight SQL drivers speak) on the same DuckDB, sessions, registry,
//! token, limits and stop as the spine's `quiver.server`.
//!
//! This file starts and stops it: a tokio runtime of its own ([`WORKER_THREADS`] threads named
//! `quiver-flight`, DuckDB's work on its bounded blocking pool), tonic's server with the service
//! behind the credentials check (`auth.rs`), optional TLS from PEM files, and a reaper of idle
//! transactions and prepared statements. The commands live beside it (`statements.rs`,
//! `prepared.rs`, `transactions.rs`, `ingest.rs`, `catalog.rs`, `sql_info.rs`, `type_info.rs`,
//! `cancel.rs` over `running.rs`, the result types a client reads in `result_types.rs`), dispatched from `service.rs`; a call's session is `lease.rs`'s
//! (which ends a result left open when the next statement comes), and `connections.rs` ends a
//! client's transactions when its connection closes.

mod address;
mod auth;
mod call_guards;
mod cancel;
mod catalog;
mod connections;
mod data_body;
mod do_get;
mod ingest;
mod lease;
mod prepared;
mod result_types;
mod running;
mod service;
mod sql_info;
mod statements;
mod status;
mod transactions;
mod type_info;
mod union_parameters;

pub use address::GrpcAddress;

use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_process::announce::ServerLine;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::server::Shared;
use auth::Gate;
use connections::Connections;
use prepared::PreparedStatements;
use service::FlightSql;
use transactions::{Transactions, REAP_INTERVAL};

/// Threads serving gRPC (the statements run on the blocking pool, not on these).
pub const WORKER_THREADS: usize = 2;
/// HTTP/2 flow-control windows: large enough that a scan is not bound by the window round trip.
const STREAM_WINDOW_BYTES: u32 = 8 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 32 << 20;
/// How often connections that did not authenticate in time are looked for.
const SWEEP_INTERVAL: Duration = Duration::from_millis(100);
/// How long the stop waits for gRPC connections to end after sessions have.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The certificate and key a `grpc+tls://` listener presents (PEM).
pub struct TlsFiles {
    /// The certificate chain file.
    pub cert: String,
    /// The private key file.
    pub key: String,
}

impl TlsFiles {
    fn identity(&self) -> Result<Identity, String> {
        let read = |what: &str, path: &str| {
            std::fs::read(path).map_err(|e| format!("cannot read the TLS {what} {path}: {e}"))
        };
        Ok(Identity::from_pem(
            read("certificate", &self.cert)?,
            read("key", &self.key)?,
        ))
    }
}

/// The running Flight SQL service.
pub struct FlightSqlServer {
    runtime: Runtime,
    shutdown: Option<oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<Result<(), tonic::transport::Error>>>,
    transactions: Arc<Transactions>,
}

/// Binds `address` and starts serving; the announcement line (`FLIGHT_SQL:<uri>`).
pub fn start(
    shared: &Arc<Shared>,
    address: &GrpcAddress,
    tls: Option<&TlsFiles>,
) -> Result<(FlightSqlServer, String), String> {
    assert_eq!(address.tls, tls.is_some(), "TLS files go with grpc+tls://");
    let listener = std::net::TcpListener::bind((address.host.as_str(), address.port))
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("quiver-flight")
        // Each session runs at most one blocking task at a time, plus short ones opening calls.
        .max_blocking_threads(2 * shared.max_connections + 16)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the Flight SQL runtime: {e}"))?;
    let transactions = Arc::new(Transactions::default());
    let prepared = Arc::new(PreparedStatements::default());
    let message_bytes_max = usize::try_from(shared.message_bytes_max).unwrap_or(usize::MAX);
    let connections = Arc::new(Connections::new(shared));
    let service = do_get::Routed::new(
        FlightSql::new(
            Arc::clone(shared),
            Arc::clone(&transactions),
            Arc::clone(&prepared),
        ),
        Gate::new(Arc::clone(shared), Arc::clone(&connections)),
        message_bytes_max,
    );
    let mut builder = Server::builder()
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES);
    if let Some(tls) = tls {
        builder = builder
            .tls_config(ServerTlsConfig::new().identity(tls.identity()?))
            .map_err(|e| format!("TLS certificate or key: {e}"))?;
    }
    let (shutdown, stopped) = oneshot::channel::<()>();
    let serving = {
        let _context = runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let incoming = connections::watched(
            incoming,
            Arc::clone(&transactions),
            Arc::clone(&connections),
        );
        let router = builder.add_service(service);
        runtime.spawn(router.serve_with_incoming_shutdown(incoming, async {
            let _ = stopped.await;
        }))
    };
    runtime.spawn(async move {
        let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            ticks.tick().await;
            connections.sweep();
        }
    });
    let reaped = Arc::clone(&transactions);
    runtime.spawn(async move {
        let mut ticks = tokio::time::interval(REAP_INTERVAL);
        loop {
            ticks.tick().await;
            prepared.expire_idle(Instant::now());
            let transactions = Arc::clone(&reaped);
            // Closing a session waits for DuckDB's rollback: not on a gRPC worker.
            let _ = tokio::task::spawn_blocking(move || transactions.reap(Instant::now())).await;
        }
    });
    let line = ServerLine::FlightSql(address.uri(port)).to_string();
    Ok((
        FlightSqlServer {
            runtime,
            shutdown: Some(shutdown),
            serving: Some(serving),
            transactions,
        },
        line,
    ))
}

impl FlightSqlServer {
    /// The first half of the stop: no new gRPC connections or calls, open transactions rolled
    /// back. Running calls end as the server's stop interrupts their sessions.
    pub fn begin_stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.transactions.clear();
    }

    /// The second half: waits (bounded) for the gRPC server to end, then drops the runtime.
    pub fn finish_stop(mut self) {
        if let Some(serving) = self.serving.take() {
            let ended = self
                .runtime
                .block_on(async { tokio::time::timeout(SHUTDOWN_WAIT, serving).await });
            if ended.is_err() {
                quiver_process::log_line!(
                    "quiver server: Flight SQL connections still open after {SHUTDOWN_WAIT:?}"
                );
            }
        }
        self.runtime.shutdown_timeout(SHUTDOWN_WAIT);
    }
}
