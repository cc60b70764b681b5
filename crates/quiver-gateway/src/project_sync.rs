//! The project reloaded while serving, as offloader's config sync does it: every interval, the
//! project's change token (its `.yml`/`.yaml` files' paths, times and sizes; one listing for a
//! bucket) is compared with the last applied one; on a change the project is read again (a
//! bucket's downloaded into the state directory beside the running one), checked as `check`
//! checks it, and swapped in atomically once its new and changed datasets have snapshots
//! ([`Gateway::reload`]). A project that fails any of this is logged and shown by `/status`;
//! the running one keeps serving, and the next tick tries again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::bucket_project::{self, ProjectSource};
use crate::gateway::Gateway;
use crate::project::{self, CorsOrigins, Project};

/// The variable offloader reads its sync interval (whole seconds) from; honoured here too.
pub const SYNC_INTERVAL_ENV: &str = "OFFLOADER_CONFIG_SYNC_INTERVAL";

/// What `/status` shows of the reloads.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SyncState {
    pub enabled: bool,
    pub interval_seconds: Option<u64>,
    /// `unchanged`, `applied` or `error`, of the last tick.
    pub last_result: Option<&'static str>,
    /// Why the last change was not applied; cleared once one is.
    pub last_error: Option<String>,
    pub last_checked_unix: Option<u64>,
    pub last_applied_unix: Option<u64>,
    pub applied_total: u64,
    pub failed_total: u64,
}

/// The reloads' state, shared with the admin port.
#[derive(Default)]
pub struct SyncStatus(Mutex<SyncState>);

impl SyncStatus {
    pub fn get(&self) -> SyncState {
        self.lock().clone()
    }

    /// `/diagnostics`' `config_sync`, in offloader's shape: `{enabled: false}`, or `{enabled,
    /// result, error, last_checked, last_applied}` (times in RFC 3339).
    pub fn diagnostics(&self) -> serde_json::Value {
        let state = self.get();
        if !state.enabled {
            return serde_json::json!({ "enabled": false });
        }
        let time = |unix: Option<u64>| {
            unix.and_then(|seconds| chrono::DateTime::from_timestamp(seconds as i64, 0))
                .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        };
        serde_json::json!({
            "enabled": true,
            "result": state.last_result,
            "error": state.last_error,
            "last_checked": time(state.last_checked_unix),
            "last_applied": time(state.last_applied_unix),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SyncState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where the project comes from, and what serving changes in it after each load.
pub struct ProjectSync {
    pub source: ProjectSource,
    pub state_dir: PathBuf,
    /// `--cors-origins` or `OFFLOADER_CORS_ORIGINS`, which win over the project's setting.
    pub cors: Option<CorsOrigins>,
    pub interval: Duration,
}

impl ProjectSync {
    /// Ticks every interval on a thread of its own until the gateway is dropped. `baseline`: the
    /// token of the project serving now.
    pub fn start(self, gateway: &Arc<Gateway>, baseline: Option<String>) {
        {
            let mut state = gateway.sync.lock();
            state.enabled = true;
            state.interval_seconds = Some(self.interval.as_secs());
        }
        let weak = Arc::downgrade(gateway);
        let spawned = std::thread::Builder::new()
            .name("gateway-project-sync".into())
            .spawn(move || {
                let mut baseline = baseline;
                loop {
                    std::thread::sleep(self.interval);
                    let Some(gateway) = weak.upgrade() else {
                        return;
                    };
                    self.tick(&gateway, &mut baseline);
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the project sync: the project is not reloaded");
        }
    }

    fn tick(&self, gateway: &Gateway, baseline: &mut Option<String>) {
        let token = bucket_project::change_token(&self.source);
        let result = match token {
            Ok(token) if baseline.as_deref() == Some(token.as_str()) => Ok(None),
            Ok(token) => self.apply(gateway).map(|outcome| Some((token, outcome))),
            Err(error) => Err(error),
        };
        let now = unix_now();
        let mut state = gateway.sync.lock();
        state.last_checked_unix = Some(now);
        match result {
            Ok(None) => state.last_result = Some("unchanged"),
            Ok(Some((token, outcome))) => {
                *baseline = Some(token);
                state.last_result = Some("applied");
                state.last_error = None;
                state.last_applied_unix = Some(now);
                state.applied_total += 1;
                tracing::info!(
                    kept = ?outcome.kept,
                    materialized = ?outcome.materialized,
                    removed = ?outcome.removed,
                    "project reloaded"
                );
            }
            Err(error) => {
                state.last_result = Some("error");
                state.failed_total += 1;
                tracing::error!(%error, "the changed project was not applied; the running one keeps serving");
                state.last_error = Some(error);
            }
        }
    }

    fn apply(&self, gateway: &Gateway) -> Result<crate::snapshot::ReloadOutcome, String> {
        let running = gateway.project();
        let project = self.load(&running.root)?;
        gateway.reload(project)
    }

    /// The project read again and checked whole (its files, then its manifests and parts).
    fn load(&self, running_root: &Path) -> Result<Project, String> {
        let dir = match &self.source {
            ProjectSource::Directory(dir) => dir.clone(),
            // Downloaded beside the running project, never over it: a project that fails its
            // check leaves the running one's files (its manifests, its keys) as they were.
            ProjectSource::Bucket { .. } => {
                let into = other_config_dir(&self.state_dir, running_root);
                bucket_project::materialize(&self.source, &into)?
            }
        };
        let (project, mut diagnostics) = project::read(&dir);
        if let Some(project) = &project {
            crate::snapshot::check::check_sources(project, &mut diagnostics);
        }
        let mut project = match project {
            Some(project) if diagnostics.is_empty() => project,
            _ => {
                return Err(format!(
                    "the project at {} does not load:\n{diagnostics}",
                    self.source
                ))
            }
        };
        if let Some(cors) = &self.cors {
            project.settings.cors = cors.clone();
        }
        Ok(project)
    }
}

/// The token of the project as it is now (the baseline for the first tick), `None` when it
/// cannot be read (then the first tick reloads).
pub fn baseline(source: &ProjectSource) -> Option<String> {
    bucket_project::change_token(source).ok()
}

/// A bucket project's two download directories, used in turn: the one the running project was
/// not loaded from.
fn other_config_dir(state_dir: &Path, running_root: &Path) -> PathBuf {
    let first = state_dir.join("config");
    if same_dir(running_root, &first) {
        state_dir.join("config.next")
    } else {
        first
    }
}

fn same_dir(left: &Path, right: &Path) -> bool {
    match (left.canonicalize(), right.canonicalize()) {
        (Ok(left), Ok(right)) => left == right,
        _ => left == right,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
