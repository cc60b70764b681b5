//! What snapshots leave behind: retired tables no reader holds, downloaded parts nothing serves,
//! orphan tables a crash left, and the sidecar that lets a restart serve without materializing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::materialize::quote_identifier;
use super::super::sidecar::{Sidecar, SidecarDataset, SIDECAR_VERSION};
use super::super::slot::{lock, Kept, Slot};
use super::super::warm::{generation_of, path_component, to_sidecar};
use super::Snapshots;
use super::RETIRED_MAX;

impl Snapshots {
    pub(super) fn parts_root(&self) -> PathBuf {
        self.state_dir.join("parts")
    }

    pub(super) fn parts_dir_in_use(&self, slot: &Slot, dir: &Path) -> bool {
        let serving = lock(&slot.serving);
        let in_use = [serving.current.as_ref(), serving.previous.as_ref()]
            .into_iter()
            .flatten()
            .chain(serving.retired.iter())
            .any(|kept| kept.parts_dir.as_deref() == Some(dir));
        in_use
    }

    /// Drops the tables (and downloaded parts) of retired snapshots no reader holds any more.
    pub(super) fn drop_retired(&self, slot: &Slot) {
        let released: Vec<Kept> = {
            let mut serving = lock(&slot.serving);
            let retired = std::mem::take(&mut serving.retired);
            let overflow = retired.len().saturating_sub(RETIRED_MAX);
            let mut released = Vec::new();
            for (index, kept) in retired.into_iter().enumerate() {
                if index < overflow || Arc::strong_count(&kept.snapshot) == 1 {
                    released.push(kept);
                } else {
                    serving.retired.push(kept);
                }
            }
            released
        };
        if released.is_empty() {
            return;
        }
        let mut connection = match self.backend.connection() {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!(%error, "cannot drop retired snapshot tables now");
                lock(&slot.serving).retired.extend(released);
                return;
            }
        };
        for kept in released {
            if let Err(error) =
                connection.execute(&format!("DROP TABLE IF EXISTS {}", kept.snapshot.table))
            {
                tracing::warn!(table = %kept.table_name, %error, "cannot drop a retired snapshot table");
            }
            if let Some(dir) = &kept.parts_dir {
                if !self.parts_dir_in_use(slot, dir) {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
        }
    }

    pub(super) fn write_sidecar(&self) {
        let _sidecar = lock(&self.sidecar);
        let mut sidecar = Sidecar {
            version: SIDECAR_VERSION,
            datasets: BTreeMap::new(),
        };
        for slot in &self.view().slots {
            let serving = lock(&slot.serving);
            sidecar.datasets.insert(
                slot.dataset.id.clone(),
                SidecarDataset {
                    schema_sha256: slot.schema_sha256.clone(),
                    current: serving.current.as_ref().map(to_sidecar),
                    previous: serving.previous.as_ref().map(to_sidecar),
                    rolled_back_from: serving.rolled_back_from.clone(),
                },
            );
        }
        if let Err(error) = sidecar.write(&self.state_dir) {
            tracing::warn!(%error, "cannot write the sidecar: a restart materializes again");
        }
    }

    /// Drops snapshot tables of this project's datasets that nothing serves (a crash between a
    /// `CREATE` and the sidecar's write leaves one), when the server is this gateway's own, and
    /// downloaded parts nothing serves.
    pub(super) fn remove_orphans(&self, tables: &BTreeSet<String>) {
        for slot in &self.view().slots {
            let kept: Vec<Kept> = {
                let serving = lock(&slot.serving);
                [serving.current.clone(), serving.previous.clone()]
                    .into_iter()
                    .flatten()
                    .collect()
            };
            if self.backend.server_pid().is_some() {
                let orphans: Vec<&String> = tables
                    .iter()
                    .filter(|table| generation_of(&slot.dataset.id, table).is_some())
                    .filter(|table| !kept.iter().any(|kept| kept.table_name == **table))
                    .collect();
                if !orphans.is_empty() {
                    if let Ok(mut connection) = self.backend.connection() {
                        for table in orphans {
                            let sql = format!("DROP TABLE IF EXISTS {}", quote_identifier(table));
                            if let Err(error) = connection.execute(&sql) {
                                tracing::warn!(%table, %error, "cannot drop an orphan snapshot table");
                            }
                        }
                    }
                }
            }
            let dir = self.parts_root().join(path_component(&slot.dataset.id));
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if !kept
                    .iter()
                    .any(|kept| kept.parts_dir.as_deref() == Some(path.as_path()))
                {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
}
