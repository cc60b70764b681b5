//! Snapshots: each dataset's manifest read (a file or object storage), its parts materialized into
//! a table of the server, swapped in atomically, the previous one kept for rollback, a sidecar for
//! warm starts, readiness per dataset.

use std::sync::Arc;
use std::time::SystemTime;

use crate::lookup::Lookups;

pub mod check;
pub(crate) mod fetch;
pub(crate) mod manifest;
pub(crate) mod materialize;
pub(crate) mod registry;
pub(crate) mod sidecar;
mod slot;
pub(crate) mod status;
pub(crate) mod types;
mod warm;

pub use registry::{
    RefreshOutcome, ReloadOutcome, RollbackOutcome, SnapshotError, Snapshots, View,
};
pub use status::{DatasetMetrics, DatasetState, SnapshotMetrics};

/// One materialized snapshot of a dataset, as the serving side sees it. Immutable: a new snapshot
/// is a new value, swapped in whole.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The id of the dataset it belongs to.
    pub dataset: String,
    /// The manifest's `snapshot_id`.
    pub snapshot_id: String,
    /// The SQL relation `local_table` endpoints read: the quoted name of its table on the server.
    pub table: String,
    /// The SQL relation `remote_scan` endpoints read: a scan of the snapshot's part files.
    pub files_relation: String,
    /// The manifest's `watermark` (RFC 3339), what freshness is measured from.
    pub watermark: Option<String>,
    /// The watermark in seconds since the Unix epoch.
    pub watermark_unix: Option<i64>,
    /// When its materialize finished (or, after a warm start, when it first did).
    pub materialized_at: SystemTime,
    /// How many rows it holds.
    pub row_count: u64,
    /// Its rows in memory, indexed for keyed lookups; `None`: every request runs a statement.
    pub lookups: Option<Arc<Lookups>>,
}
