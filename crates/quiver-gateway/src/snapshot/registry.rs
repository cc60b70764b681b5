//! Every dataset's snapshots: which one serves (`current`), the one kept for rollback
//! (`previous`), refreshes (at start, on an interval, on demand) that materialize a new manifest
//! and swap it in, rollbacks, warm starts from the sidecar, and readiness.
//!
//! Locks: a dataset's `work` (one refresh or rollback of it at a time; the only lock held across
//! calls to the server), then its `serving` (what readers clone an `Arc<Snapshot>` from) or its
//! `record` (status), each held for a few statements and never both. `sidecar` is taken with
//! neither held, and takes each dataset's `serving` in turn.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, RwLock, TryLockError, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::fetch::{self, ManifestLocation};
use super::manifest::Manifest;
use super::materialize::{materialize, quote_identifier};
use super::sidecar::Sidecar;
use super::slot::{lock, Kept, Permits, Slot, Stop};
use super::warm::{path_component, restore, snapshot_tables, TABLE_PREFIX};
use super::Snapshot;
use crate::backend::Backend;
use crate::lookup::Budget;
use crate::project::{Project, ReadyPolicy};

mod cleanup;
mod lookups;
mod reload;
mod report;

pub use reload::ReloadOutcome;

/// Most datasets one gateway serves (each refresh of all of them runs a thread per dataset).
pub const DATASETS_MAX: usize = 4096;
/// Snapshots swapped out while a reader still held them, kept until released; past this many the
/// oldest are dropped anyway.
const RETIRED_MAX: usize = 4;
/// Without `refresh_interval_seconds`, how often datasets that have nothing to serve are retried.
pub const RETRY_FAILED_AFTER: Duration = Duration::from_secs(60);
/// Why a call on [`Snapshots`] was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    /// The project has no dataset of this id.
    #[error("no dataset '{0}'")]
    UnknownDataset(String),
    /// The dataset keeps no previous snapshot.
    #[error("dataset '{0}' has no previous snapshot to roll back to")]
    NoPrevious(String),
    /// A refresh or rollback of the dataset is under way.
    #[error("dataset '{0}' is being refreshed; try again when it is done")]
    Busy(String),
}

/// What a refresh did to one dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RefreshOutcome {
    /// The manifest names the snapshot already serving.
    Unchanged {
        /// The snapshot serving.
        snapshot_id: String,
    },
    /// The manifest names the snapshot a rollback moved away from: it stays rolled back.
    Pinned {
        /// The manifest's snapshot, which stays out of service.
        snapshot_id: String,
    },
    /// A new snapshot was materialized and serves now.
    Swapped {
        /// The new snapshot.
        snapshot_id: String,
        /// The one it replaced, kept for a rollback; `None` when nothing served before.
        previous_snapshot_id: Option<String>,
    },
    /// Nothing changed; the dataset keeps serving what it served (if anything).
    Failed {
        /// Why the refresh failed.
        error: String,
    },
}

/// What a rollback did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RollbackOutcome {
    /// The dataset rolled back.
    pub dataset: String,
    /// The snapshot serving now: the one that served before.
    pub snapshot_id: String,
    /// The snapshot rolled back from, now kept as the previous one.
    pub previous_snapshot_id: String,
}

/// The snapshots of every dataset of a project.
pub struct Snapshots {
    /// The project and its datasets' slots, swapped together by a reload.
    view: RwLock<Arc<View>>,
    backend: Arc<Backend>,
    state_dir: PathBuf,
    permits: Permits,
    sidecar: Mutex<()>,
    stop: Arc<Stop>,
    /// Slots a reload replaced or removed, kept until no reader holds their snapshots.
    replaced: Mutex<Vec<Arc<Slot>>>,
    /// One reload at a time.
    reloading: Mutex<()>,
    /// The memory keyed lookups hold, all snapshots together.
    lookup_budget: Arc<Budget>,
}

