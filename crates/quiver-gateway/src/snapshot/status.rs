//! What each dataset's snapshots are doing, for `/status`, `/ready` and `/metrics`: its state
//! (`loading | ready | failed`), attempts, the last error, durations, counters, and staleness
//! against the strictest `max_staleness_minutes` of the endpoints that read it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{json, Value};

use super::Snapshot;

/// Where a dataset stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetState {
    /// No snapshot yet, and none has failed since the last attempt began.
    Loading,
    /// A snapshot serves (a later refresh may have failed: see `last_error`).
    Ready,
    /// No snapshot serves and the last attempt failed.
    Failed,
}

/// The counters and last results of one dataset's materializes in this process.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// A refresh of this dataset is running.
    pub refreshing: bool,
    /// Materialize attempts (manifests that needed a new table), successful or not.
    pub attempts: u64,
    /// Tables built in this process (0 after a warm start that needed none).
    pub materialized_this_run: u64,
    /// Refreshes that ended well (a swap or nothing to do) and that failed.
    pub refresh_ok: u64,
    pub refresh_failed: u64,
    /// The last refresh's error, cleared by the next one that ends well.
    pub last_error: Option<String>,
    pub last_materialize: Option<Duration>,
    /// Whether the last refresh ended well (`None` before the first).
    pub last_refresh_ok: Option<bool>,
}

impl Record {
    pub fn state(&self, serving: bool) -> DatasetState {
        match (serving, self.last_refresh_ok) {
            (true, _) => DatasetState::Ready,
            (false, Some(false)) if !self.refreshing => DatasetState::Failed,
            _ => DatasetState::Loading,
        }
    }
}

/// Seconds since the snapshot's watermark (or, without one, since it was materialized).
pub fn age_seconds(snapshot: &Snapshot, now: SystemTime) -> f64 {
    let now_unix = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    match snapshot.watermark_unix {
        Some(watermark) => (now_unix - watermark as f64).max(0.0),
        None => now
            .duration_since(snapshot.materialized_at)
            .unwrap_or_default()
            .as_secs_f64(),
    }
}

/// One dataset's line of `/status`.
pub fn dataset_json(
    record: &Record,
    current: Option<&Snapshot>,
    previous: Option<&Snapshot>,
    rolled_back_from: Option<&str>,
    max_staleness: Option<Duration>,
    now: SystemTime,
) -> Value {
    let age = current.map(|snapshot| age_seconds(snapshot, now));
    let stale = match (age, max_staleness) {
        (Some(age), Some(max)) => Some(age > max.as_secs_f64()),
        _ => None,
    };
    json!({
        "state": record.state(current.is_some()),
        "snapshot_id": current.map(|s| s.snapshot_id.clone()),
        "previous_snapshot_id": previous.map(|s| s.snapshot_id.clone()),
        "watermark": current.and_then(|s| s.watermark.clone()),
        "age_seconds": age.map(f64::round),
        "row_count": current.map(|s| s.row_count),
        "stale": stale,
        "max_staleness_minutes": max_staleness.map(|max| max.as_secs() / 60),
        "refreshing": record.refreshing,
        "attempts": record.attempts,
        "materialized_this_run": record.materialized_this_run,
        "refresh_ok": record.refresh_ok,
        "refresh_failed": record.refresh_failed,
        "last_error": record.last_error,
        "last_materialize_ms": record.last_materialize.map(|d| d.as_millis() as u64),
        "rolled_back_from": rolled_back_from,
    })
}

/// The numbers `/metrics` renders, per dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetMetrics {
    /// The dataset's id.
    pub dataset: String,
    /// Whether it serves a snapshot.
    pub ready: bool,
    /// The serving snapshot's age (see `status::age_seconds`); `None` when nothing serves.
    pub age_seconds: Option<f64>,
    /// `None` when no endpoint of the dataset sets `max_staleness_minutes`, or nothing serves.
    pub stale: Option<bool>,
    /// How long the last materialize took.
    pub last_materialize_seconds: Option<f64>,
    /// Refreshes that ended well, since start.
    pub refresh_ok_total: u64,
    /// Refreshes that failed, since start.
    pub refresh_failed_total: u64,
    /// Whether the last refresh ended well (`None` before the first).
    pub last_refresh_ok: Option<bool>,
    /// The serving snapshot's rows; `None` when nothing serves.
    pub row_count: Option<u64>,
}

/// Every dataset's metrics, in the project's order.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotMetrics {
    /// Whether the gateway is ready by the project's `ready` policy.
    pub ready: bool,
    /// Each dataset's numbers.
    pub datasets: Vec<DatasetMetrics>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_follows_serving_and_the_last_attempt() {
        let mut record = Record::default();
        assert_eq!(record.state(false), DatasetState::Loading);
        record.last_refresh_ok = Some(false);
        assert_eq!(record.state(false), DatasetState::Failed);
        assert_eq!(record.state(true), DatasetState::Ready);
        record.refreshing = true;
        assert_eq!(record.state(false), DatasetState::Loading);
    }

    #[test]
    fn staleness_compares_the_watermark_age_with_the_strictest_endpoint() {
        let now = UNIX_EPOCH + Duration::from_secs(10_000);
        let snapshot = Snapshot {
            dataset: "d".into(),
            snapshot_id: "s".into(),
            table: "\"t\"".into(),
            files_relation: "(SELECT 1)".into(),
            watermark: Some("1970-01-01T02:00:00Z".into()),
            watermark_unix: Some(7_200),
            materialized_at: now,
            row_count: 1,
            lookups: None,
        };
        assert_eq!(age_seconds(&snapshot, now), 2_800.0);
        let record = Record::default();
        let fresh = dataset_json(
            &record,
            Some(&snapshot),
            None,
            None,
            Some(Duration::from_secs(3_600)),
            now,
        );
        assert_eq!(fresh["stale"], false);
        let stale = dataset_json(
            &record,
            Some(&snapshot),
            None,
            None,
            Some(Duration::from_secs(60)),
            now,
        );
        assert_eq!(stale["stale"], true);
        assert_eq!(stale["state"], "ready");
    }
}
