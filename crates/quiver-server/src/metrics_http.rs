//! The metrics listener: `GET /metrics` (Prometheus' text exposition of `metrics.rs`) on an
//! address of its own, apart from the doors clients use, announced as `METRICS:<url>`. It serves
//! numbers only, no data and no credentials; it listens on loopback unless told otherwise.

use std::time::Duration;

use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use quiver_process::announce::ServerLine;
use quiver_server_protocol::Address;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::metrics::metrics;

/// What Prometheus expects of a text exposition.
const CONTENT_TYPE_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// How long the stop waits for a scrape in progress.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// The running metrics listener.
pub struct MetricsServer {
    runtime: Runtime,
    shutdown: oneshot::Sender<()>,
}

/// Binds `address` (`tcp://HOST:PORT`) and serves; the announcement line.
pub fn start(address: &str) -> Result<(MetricsServer, String), String> {
    let parsed: Address = address
        .parse()
        .map_err(|e| format!("metrics address {address}: {e}"))?;
    let Address::Tcp { host, port } = parsed else {
        return Err(format!(
            "metrics address {address}: expected tcp://HOST:PORT"
        ));
    };
    let listener = std::net::TcpListener::bind((host.as_str(), port))
        .map_err(|e| format!("cannot listen on {address} for metrics: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("quiver-metrics")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the metrics runtime: {e}"))?;
    let router = Router::new().route(
        "/metrics",
        get(|| async { ([(CONTENT_TYPE, CONTENT_TYPE_TEXT)], metrics().encode()) }),
    );
    let (shutdown, stopped) = oneshot::channel::<()>();
    {
        let _context = runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        runtime.spawn(async move {
            let serving = axum::serve(listener, router).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serving.await {
                quiver_process::log_line!("quiver server: the metrics listener failed: {error}");
            }
        });
    }
    let line = ServerLine::Metrics(format!("http://{bound}/metrics")).to_string();
    Ok((MetricsServer { runtime, shutdown }, line))
}

impl MetricsServer {
    /// Stops serving.
    pub fn stop(self) {
        let _ = self.shutdown.send(());
        self.runtime.shutdown_timeout(SHUTDOWN_WAIT);
    }
}
