//! A serving gateway's parts, wired once at start and shared by every request: the project, the
//! quiver server it is a client of, the snapshots, the keys, the response cache, the metrics.

use std::path::PathBuf;
use std::sync::Arc;

use quiver_client::IntoAddress;

use crate::backend::{Backend, BackendOptions};
use crate::cache::ResponseCache;
use crate::cursor::CursorKey;
use crate::http::admission::Admission;
use crate::http::auth::KeyRing;
use crate::http::connections::ConnectionStats;
use crate::http::rate_limit::RateLimiter;
use crate::metrics::Metrics;
use crate::project::Project;
use crate::snapshot::Snapshots;

pub struct Gateway {
    pub project: Arc<Project>,
    pub backend: Arc<Backend>,
    pub snapshots: Arc<Snapshots>,
    pub keys: Arc<KeyRing>,
    pub rate_limiter: RateLimiter,
    pub cache: ResponseCache,
    pub metrics: Metrics,
    /// Signs this process's keyset cursors: a cursor outlives neither the process nor its snapshot.
    pub cursor_key: CursorKey,
    pub admission: Admission,
    /// What each port did with its connections (shown by `/status`).
    pub public_connections: Arc<ConnectionStats>,
    pub admin_connections: Arc<ConnectionStats>,
}

/// Where the server is and where the gateway keeps its state.
pub struct GatewayOptions {
    /// `None`: spawn a server; else its address and token.
    pub server: Option<(String, Option<String>)>,
    pub state_dir: PathBuf,
    /// A spawned server's DuckDB `threads` and `memory_limit` (DuckDB's defaults when `None`).
    pub server_threads: Option<usize>,
    pub server_memory_limit: Option<String>,
}

impl Gateway {
    /// Starts the backend (spawning a server unless given one) and the snapshots (which load in
    /// the background: a gateway serves what is ready and says `not_ready` for the rest).
    pub fn start(project: Project, options: GatewayOptions) -> Result<Arc<Gateway>, String> {
        let project = Arc::new(project);
        let settings = &project.settings;
        std::fs::create_dir_all(&options.state_dir).map_err(|error| {
            format!(
                "cannot create the state directory {}: {error}",
                options.state_dir.display()
            )
        })?;
        let server = match options.server {
            Some((address, token)) => Some((
                address
                    .as_str()
                    .into_address()
                    .map_err(|error| format!("--server {address}: {error}"))?,
                token,
            )),
            None => None,
        };
        let cursor_key = CursorKey::random()
            .map_err(|error| format!("cannot make the cursor signing key: {error}"))?;
        let backend = Backend::start(BackendOptions {
            server,
            state_dir: options.state_dir.clone(),
            pool_size: settings.pool_size,
            pool_wait: settings.pool_wait,
            threads: options.server_threads,
            memory_limit: options.server_memory_limit.clone(),
        })
        // The backend's errors name what failed ("the quiver server did not start: ...").
        .map_err(|error| error.to_string())?;
        let backend = Arc::new(backend);
        let keys = Arc::new(KeyRing::new(
            project.keys.clone(),
            project.keys_file.clone(),
        ));
        KeyRing::watch(&keys);
        let snapshots = Snapshots::start(project.clone(), backend.clone(), options.state_dir);
        Ok(Arc::new(Gateway {
            rate_limiter: RateLimiter::default(),
            cache: ResponseCache::new(settings.cache_max_bytes),
            metrics: Metrics::new(),
            cursor_key,
            admission: Admission::new(settings.pool_size, settings.pool_wait),
            public_connections: Arc::default(),
            admin_connections: Arc::default(),
            project,
            backend,
            snapshots,
            keys,
        }))
    }
}
