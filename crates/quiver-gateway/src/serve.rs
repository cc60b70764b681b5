//! `quiver-gateway serve`: load the project, start the gateway (its server, its snapshots), open
//! the public and admin ports, announce them on stdout, and serve until SIGTERM, SIGINT or (with
//! `--watch-stdin`) the end of stdin; then stop accepting, let in-flight requests finish within a
//! bounded grace, stop the spawned server and exit.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::bucket_project::{self, ProjectSource};
use crate::gateway::{Gateway, GatewayOptions};
use crate::http::connections::{self, ConnectionLimits};
use crate::project_sync::{ProjectSync, SYNC_INTERVAL_ENV};
use crate::{admin, http, project, project_sync};

/// How long in-flight requests may take to finish once a stop is asked.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// What `quiver gateway serve` was asked for: the project, the ports, the server, the overrides.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The project: a directory, or an `s3://`/`gs://` prefix.
    pub project_dir: PathBuf,
    /// The public port's address.
    pub listen: SocketAddr,
    /// The admin port's address.
    pub admin_listen: SocketAddr,
    /// A server's address (`unix:///…`, `tcp://…`); `None`: spawn one.
    pub server: Option<String>,
    /// The variable holding the server's token.
    pub server_token_env: Option<String>,
    /// A spawned server's DuckDB `threads` (DuckDB's default when `None`).
    pub server_threads: Option<usize>,
    /// A spawned server's DuckDB `memory_limit` (DuckDB's default when `None`).
    pub server_memory_limit: Option<String>,
    /// The variable holding the admin port's bearer token.
    pub admin_token_env: Option<String>,
    /// Where the database, parts, sidecar and a bucket project's copy are kept; `None`: the
    /// project directory's `.quiver-gateway` (the working directory's for a bucket project).
    pub state_dir: Option<PathBuf>,
    /// Stop (gracefully) when standard input closes, so a parent's exit stops the gateway.
    pub watch_stdin: bool,
    /// `--cors-origins`: wins over OFFLOADER_CORS_ORIGINS, which wins over the project's setting.
    pub cors_origins: Option<String>,
    /// `--config-sync-interval` in seconds: wins over OFFLOADER_CONFIG_SYNC_INTERVAL; `None` and
    /// `0` are off.
    pub config_sync_interval: Option<u64>,
}

/// The variable offloader reads its admin token from; honoured here unless --admin-token-env
/// names another.
pub const ADMIN_TOKEN_ENV: &str = "OFFLOADER_ADMIN_TOKEN";

/// The variable offloader reads its CORS origins from; honoured here too.
pub const CORS_ORIGINS_ENV: &str = "OFFLOADER_CORS_ORIGINS";

/// Serves until asked to stop. `Err`: why it could not start.
pub fn run(options: ServeOptions) -> Result<(), String> {
    let admin_token = match &options.admin_token_env {
        Some(variable) => Some(
            std::env::var(variable)
                .map_err(|_| format!("--admin-token-env names {variable}, which is not set"))?,
        ),
        // offloader's variable, when no other is named.
        None => std::env::var(ADMIN_TOKEN_ENV)
            .ok()
            .filter(|token| !token.is_empty()),
    };
    if !options.admin_listen.ip().is_loopback() && admin_token.is_none() {
        return Err(
            "a non-loopback --admin-listen needs --admin-token-env (the admin port can refresh and roll back)"
                .into(),
        );
    }
    let server = match &options.server {
        Some(address) => {
            let token = match &options.server_token_env {
                Some(variable) => Some(std::env::var(variable).map_err(|_| {
                    format!("--server-token-env names {variable}, which is not set")
                })?),
                None => None,
            };
            Some((address.clone(), token))
        }
        None => None,
    };
    // A project in a bucket is downloaded into the state directory (default: `.quiver-gateway`
    // here) and loaded from there; a directory is loaded where it is.
    let source = bucket_project::parse(&options.project_dir.to_string_lossy())?;
    let state_dir = match (&options.state_dir, &source) {
        (Some(dir), _) => dir.clone(),
        (None, ProjectSource::Directory(dir)) => dir.join(".quiver-gateway"),
        (None, ProjectSource::Bucket { .. }) => PathBuf::from(".quiver-gateway"),
    };
    let sync_interval = sync_interval(options.config_sync_interval)?;
    // Taken before the project is read: a change made meanwhile is applied by the first tick.
    let baseline = sync_interval.and_then(|_| project_sync::baseline(&source));
    let project_dir = bucket_project::materialize(&source, &state_dir.join("config"))?;
    let mut project = project::load(&project_dir)
        .map_err(|diagnostics| format!("the project at {source} does not load:\n{diagnostics}"))?;
    let cors = options
        .cors_origins
        .clone()
        .or_else(|| std::env::var(CORS_ORIGINS_ENV).ok());
    let cors = cors.map(|origins| project::CorsOrigins::parse(&origins));
    if let Some(cors) = &cors {
        project.settings.cors = cors.clone();
    }
    let sync = sync_interval.map(|interval| {
        (
            ProjectSync {
                source,
                state_dir: state_dir.clone(),
                cors,
                interval,
            },
            baseline,
        )
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("gateway")
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))?;
    runtime.block_on(serve(
        project,
        GatewayOptions {
            server,
            state_dir,
            server_threads: options.server_threads,
            server_memory_limit: options.server_memory_limit.clone(),
        },
        options,
        admin_token,
        sync,
    ))
}

