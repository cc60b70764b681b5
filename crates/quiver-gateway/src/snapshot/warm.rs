//! Warm starts: the sidecar's snapshots restored when the server still has their tables and the
//! dataset's declared schema is unchanged, the conversions between kept snapshots and sidecar
//! entries, and the names of snapshot tables (`snap__<dataset>__<generation>`).

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::materialize::{quote_identifier, quote_literal};
use super::sidecar::{Sidecar, SidecarSnapshot};
use super::slot::{Kept, Serving, Slot};
use super::status::Record;
use super::Snapshot;
use crate::backend::Backend;
use crate::project::Dataset;

/// The prefix of every snapshot table: `snap__<dataset>__<generation>`.
pub(super) const TABLE_PREFIX: &str = "snap__";

/// Builds a dataset's slot, restoring the sidecar's snapshots whose tables the server still has
/// and whose dataset schema is unchanged.
pub(super) fn restore(dataset: &Dataset, sidecar: &Sidecar, tables: &BTreeSet<String>) -> Slot {
    let schema_sha256 = schema_sha256(dataset);
    let mut serving = Serving::default();
    if let Some(saved) = sidecar
        .datasets
        .get(&dataset.id)
        .filter(|saved| saved.schema_sha256 == schema_sha256)
    {
        let usable = |saved: &Option<SidecarSnapshot>| {
            saved
                .as_ref()
                .filter(|snapshot| tables.contains(&snapshot.table))
                .map(|snapshot| from_sidecar(&dataset.id, snapshot))
        };
        serving.current = usable(&saved.current);
        if serving.current.is_some() {
            serving.previous = usable(&saved.previous);
            serving.rolled_back_from = saved.rolled_back_from.clone();
        }
    }
    let generation = tables
        .iter()
        .filter_map(|table| generation_of(&dataset.id, table))
        .max()
        .map_or(1, |newest| newest + 1);
    if let Some(current) = &serving.current {
        tracing::info!(dataset = %dataset.id, snapshot_id = %current.snapshot.snapshot_id, "restored from the sidecar");
    }
    Slot {
        dataset: dataset.clone(),
        schema_sha256,
        work: Mutex::new(()),
        serving: Mutex::new(serving),
        record: Mutex::new(Record::default()),
        next_generation: Arc::new(AtomicU64::new(generation)),
    }
}

pub(super) fn from_sidecar(dataset: &str, saved: &SidecarSnapshot) -> Kept {
    Kept {
        snapshot: Arc::new(Snapshot {
            dataset: dataset.into(),
            snapshot_id: saved.snapshot_id.clone(),
            table: quote_identifier(&saved.table),
            files_relation: saved.files_relation.clone(),
            watermark: saved.watermark.clone(),
            watermark_unix: saved.watermark_unix,
            materialized_at: UNIX_EPOCH + Duration::from_secs(saved.materialized_at_unix),
            row_count: saved.row_count,
            lookups: None,
        }),
        table_name: saved.table.clone(),
        manifest_sha256: saved.manifest_sha256.clone(),
        parts_dir: saved.parts_dir.clone(),
        lookups_tried: false,
    }
}

pub(super) fn to_sidecar(kept: &Kept) -> SidecarSnapshot {
    let snapshot = &kept.snapshot;
    SidecarSnapshot {
        table: kept.table_name.clone(),
        snapshot_id: snapshot.snapshot_id.clone(),
        manifest_sha256: kept.manifest_sha256.clone(),
        watermark: snapshot.watermark.clone(),
        watermark_unix: snapshot.watermark_unix,
        row_count: snapshot.row_count,
        files_relation: snapshot.files_relation.clone(),
        materialized_at_unix: snapshot
            .materialized_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs(),
        parts_dir: kept.parts_dir.clone(),
    }
}

/// The names of the server's snapshot tables.
pub(super) fn snapshot_tables(backend: &Backend) -> Result<BTreeSet<String>, String> {
    let mut connection = backend.connection().map_err(|error| error.to_string())?;
    let sql = format!(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' \
         AND starts_with(table_name, {})",
        quote_literal(TABLE_PREFIX)
    );
    let batches = connection
        .query_arrow(&sql)
        .map_err(|error| error.to_string())?;
    let mut names = BTreeSet::new();
    for batch in &batches {
        let column = arrow_cast::cast(batch.column(0), &arrow_schema::DataType::Utf8)
            .map_err(|error| error.to_string())?;
        let column = column
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("a cast to Utf8 is a StringArray");
        names.extend(column.iter().flatten().map(str::to_string));
    }
    Ok(names)
}

/// `n` when `table` is `snap__<dataset>__<n>`.
pub(super) fn generation_of(dataset: &str, table: &str) -> Option<u64> {
    let digits = table
        .strip_prefix(TABLE_PREFIX)?
        .strip_prefix(dataset)?
        .strip_prefix("__")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A name safe as one path component: anything but ASCII letters, digits, `-`, `_` and `.`
/// becomes `_` (and `.`/`..` alone are refused by the manifest and the project).
pub(super) fn path_component(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The SHA-256 of a dataset's declared columns and types.
pub(super) fn schema_sha256(dataset: &Dataset) -> String {
    let mut hasher = Sha256::new();
    for column in &dataset.schema {
        hasher.update(column.name.as_bytes());
        hasher.update([0]);
        hasher.update(column.column_type.sql().as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_are_read_from_table_names() {
        assert_eq!(generation_of("usage", "snap__usage__12"), Some(12));
        assert_eq!(generation_of("usage", "snap__usage_daily__3"), None);
        assert_eq!(generation_of("usage", "snap__usage__"), None);
        assert_eq!(generation_of("usage", "snap__usage__1x"), None);
        assert_eq!(path_component("a/b c..d"), "a_b_c..d");
    }
}