/// A project and the slots of its datasets: what one request reads, whole, whatever a reload
/// does meanwhile (an endpoint is never compiled against one project and run on another's table).
pub struct View {
    /// Counts reloads: what a response cached under one project can never answer for another.
    pub generation: u64,
    /// The project this view serves.
    pub project: Arc<Project>,
    slots: Vec<Arc<Slot>>,
}

impl View {
    /// The snapshot `dataset` serves now.
    pub fn current(&self, dataset: &str) -> Option<Arc<Snapshot>> {
        let slot = self.slot(dataset)?;
        let serving = lock(&slot.serving);
        serving.current.as_ref().map(|kept| kept.snapshot.clone())
    }

    /// The current or the previous snapshot of `dataset`, if its id is `snapshot_id` (a cursor
    /// pins the snapshot its first page read).
    pub fn get(&self, dataset: &str, snapshot_id: &str) -> Option<Arc<Snapshot>> {
        let slot = self.slot(dataset)?;
        let serving = lock(&slot.serving);
        let found = [serving.current.as_ref(), serving.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|kept| kept.snapshot.snapshot_id == snapshot_id)
            .map(|kept| kept.snapshot.clone());
        found
    }

    /// Whether the project's `ready:` policy holds: all datasets serve, any does, or the listed
    /// ones do.
    pub fn is_ready(&self) -> bool {
        let serves = |slot: &Arc<Slot>| lock(&slot.serving).current.is_some();
        match &self.project.settings.ready {
            ReadyPolicy::All => self.slots.iter().all(serves),
            ReadyPolicy::Any => self.slots.iter().any(serves),
            ReadyPolicy::Required(names) => {
                names.iter().all(|name| self.slot(name).is_some_and(serves))
            }
        }
    }

    fn slot(&self, dataset: &str) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|slot| slot.dataset.id == dataset)
    }

    /// The strictest `max_staleness_minutes` of the endpoints reading `dataset`.
    fn max_staleness(&self, dataset: &str) -> Option<Duration> {
        self.project
            .endpoints
            .iter()
            .filter(|endpoint| endpoint.dataset == dataset)
            .filter_map(|endpoint| endpoint.max_staleness)
            .min()
    }
}

