//! A project reloaded while serving (offloader's config sync): the new project's datasets that
//! serve alike (same schema, tenant column, manifest and budget) keep their slots and snapshots;
//! new and changed ones materialize into slots of their own while the running project serves,
//! and only when every one of them has a snapshot is the new view (project and slots together)
//! swapped in. Any failure leaves the running project serving, untouched. The slots a swap
//! replaced are retired: their tables go once no reader holds them.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use super::super::sidecar::Sidecar;
use super::super::slot::{lock, Slot};
use super::super::warm::{restore, snapshot_tables};
use super::{RefreshOutcome, Snapshots, View};
use crate::project::{Dataset, Project};

/// What a reload did to the datasets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReloadOutcome {
    /// Serving as they did: their snapshots carried over.
    pub kept: Vec<String>,
    /// New or changed: materialized before the swap.
    pub materialized: Vec<String>,
    /// Gone from the project: their endpoints went with them.
    pub removed: Vec<String>,
}

impl Snapshots {
    /// Swaps in `project` once its new and changed datasets have a snapshot each; `before_swap`
    /// runs just before (what must change with the project, e.g. the keys). `Err`: why not, and
    /// the running project still serves.
    pub fn reload(
        &self,
        project: Arc<Project>,
        before_swap: impl FnOnce(),
    ) -> Result<ReloadOutcome, String> {
        let _one = lock(&self.reloading);
        let old = self.view();
        let tables = snapshot_tables(&self.backend).unwrap_or_default();
        let mut outcome = ReloadOutcome::default();
        let mut slots = Vec::with_capacity(project.datasets.len());
        let mut fresh = Vec::new();
        for dataset in &project.datasets {
            match old.slot(&dataset.id) {
                Some(slot) if serves_alike(&slot.dataset, dataset) => {
                    outcome.kept.push(dataset.id.clone());
                    slots.push(slot.clone());
                }
                previous => {
                    let mut slot = restore(dataset, &Sidecar::default(), &tables);
                    if let Some(previous) = previous {
                        // One counter per dataset name, so the old and new slots never build
                        // tables of the same name.
                        slot.next_generation = previous.next_generation.clone();
                    }
                    let slot = Arc::new(slot);
                    outcome.materialized.push(dataset.id.clone());
                    fresh.push(slot.clone());
                    slots.push(slot);
                }
            }
        }
        let failures: Vec<String> = self
            .refresh_many(&project, &fresh)
            .into_iter()
            .filter_map(|(id, result)| match result {
                RefreshOutcome::Failed { error } => Some(format!("dataset '{id}': {error}")),
                _ => None,
            })
            .collect();
        if !failures.is_empty() {
            self.retire(fresh);
            return Err(failures.join("; "));
        }
        let kept: BTreeSet<*const Slot> = slots.iter().map(Arc::as_ptr).collect();
        let replaced: Vec<Arc<Slot>> = old
            .slots
            .iter()
            .filter(|slot| !kept.contains(&Arc::as_ptr(slot)))
            .cloned()
            .collect();
        outcome.removed = old
            .slots
            .iter()
            .map(|slot| slot.dataset.id.clone())
            .filter(|id| project.dataset(id).is_none())
            .collect();
        before_swap();
        *write(&self.view) = Arc::new(View {
            generation: old.generation + 1,
            project,
            slots,
        });
        // The sidecar stops naming the replaced tables before they are dropped.
        self.write_sidecar();
        self.retire(replaced);
        Ok(outcome)
    }

    /// Hands slots no view names to [`Snapshots::release_replaced`].
    fn retire(&self, slots: Vec<Arc<Slot>>) {
        lock(&self.replaced).extend(slots);
        self.release_replaced();
    }

    /// Drops what the replaced slots hold once no reader does; a slot is forgotten when it holds
    /// nothing and no refresh of it is running.
    pub(super) fn release_replaced(&self) {
        let slots = std::mem::take(&mut *lock(&self.replaced));
        let mut still = Vec::new();
        for slot in slots {
            {
                let mut serving = lock(&slot.serving);
                let serving = &mut *serving;
                serving.retired.extend(serving.current.take());
                serving.retired.extend(serving.previous.take());
            }
            self.drop_retired(&slot);
            let idle = slot.work.try_lock().is_ok();
            if !(idle && lock(&slot.serving).retired.is_empty()) {
                still.push(slot);
            }
        }
        lock(&self.replaced).extend(still);
    }
}

/// Whether a dataset of the new project serves exactly as the running one: then its snapshots
/// carry over (a changed description or manifest line does not rebuild anything).
fn serves_alike(running: &Dataset, new: &Dataset) -> bool {
    running.id == new.id
        && running.schema == new.schema
        && running.tenant_column == new.tenant_column
        && running.source == new.source
        && running.materialize_budget == new.materialize_budget
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
