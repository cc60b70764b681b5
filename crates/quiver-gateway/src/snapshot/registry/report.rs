//! What the registry reports: every dataset's state for `/status`, its numbers for `/metrics`.

use std::time::SystemTime;

use super::super::slot::lock;
use super::super::status::{self, DatasetMetrics, SnapshotMetrics};
use super::Snapshots;

impl Snapshots {
    /// `{"ready": bool, "datasets": {<id>: {state, snapshot_id, ...}}}`.
    pub fn status(&self) -> serde_json::Value {
        let now = SystemTime::now();
        let view = self.view();
        let mut datasets = serde_json::Map::new();
        for slot in &view.slots {
            let (current, previous, rolled_back_from) = {
                let serving = lock(&slot.serving);
                (
                    serving.current.as_ref().map(|kept| kept.snapshot.clone()),
                    serving.previous.as_ref().map(|kept| kept.snapshot.clone()),
                    serving.rolled_back_from.clone(),
                )
            };
            let record = lock(&slot.record).clone();
            datasets.insert(
                slot.dataset.id.clone(),
                status::dataset_json(
                    &record,
                    current.as_deref(),
                    previous.as_deref(),
                    rolled_back_from.as_deref(),
                    view.max_staleness(&slot.dataset.id),
                    now,
                ),
            );
        }
        serde_json::json!({ "ready": view.is_ready(), "datasets": datasets })
    }

    /// The numbers `/metrics` renders.
    pub fn metrics(&self) -> SnapshotMetrics {
        let now = SystemTime::now();
        let view = self.view();
        let datasets = view
            .slots
            .iter()
            .map(|slot| {
                let current = lock(&slot.serving)
                    .current
                    .as_ref()
                    .map(|kept| kept.snapshot.clone());
                let record = lock(&slot.record).clone();
                let age_seconds = current.as_deref().map(|s| status::age_seconds(s, now));
                let max_staleness = view.max_staleness(&slot.dataset.id);
                DatasetMetrics {
                    dataset: slot.dataset.id.clone(),
                    ready: current.is_some(),
                    age_seconds,
                    stale: age_seconds
                        .zip(max_staleness)
                        .map(|(age, max)| age > max.as_secs_f64()),
                    last_materialize_seconds: record.last_materialize.map(|d| d.as_secs_f64()),
                    refresh_ok_total: record.refresh_ok,
                    refresh_failed_total: record.refresh_failed,
                    last_refresh_ok: record.last_refresh_ok,
                    row_count: current.map(|s| s.row_count),
                }
            })
            .collect();
        SnapshotMetrics {
            ready: view.is_ready(),
            datasets,
        }
    }
}