/// The project sync's interval: the flag's, else offloader's variable's; off when neither is a
/// positive number of seconds.
fn sync_interval(flag: Option<u64>) -> Result<Option<Duration>, String> {
    let seconds = match flag {
        Some(seconds) => seconds,
        None => match std::env::var(SYNC_INTERVAL_ENV) {
            Ok(text) if !text.trim().is_empty() => text.trim().parse().map_err(|_| {
                format!("{SYNC_INTERVAL_ENV}={text}: expected a whole number of seconds")
            })?,
            _ => 0,
        },
    };
    Ok((seconds > 0).then(|| Duration::from_secs(seconds)))
}

async fn serve(
    project: project::Project,
    gateway_options: GatewayOptions,
    options: ServeOptions,
    admin_token: Option<String>,
    sync: Option<(ProjectSync, Option<String>)>,
) -> Result<(), String> {
    let public = bind(options.listen).await?;
    let admin_port = bind(options.admin_listen).await?;
    let gateway = tokio::task::spawn_blocking(move || Gateway::start(project, gateway_options))
        .await
        .map_err(|error| format!("the gateway's start failed: {error}"))??;

    if let Some((sync, baseline)) = sync {
        sync.start(&gateway, baseline);
    }
    let (stop_sender, stop) = watch::channel(false);
    watch_signals(stop_sender.clone());
    if options.watch_stdin {
        watch_stdin(stop_sender);
    }
    announce(&public, &admin_port)?;
    tracing::info!(
        http = %public.local_addr().map_err(|error| error.to_string())?,
        admin = %admin_port.local_addr().map_err(|error| error.to_string())?,
        datasets = gateway.project().datasets.len(),
        endpoints = gateway.project().endpoints.len(),
        "listening"
    );

    let public_router = http::app::router(gateway.clone());
    let admin_router = admin::router(gateway.clone(), admin_token);
    let settings = gateway.project().settings.connections;
    let public_limits = ConnectionLimits {
        max: settings.max,
        per_peer_max: settings.per_peer_max,
        header_read_timeout: settings.header_read_timeout,
    };
    let admin_limits = ConnectionLimits {
        max: settings.admin_max,
        ..public_limits
    };
    let public_task = tokio::spawn(connections::serve(
        public,
        public_router,
        public_limits,
        gateway.public_connections.clone(),
        stopped(stop.clone()),
        STOP_GRACE,
    ));
    let admin_task = tokio::spawn(connections::serve(
        admin_port,
        admin_router,
        admin_limits,
        gateway.admin_connections.clone(),
        stopped(stop.clone()),
        STOP_GRACE,
    ));
    stopped(stop).await;
    tracing::info!("stopping: finishing in-flight requests");
    // Each port gives its connections STOP_GRACE; this bound is a backstop.
    let finished = tokio::time::timeout(STOP_GRACE + Duration::from_secs(1), async {
        let _ = public_task.await;
        let _ = admin_task.await;
    })
    .await;
    if finished.is_err() {
        tracing::warn!(
            grace_s = STOP_GRACE.as_secs(),
            "in-flight requests outlived the grace"
        );
    }
    stop_backend(gateway).await;
    Ok(())
}

/// Stops the spawned server (its own grace), off the async threads.
async fn stop_backend(gateway: Arc<Gateway>) {
    gateway.snapshots.stop();
    let backend = gateway.backend.clone();
    drop(gateway);
    let _ = tokio::task::spawn_blocking(move || backend.stop()).await;
}

async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address}: {error}"))
}

fn announce(
    public: &tokio::net::TcpListener,
    admin_port: &tokio::net::TcpListener,
) -> Result<(), String> {
    let public = public.local_addr().map_err(|error| error.to_string())?;
    let admin_port = admin_port.local_addr().map_err(|error| error.to_string())?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "HTTP:http://{public}")
        .and_then(|()| writeln!(stdout, "ADMIN:http://{admin_port}"))
        .and_then(|()| writeln!(stdout, "LISTENING"))
        .and_then(|()| stdout.flush())
        .map_err(|error| format!("cannot announce the ports: {error}"))
}

async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

fn watch_signals(stop: watch::Sender<bool>) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut terminate), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::error!("cannot watch SIGTERM/SIGINT");
            return;
        };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        let _ = stop.send(true);
    });
}

/// Stops when stdin ends: the parent that holds its other end has gone.
fn watch_stdin(stop: watch::Sender<bool>) {
    std::thread::Builder::new()
        .name("gateway-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = [0u8; 256];
            while matches!(stdin.read(&mut buffer), Ok(read) if read > 0) {}
            let _ = stop.send(true);
        })
        .expect("a thread to watch stdin");
}
