//! What the registry keeps per dataset (its snapshots, its status, its locks), the permits that
//! bound materializes running at once, and the background thread's stop signal.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::status::Record;
use super::Snapshot;
use crate::project::Dataset;

/// A snapshot as the registry keeps it.
#[derive(Clone, Debug)]
pub(super) struct Kept {
    pub(super) snapshot: Arc<Snapshot>,
    /// The unquoted table name.
    pub(super) table_name: String,
    pub(super) manifest_sha256: String,
    pub(super) parts_dir: Option<PathBuf>,
    /// Whether keyed lookups were built for it (or found not to apply); a restored snapshot's
    /// are built by its dataset's first refresh.
    pub(super) lookups_tried: bool,
}

#[derive(Default)]
pub(super) struct Serving {
    pub(super) current: Option<Kept>,
    pub(super) previous: Option<Kept>,
    /// Swapped out while readers held them; dropped once released.
    pub(super) retired: Vec<Kept>,
    pub(super) rolled_back_from: Option<String>,
}

pub(super) struct Slot {
    pub(super) dataset: Dataset,
    pub(super) schema_sha256: String,
    pub(super) work: Mutex<()>,
    pub(super) serving: Mutex<Serving>,
    pub(super) record: Mutex<Record>,
    /// Shared by a dataset's slots across reloads: table names never repeat.
    pub(super) next_generation: Arc<AtomicU64>,
}

/// At most `parallelism` materializes at once.
pub(super) struct Permits {
    pub(super) free: Mutex<usize>,
    pub(super) returned: Condvar,
}

pub(super) struct Permit<'p>(&'p Permits);

impl Permits {
    pub(super) fn acquire(&self) -> Permit<'_> {
        let mut free = lock(&self.free);
        while *free == 0 {
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *lock(&self.0.free) += 1;
        self.0.returned.notify_one();
    }
}

/// Tells the background thread to end.
#[derive(Default)]
pub(super) struct Stop {
    pub(super) stopping: Mutex<bool>,
    pub(super) wake: Condvar,
}

impl Stop {
    /// Waits up to `period`; `true` once stopping.
    pub(super) fn wait(&self, period: Duration) -> bool {
        let stopping = lock(&self.stopping);
        let (stopping, _) = self
            .wake
            .wait_timeout_while(stopping, period, |stopping| !*stopping)
            .unwrap_or_else(|e| e.into_inner());
        *stopping
    }

    pub(super) fn stop(&self) {
        *lock(&self.stopping) = true;
        self.wake.notify_all();
    }
}

/// Locks, taking over a lock a panicking thread left: every guarded value stays consistent
/// between statements, so a panic elsewhere never stops the other datasets.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
