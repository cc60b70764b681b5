//! The keyed lookups a snapshot carries (crate::lookup): built beside a new snapshot as it is
//! materialized, or attached to one restored at start once its first refresh finds nothing new.

use std::sync::Arc;

use super::super::slot::{lock, Slot};
use super::super::Snapshot;
use super::Snapshots;
use crate::lookup::{self, Lookups};
use crate::project::Project;

impl Snapshots {
    /// A snapshot's keyed lookups, if its endpoints use them and its rows fit (a failure to read
    /// them only costs speed: every request runs its statement).
    pub(super) fn lookups(
        &self,
        connection: &mut quiver_client::Connection,
        project: &Project,
        dataset: &crate::project::Dataset,
        table: &str,
    ) -> Option<Arc<Lookups>> {
        match lookup::build(connection, project, dataset, table, &self.lookup_budget) {
            Ok(lookups) => lookups.map(Arc::new),
            Err(error) => {
                tracing::warn!(dataset = %dataset.id, %error, "keyed lookups are off for this snapshot");
                None
            }
        }
    }

    /// Builds the keyed lookups of a snapshot restored at start (its refresh found nothing to
    /// do), and swaps it for the same snapshot with them. Called with the dataset's `work` held.
    pub(super) fn attach_lookups(&self, project: &Project, slot: &Slot) {
        let Some(kept) = lock(&slot.serving).current.clone() else {
            return;
        };
        if kept.lookups_tried {
            return;
        }
        let lookups = match self.backend.connection() {
            Ok(mut connection) => self.lookups(
                &mut connection,
                project,
                &slot.dataset,
                &kept.snapshot.table,
            ),
            Err(error) => {
                tracing::warn!(dataset = %slot.dataset.id, %error, "keyed lookups are off for this snapshot");
                None
            }
        };
        let mut serving = lock(&slot.serving);
        if let Some(current) = serving.current.as_mut() {
            if Arc::ptr_eq(&current.snapshot, &kept.snapshot) {
                current.lookups_tried = true;
                current.snapshot = Arc::new(Snapshot {
                    lookups,
                    ..(*kept.snapshot).clone()
                });
            }
        }
    }

    /// Bytes keyed lookups hold now.
    pub fn lookup_bytes(&self) -> u64 {
        self.lookup_budget.used()
    }
}