impl Snapshots {
    /// Restores what the sidecar names and the server still has (those datasets serve when this
    /// returns), then refreshes every dataset in the background: manifests whose checksum matches
    /// the restored snapshot need nothing, the others materialize.
    pub fn start(
        project: Arc<Project>,
        backend: Arc<Backend>,
        state_dir: PathBuf,
    ) -> Arc<Snapshots> {
        assert!(project.datasets.len() <= DATASETS_MAX, "too many datasets");
        if let Err(error) = std::fs::create_dir_all(&state_dir) {
            tracing::warn!(state_dir = %state_dir.display(), %error, "cannot create the state directory");
        }
        let (sidecar, why) = Sidecar::read(&state_dir);
        if let Some(why) = why {
            tracing::warn!(%why, "the sidecar is ignored: every dataset materializes");
        }
        let listed = snapshot_tables(&backend);
        if let Err(error) = &listed {
            tracing::warn!(%error, "cannot list the server's tables: nothing is restored");
        }
        let tables = listed.as_ref().cloned().unwrap_or_default();
        let slots = project
            .datasets
            .iter()
            .map(|dataset| Arc::new(restore(dataset, &sidecar, &tables)))
            .collect();
        let parallelism = project.settings.materialize_parallelism.max(1);
        let snapshots = Arc::new(Snapshots {
            view: RwLock::new(Arc::new(View {
                generation: 0,
                project,
                slots,
            })),
            backend,
            state_dir,
            permits: Permits {
                free: Mutex::new(parallelism),
                returned: Condvar::new(),
            },
            sidecar: Mutex::new(()),
            stop: Arc::new(Stop::default()),
            replaced: Mutex::new(Vec::new()),
            reloading: Mutex::new(()),
            lookup_budget: Arc::new(Budget::default()),
        });
        // Without the server's tables, the sidecar is left as it is for the next start.
        if listed.is_ok() {
            snapshots.remove_orphans(&tables);
            snapshots.write_sidecar();
        }
        let weak = Arc::downgrade(&snapshots);
        let stop = snapshots.stop.clone();
        let spawned = std::thread::Builder::new()
            .name("quiver-gateway-snapshots".into())
            .spawn(move || background(weak, stop));
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the snapshot thread: nothing refreshes");
        }
        snapshots
    }

    /// The project and its slots as they are now; a request reads one view throughout.
    pub fn view(&self) -> Arc<View> {
        self.view
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The project served now.
    pub fn project(&self) -> Arc<Project> {
        self.view().project.clone()
    }

    /// The snapshot `dataset` serves now.
    pub fn current(&self, dataset: &str) -> Option<Arc<Snapshot>> {
        self.view().current(dataset)
    }

    /// The current or the previous snapshot of `dataset`, if its id is `snapshot_id`.
    pub fn get(&self, dataset: &str, snapshot_id: &str) -> Option<Arc<Snapshot>> {
        self.view().get(dataset, snapshot_id)
    }

    /// Whether the project's `ready:` policy holds.
    pub fn is_ready(&self) -> bool {
        self.view().is_ready()
    }

    /// Re-reads the manifests of `dataset` (or of every dataset), materializes and swaps in the
    /// new snapshots, and returns what happened to each, once all are done.
    pub fn refresh(
        &self,
        dataset: Option<&str>,
    ) -> Result<BTreeMap<String, RefreshOutcome>, SnapshotError> {
        let view = self.view();
        let slots: Vec<Arc<Slot>> = match dataset {
            None => view.slots.clone(),
            Some(name) => vec![view
                .slot(name)
                .ok_or_else(|| SnapshotError::UnknownDataset(name.into()))?
                .clone()],
        };
        Ok(self.refresh_many(&view.project, &slots))
    }

    /// Serves the previous snapshot of `dataset` again; the one it replaces becomes the previous,
    /// and refreshes leave the dataset rolled back until its manifest names a newer snapshot.
    pub fn rollback(&self, dataset: &str) -> Result<RollbackOutcome, SnapshotError> {
        let view = self.view();
        let slot = view
            .slot(dataset)
            .ok_or_else(|| SnapshotError::UnknownDataset(dataset.into()))?;
        let _work = match slot.work.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(SnapshotError::Busy(dataset.into())),
        };
        let outcome = {
            let mut serving = lock(&slot.serving);
            let previous = serving
                .previous
                .take()
                .ok_or_else(|| SnapshotError::NoPrevious(dataset.into()))?;
            let current = serving
                .current
                .take()
                .expect("a dataset with a previous snapshot has a current one");
            let outcome = RollbackOutcome {
                dataset: dataset.into(),
                snapshot_id: previous.snapshot.snapshot_id.clone(),
                previous_snapshot_id: current.snapshot.snapshot_id.clone(),
            };
            serving.rolled_back_from = Some(current.snapshot.snapshot_id.clone());
            serving.current = Some(previous);
            serving.previous = Some(current);
            outcome
        };
        tracing::info!(dataset, snapshot_id = %outcome.snapshot_id, from = %outcome.previous_snapshot_id, "rolled back");
        self.write_sidecar();
        Ok(outcome)
    }

    /// Ends the background refreshes (a refresh already running finishes).
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// Refreshes `slots` (datasets of `project`), each on a thread of its own (materializes are
    /// bounded by the permits); a panic in one is that dataset's failure, never the others'.
    fn refresh_many(
        &self,
        project: &Project,
        slots: &[Arc<Slot>],
    ) -> BTreeMap<String, RefreshOutcome> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = slots
                .iter()
                .enumerate()
                .map(|(index, slot)| {
                    let handle = std::thread::Builder::new()
                        .name(format!("quiver-gateway-refresh-{index}"))
                        .spawn_scoped(scope, move || self.refresh_slot(project, slot));
                    (slot, handle)
                })
                .collect();
            handles
                .into_iter()
                .map(|(slot, handle)| {
                    let outcome = match handle {
                        Ok(handle) => handle.join().unwrap_or_else(|_| RefreshOutcome::Failed {
                            error: "internal error: the refresh panicked".into(),
                        }),
                        // No thread to spare: refresh here, in turn.
                        Err(_) => self.refresh_slot(project, slot),
                    };
                    (slot.dataset.id.clone(), outcome)
                })
                .collect()
        })
    }

    fn refresh_slot(&self, project: &Project, slot: &Slot) -> RefreshOutcome {
        let _work = lock(&slot.work);
        lock(&slot.record).refreshing = true;
        let result = self.try_refresh(project, slot);
        self.attach_lookups(project, slot);
        let mut record = lock(&slot.record);
        record.refreshing = false;
        match result {
            Ok(outcome) => {
                record.refresh_ok += 1;
                record.last_error = None;
                record.last_refresh_ok = Some(true);
                tracing::info!(dataset = %slot.dataset.id, outcome = ?outcome, "refreshed");
                outcome
            }
            Err(error) => {
                record.refresh_failed += 1;
                record.last_error = Some(error.clone());
                record.last_refresh_ok = Some(false);
                tracing::warn!(dataset = %slot.dataset.id, %error, "refresh failed");
                RefreshOutcome::Failed { error }
            }
        }
    }

    fn try_refresh(&self, project: &Project, slot: &Slot) -> Result<RefreshOutcome, String> {
        let dataset = &slot.dataset;
        let location = fetch::locate(&dataset.source, &project.root)?;
        let bytes = fetch::read_manifest(&location, &project.settings.data_roots)?;
        let manifest = Manifest::parse(&bytes)
            .map_err(|problems| format!("{location}: {}", problems.join("; ")))?;
        let problems = manifest.check_against(dataset);
        if !problems.is_empty() {
            return Err(format!("{location}: {}", problems.join("; ")));
        }
        if let Some(outcome) = self.nothing_to_do(slot, &manifest)? {
            return Ok(outcome);
        }
        let budget = dataset
            .materialize_budget
            .unwrap_or(project.settings.materialize_budget);
        let permit = self.permits.acquire();
        let started = Instant::now();
        lock(&slot.record).attempts += 1;
        let result = self.build(project, slot, &location, &manifest, started + budget);
        drop(permit);
        lock(&slot.record).last_materialize = Some(started.elapsed());
        let kept = result?;
        lock(&slot.record).materialized_this_run += 1;
        let previous_snapshot_id = {
            let mut serving = lock(&slot.serving);
            if let Some(older) = serving.previous.take() {
                serving.retired.push(older);
            }
            serving.previous = serving.current.take();
            serving.current = Some(kept);
            serving.rolled_back_from = None;
            serving
                .previous
                .as_ref()
                .map(|kept| kept.snapshot.snapshot_id.clone())
        };
        // The sidecar stops naming the retired tables before they are dropped.
        self.write_sidecar();
        self.drop_retired(slot);
        Ok(RefreshOutcome::Swapped {
            snapshot_id: manifest.snapshot_id,
            previous_snapshot_id,
        })
    }

    /// `Some` when the manifest needs no new table.
    fn nothing_to_do(
        &self,
        slot: &Slot,
        manifest: &Manifest,
    ) -> Result<Option<RefreshOutcome>, String> {
        let serving = lock(&slot.serving);
        if let Some(current) = &serving.current {
            if current.snapshot.snapshot_id == manifest.snapshot_id {
                if current.manifest_sha256 == manifest.sha256 {
                    return Ok(Some(RefreshOutcome::Unchanged {
                        snapshot_id: manifest.snapshot_id.clone(),
                    }));
                }
                // Responses are cached and ETagged by snapshot id: new data needs a new id.
                return Err(format!(
                    "the manifest changed but its snapshot_id '{}' did not; a new snapshot \
                     needs a new snapshot_id",
                    manifest.snapshot_id
                ));
            }
        }
        if serving.rolled_back_from.as_deref() == Some(manifest.snapshot_id.as_str()) {
            return Ok(Some(RefreshOutcome::Pinned {
                snapshot_id: manifest.snapshot_id.clone(),
            }));
        }
        Ok(None)
    }

    fn build(
        &self,
        project: &Project,
        slot: &Slot,
        location: &ManifestLocation,
        manifest: &Manifest,
        deadline: Instant,
    ) -> Result<Kept, String> {
        let data_roots = &project.settings.data_roots;
        let dataset = &slot.dataset;
        // Parts are downloaded for an object-store manifest, and for any part named by URL.
        let downloads = matches!(location, ManifestLocation::ObjectStore { .. })
            || manifest
                .files
                .iter()
                .any(|part| fetch::part_url(&part.path).is_some());
        let generation = slot.next_generation.fetch_add(1, Ordering::Relaxed);
        // Named by generation too: a reloaded dataset's new slot may build the snapshot its
        // replaced slot still serves, and each drops its own parts.
        let parts_dir = downloads.then(|| {
            self.parts_root()
                .join(path_component(&dataset.id))
                .join(format!(
                    "{}__{generation}",
                    path_component(&manifest.snapshot_id)
                ))
        });
        let scratch = parts_dir.clone().unwrap_or_default();
        let parts = fetch::local_parts(location, manifest, &scratch, deadline, data_roots);
        let built = parts.and_then(|parts| {
            let table_name = format!("{TABLE_PREFIX}{}__{generation}", dataset.id);
            let table = quote_identifier(&table_name);
            let mut connection = self
                .backend
                .connection()
                .map_err(|error| format!("cannot reach the server: {error}"))?;
            let built = materialize(&mut connection, dataset, manifest, &parts, &table, deadline)?;
            let lookups = self.lookups(&mut connection, project, dataset, &table);
            Ok(Kept {
                snapshot: Arc::new(Snapshot {
                    dataset: dataset.id.clone(),
                    snapshot_id: manifest.snapshot_id.clone(),
                    table,
                    files_relation: built.files_relation,
                    watermark: manifest.watermark.clone(),
                    watermark_unix: manifest.watermark_unix,
                    materialized_at: SystemTime::now(),
                    row_count: built.row_count,
                    lookups,
                }),
                table_name,
                manifest_sha256: manifest.sha256.clone(),
                parts_dir: parts_dir.clone(),
                lookups_tried: true,
            })
        });
        if built.is_err() {
            if let Some(dir) = &parts_dir {
                if !self.parts_dir_in_use(slot, dir) {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
        }
        built
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

/// Refreshes every dataset once, then on the project's interval; without one, retries the
/// datasets that have nothing to serve.
fn background(snapshots: Weak<Snapshots>, stop: Arc<Stop>) {
    let mut first = true;
    loop {
        let Some(this) = snapshots.upgrade() else {
            return;
        };
        let view = this.view();
        let interval = view.project.settings.refresh_interval;
        let due: Vec<Arc<Slot>> = view
            .slots
            .iter()
            .filter(|slot| first || interval.is_some() || lock(&slot.serving).current.is_none())
            .cloned()
            .collect();
        first = false;
        if !due.is_empty() {
            this.refresh_many(&view.project, &due);
        }
        for slot in &view.slots {
            this.drop_retired(slot);
        }
        this.release_replaced();
        drop(view);
        drop(this);
        if stop.wait(interval.unwrap_or(RETRY_FAILED_AFTER)) {
            return;
        }
    }
}
