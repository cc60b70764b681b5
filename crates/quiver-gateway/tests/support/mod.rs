//! What the snapshot tests share: scratch directories, a real quiver server behind a
//! [`Backend`], projects built in code, parquet and CSV parts written by the test, and polling
//! with generous bounds (never a timing assertion).

#![allow(dead_code)] // each test binary uses part of its support

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Date32Array, Int32Array, Int64Array, RecordBatch, StringArray};
use quiver_gateway::backend::{Backend, BackendOptions};
use quiver_gateway::project::{
    AuthMode, Column, ColumnType, ConnectionSettings, CorsOrigins, Dataset, DoubleSums, Project,
    ReadyPolicy, RepeatedParams, Settings, SnapshotSource,
};
use quiver_gateway::snapshot::Snapshots;

/// How long a condition may take to hold on a loaded machine.
pub const WAIT_MAX: Duration = Duration::from_secs(90);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh directory no other test uses (short: a server's socket may live in it), removed when
/// dropped unless the test failed (then it stays, to look at).
pub struct Scratch(PathBuf);

impl Scratch {
    /// The directory, never removed (a server that outlives the test uses it).
    pub fn keep(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "qgw-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A server of its own with its database file in `state_dir`.
pub fn start_backend(state_dir: &Path) -> Arc<Backend> {
    let options = BackendOptions {
        server: None,
        state_dir: state_dir.to_path_buf(),
        pool_size: 2,
        pool_wait: Duration::from_secs(30),
        threads: Some(2),
        memory_limit: None,
    };
    Arc::new(Backend::start(options).unwrap_or_else(|error| {
        panic!(
            "the quiver server did not start ({error}); build it (./quiver test runs \
             tools/setup.sh) or point QUIVER_SERVER_COMMAND at one"
        )
    }))
}

/// The server the tests of a binary share (each test uses datasets of its own).
pub fn shared_backend() -> Arc<Backend> {
    static BACKEND: OnceLock<Arc<Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| start_backend(&scratch("shared-server").keep()))
        .clone()
}

pub fn settings() -> Settings {
    Settings {
        auth: AuthMode::None,
        ready: ReadyPolicy::All,
        materialize_parallelism: 2,
        materialize_budget: Duration::from_secs(300),
        refresh_interval: None,
        cache_max_bytes: 1 << 20,
        lookup_max_bytes: 0,
        pool_size: 2,
        pool_wait: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        connections: ConnectionSettings {
            max: 64,
            admin_max: 16,
            per_peer_max: 64,
            header_read_timeout: Duration::from_secs(10),
        },
        // Filled in by `project`: the project's own directory.
        data_roots: Vec::new(),
        repeated_params: RepeatedParams::Last,
        cors: CorsOrigins::Off,
        keyed_revalidation: false,
        double_sums: DoubleSums::Bigint,
    }
}

/// The columns every test dataset declares.
pub fn usage_schema() -> Vec<Column> {
    [
        ("day", ColumnType::Date),
        ("tenant", ColumnType::Varchar),
        ("calls", ColumnType::Bigint),
    ]
    .into_iter()
    .map(|(name, column_type)| Column {
        name: name.into(),
        column_type,
    })
    .collect()
}

/// A dataset read from a manifest file at `path` (relative to the project).
pub fn source(path: &str) -> SnapshotSource {
    SnapshotSource::Manifest(path.into())
}

pub fn dataset(id: &str, source: SnapshotSource) -> Dataset {
    Dataset {
        id: id.into(),
        description: None,
        schema: usage_schema(),
        tenant_column: Some("tenant".into()),
        source,
        manifest_at: (format!("datasets/{id}.yml").into(), 2),
        materialize_budget: None,
        unchecked_columns: Default::default(),
    }
}

pub fn project(root: &Path, datasets: Vec<Dataset>, mut settings: Settings) -> Arc<Project> {
    if settings.data_roots.is_empty() {
        settings.data_roots.push(root.to_path_buf());
    }
    Arc::new(Project {
        root: root.to_path_buf(),
        settings,
        datasets,
        endpoints: Vec::new(),
        keys_file: None,
        keys: Vec::new(),
    })
}

/// A required-dataset policy.
pub fn required(names: &[&str]) -> ReadyPolicy {
    ReadyPolicy::Required(
        names
            .iter()
            .map(|name| name.to_string())
            .collect::<BTreeSet<_>>(),
    )
}

/// A parquet part of `rows` rows (days descending, so `ORDER BY day` is visible); `calls` as
/// 64-bit integers when `wide_calls`, else as 32-bit ones.
pub fn write_parquet(path: &Path, rows: i32, wide_calls: bool) -> u64 {
    let days: ArrayRef = Arc::new(Date32Array::from_iter_values((0..rows).map(|i| 20_000 - i)));
    let tenants: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..rows).map(|i| format!("t{}", i % 3)),
    ));
    let calls: ArrayRef = if wide_calls {
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| i as i64 * 10),
        ))
    } else {
        Arc::new(Int32Array::from_iter_values((0..rows).map(|i| i * 10)))
    };
    let batch =
        RecordBatch::try_from_iter([("day", days), ("tenant", tenants), ("calls", calls)]).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// A manifest for `dataset` over `files` (`(path, format)`), with `calls` declared as
/// `calls_type`.
pub fn manifest(
    dataset: &str,
    snapshot_id: &str,
    files: &[(&str, &str)],
    calls_type: &str,
) -> serde_json::Value {
    let files: Vec<serde_json::Value> = files
        .iter()
        .map(|(path, format)| serde_json::json!({"path": path, "format": format}))
        .collect();
    serde_json::json!({
        "dataset_id": dataset,
        "snapshot_id": snapshot_id,
        "created_at": "2026-06-01T06:00:00Z",
        "watermark": "2026-06-01T00:00:00Z",
        "schema": [
            {"name": "day", "type": "DATE"},
            {"name": "tenant", "type": "VARCHAR"},
            {"name": "calls", "type": calls_type}
        ],
        "files": files,
        "sort_columns": ["day"],
        "producer": "the snapshot tests"
    })
}

pub fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// Polls `condition` until it holds, at most [`WAIT_MAX`]; then fails naming `what`.
pub fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT_MAX;
    while !condition() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `dataset`'s first refresh of this run has ended (well or not).
pub fn wait_settled(snapshots: &Snapshots, dataset: &str) -> serde_json::Value {
    let mut status = serde_json::Value::Null;
    wait_for(&format!("{dataset} to settle"), || {
        status = snapshots.status()["datasets"][dataset].clone();
        let ended = status["refresh_ok"].as_u64().unwrap_or(0)
            + status["refresh_failed"].as_u64().unwrap_or(0);
        ended > 0 && status["refreshing"] == false
    });
    status
}

/// One `i64` from the server.
pub fn scalar(backend: &Backend, sql: &str) -> i64 {
    let mut connection = backend.connection().unwrap();
    connection.query_scalar_i64(sql).unwrap().unwrap()
}

/// Whether the server has a table named `name` (unquoted).
pub fn table_exists(backend: &Backend, name: &str) -> bool {
    let sql = format!(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = '{}'",
        name.replace('\'', "''")
    );
    scalar(backend, &sql) == 1
}

/// `"snap__x__1"` → `snap__x__1`.
pub fn unquoted(table: &str) -> String {
    table.trim_matches('"').replace("\"\"", "\"")
}
