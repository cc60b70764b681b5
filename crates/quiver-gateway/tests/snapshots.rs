//! Snapshots against a real quiver server over parquet and CSV parts the tests write:
//! materialize, swap, rollback, warm start from the sidecar and the database file. The failure lab
//! is in `snapshot_failures.rs`, object storage in `snapshots_s3.rs`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use quiver_gateway::snapshot::{RefreshOutcome, SnapshotError, Snapshots};
use support::*;

#[test]
fn materialize_swap_and_rollback() {
    let backend = shared_backend();
    let root = scratch("swap");
    let id = "swap_usage";
    std::fs::create_dir_all(root.join("data")).unwrap();
    write_parquet(&root.join("data/v1.parquet"), 3, true);
    write_json(
        &root.join("data/manifest.json"),
        &manifest(id, "s1", &[("v1.parquet", "parquet")], "BIGINT"),
    );
    let project = project(
        &root,
        vec![dataset(id, source("data/manifest.json"))],
        settings(),
    );
    let snapshots = Snapshots::start(project, backend.clone(), root.join("state"));
    wait_for("the first snapshot", || snapshots.is_ready());

    let first = snapshots.current(id).unwrap();
    assert_eq!(first.snapshot_id, "s1");
    assert_eq!(first.row_count, 3);
    assert_eq!(first.watermark.as_deref(), Some("2026-06-01T00:00:00Z"));
    let first_table = first.table.clone();
    // Sorted by the manifest's sort_columns.
    let first_day = scalar(
        &backend,
        &format!("SELECT date_diff('day', DATE '1970-01-01', day) FROM {first_table} LIMIT 1"),
    );
    assert_eq!(first_day, 20_000 - 2, "rows are in ORDER BY day");
    let remote = scalar(
        &backend,
        &format!("SELECT count(*) FROM {}", first.files_relation),
    );
    assert_eq!(remote, 3, "remote_scan's relation reads the parts");
    drop(first);

    // A new snapshot_id materializes and swaps; the old one is kept as the previous.
    write_parquet(&root.join("data/v2.parquet"), 5, true);
    write_json(
        &root.join("data/manifest.json"),
        &manifest(id, "s2", &[("v2.parquet", "parquet")], "BIGINT"),
    );
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    assert_eq!(
        outcomes[id],
        RefreshOutcome::Swapped {
            snapshot_id: "s2".into(),
            previous_snapshot_id: Some("s1".into())
        }
    );
    assert_eq!(snapshots.current(id).unwrap().row_count, 5);
    assert_eq!(snapshots.get(id, "s1").unwrap().table, first_table);
    assert!(snapshots.get(id, "nope").is_none());
    let status = snapshots.status()["datasets"][id].clone();
    assert_eq!(status["previous_snapshot_id"], "s1");
    assert_eq!(status["materialized_this_run"], 2);

    // The same manifest again: nothing to do.
    let again = snapshots.refresh(None).unwrap();
    assert_eq!(
        again[id],
        RefreshOutcome::Unchanged {
            snapshot_id: "s2".into()
        }
    );

    // A third snapshot: s1's table (no reader holds it) is dropped, s2 is the previous.
    write_json(
        &root.join("data/manifest.json"),
        &manifest(
            id,
            "s3",
            &[("v1.parquet", "parquet"), ("v2.parquet", "parquet")],
            "BIGINT",
        ),
    );
    let third = snapshots.refresh(Some(id)).unwrap();
    assert!(
        matches!(&third[id], RefreshOutcome::Swapped { snapshot_id, .. } if snapshot_id == "s3")
    );
    assert_eq!(snapshots.current(id).unwrap().row_count, 8);
    assert!(
        !table_exists(&backend, &unquoted(&first_table)),
        "s1's table was dropped"
    );
    assert!(snapshots.get(id, "s1").is_none());

    // Rollback serves s2 again and stays there while the manifest still names s3.
    let rolled = snapshots.rollback(id).unwrap();
    assert_eq!(
        (
            rolled.snapshot_id.as_str(),
            rolled.previous_snapshot_id.as_str()
        ),
        ("s2", "s3")
    );
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "s2");
    let pinned = snapshots.refresh(Some(id)).unwrap();
    assert_eq!(
        pinned[id],
        RefreshOutcome::Pinned {
            snapshot_id: "s3".into()
        }
    );
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "s2");
    assert_eq!(snapshots.status()["datasets"][id]["rolled_back_from"], "s3");
    // Rolling back again is rolling forward.
    snapshots.rollback(id).unwrap();
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "s3");

    assert_eq!(
        snapshots.rollback("nope").unwrap_err(),
        SnapshotError::UnknownDataset("nope".into())
    );
    assert!(matches!(
        snapshots.refresh(Some("nope")),
        Err(SnapshotError::UnknownDataset(_))
    ));
    let metrics = snapshots.metrics();
    assert!(metrics.ready);
    assert_eq!(metrics.datasets[0].refresh_ok_total, 5);
    assert!(metrics.datasets[0].last_materialize_seconds.is_some());
    snapshots.stop();
}

#[test]
fn a_rollback_without_a_previous_snapshot_is_refused() {
    let backend = shared_backend();
    let root = scratch("noprev");
    let id = "noprev_usage";
    write_parquet(&root.join("p.parquet"), 2, true);
    write_json(
        &root.join("m.json"),
        &manifest(id, "only", &[("p.parquet", "parquet")], "BIGINT"),
    );
    let project = project(&root, vec![dataset(id, source("m.json"))], settings());
    let snapshots = Snapshots::start(project, backend, root.join("state"));
    wait_for("the snapshot", || snapshots.is_ready());
    assert_eq!(
        snapshots.rollback(id).unwrap_err(),
        SnapshotError::NoPrevious(id.into())
    );
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "only");
}

#[test]
fn warm_start_serves_without_materializing() {
    let state = scratch("warm");
    let root = scratch("warm-project");
    let id = "warm_usage";
    write_parquet(&root.join("p.parquet"), 4, true);
    let csv = "day,tenant,calls\n2026-01-02,t1,7\n2026-01-01,t2,0012\n";
    std::fs::write(root.join("p.csv"), csv).unwrap();
    write_json(
        &root.join("m.json"),
        &manifest(id, "w1", &[("p.parquet", "parquet")], "BIGINT"),
    );
    write_json(
        &root.join("c.json"),
        &manifest("warm_csv", "c1", &[("p.csv", "csv")], "BIGINT"),
    );
    let datasets = || {
        vec![
            dataset(id, source("m.json")),
            dataset("warm_csv", source("c.json")),
        ]
    };

    let backend = start_backend(&state);
    let snapshots = Snapshots::start(
        project(&root, datasets(), settings()),
        backend.clone(),
        state.to_path_buf(),
    );
    wait_for("both snapshots", || snapshots.is_ready());
    let table = snapshots.current(id).unwrap().table.clone();
    let csv_table = snapshots.current("warm_csv").unwrap().table.clone();
    assert_eq!(
        scalar(&backend, &format!("SELECT sum(calls) FROM {csv_table}")),
        19
    );
    snapshots.stop();
    drop(snapshots);
    backend.stop();
    drop(backend);

    // A new server on the same database file, a new registry on the same sidecar. A table the
    // sidecar does not name (a crash between a CREATE and the sidecar's write) is an orphan.
    let backend = start_backend(&state);
    let mut connection = backend.connection().unwrap();
    connection
        .execute("CREATE TABLE snap__warm_usage__99 AS SELECT 1 AS x")
        .unwrap();
    drop(connection);
    let snapshots = Snapshots::start(
        project(&root, datasets(), settings()),
        backend.clone(),
        state.to_path_buf(),
    );
    // Restored before start returned: no wait.
    let restored = snapshots.current(id).expect("restored at start");
    assert_eq!(restored.snapshot_id, "w1");
    assert_eq!(restored.table, table);
    assert!(snapshots.is_ready());
    let status = wait_settled(&snapshots, id);
    wait_settled(&snapshots, "warm_csv");
    assert_eq!(status["state"], "ready");
    assert_eq!(status["materialized_this_run"], 0, "{status}");
    assert_eq!(status["attempts"], 0, "{status}");
    assert_eq!(
        snapshots.status()["datasets"]["warm_csv"]["materialized_this_run"],
        0
    );
    assert_eq!(
        scalar(&backend, &format!("SELECT count(*) FROM {table}")),
        4
    );

    // A changed manifest: the restored snapshot serves until the new one swaps in.
    write_json(
        &root.join("m.json"),
        &manifest(id, "w2", &[("p.parquet", "parquet")], "BIGINT"),
    );
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    assert!(
        matches!(&outcomes[id], RefreshOutcome::Swapped { previous_snapshot_id: Some(p), .. } if p == "w1")
    );
    assert_eq!(
        snapshots.status()["datasets"][id]["materialized_this_run"],
        1
    );
    assert_ne!(snapshots.current(id).unwrap().table, table);
    assert!(
        !table_exists(&backend, "snap__warm_usage__99"),
        "the orphan was dropped"
    );
    assert_eq!(
        snapshots.current(id).unwrap().table,
        "\"snap__warm_usage__100\"",
        "generations continue past every table seen"
    );
    snapshots.stop();
    backend.stop();
}

#[test]
fn the_backend_pools_shared_memory_connections_and_reaches_a_server_by_address() {
    let backend = shared_backend();
    let mut pooled = backend.pool().get().unwrap();
    assert!(
        pooled.uses_shm(),
        "pooled connections over the Unix socket use shared memory"
    );
    assert_eq!(pooled.query_scalar_i64("SELECT 41 + 1").unwrap(), Some(42));
    drop(pooled);
    let mut direct = backend.connection().unwrap();
    assert!(!direct.uses_shm());
    assert_eq!(direct.query_scalar_i64("SELECT 1").unwrap(), Some(1));

    // A second backend reaching the same server by address, with its token.
    let token = direct.options().token.clone();
    let options = quiver_gateway::backend::BackendOptions {
        server: Some((backend.address().clone(), token)),
        state_dir: scratch("by-address").to_path_buf(),
        pool_size: 1,
        pool_wait: Duration::from_secs(30),
        threads: None,
        memory_limit: None,
    };
    let reached = quiver_gateway::backend::Backend::start(options.clone()).unwrap();
    assert_eq!(reached.server_pid(), None);
    reached.stop();
    assert_eq!(
        scalar(&backend, "SELECT 7"),
        7,
        "stopping a reached backend leaves the server"
    );

    // A server that is not there fails the start and names where it looked.
    let nowhere = scratch("nowhere").join("missing.sock");
    let options = quiver_gateway::backend::BackendOptions {
        server: Some((quiver_client::Address::Unix(nowhere.clone()), None)),
        ..options
    };
    let error = quiver_gateway::backend::Backend::start(options)
        .unwrap_err()
        .to_string();
    assert!(error.contains("missing.sock"), "{error}");
}

#[test]
fn the_refresh_interval_picks_up_a_new_manifest() {
    let backend = shared_backend();
    let root = scratch("interval");
    let id = "interval_usage";
    write_parquet(&root.join("p.parquet"), 2, true);
    write_json(
        &root.join("m.json"),
        &manifest(id, "i1", &[("p.parquet", "parquet")], "BIGINT"),
    );
    let mut settings = settings();
    settings.refresh_interval = Some(Duration::from_millis(200));
    let project = project(&root, vec![dataset(id, source("m.json"))], settings);
    let snapshots = Snapshots::start(project, backend, root.join("state"));
    wait_for("i1", || snapshots.is_ready());
    write_json(
        &root.join("m.json"),
        &manifest(
            id,
            "i2",
            &[("p.parquet", "parquet"), ("p.parquet", "parquet")],
            "BIGINT",
        ),
    );
    wait_for("the interval to swap in i2", || {
        snapshots.current(id).is_some_and(|s| s.snapshot_id == "i2")
    });
    assert_eq!(snapshots.current(id).unwrap().row_count, 4);
    assert_eq!(snapshots.get(id, "i1").unwrap().row_count, 2);
    snapshots.stop();
}

#[test]
fn a_stale_snapshot_is_flagged_by_its_strictest_endpoint_and_still_serves() {
    use quiver_gateway::project::{CachePolicy, Endpoint, ServingMode};
    let backend = shared_backend();
    let root = scratch("stale");
    let id = "stale_usage";
    write_parquet(&root.join("p.parquet"), 2, true);
    // The watermark is 2026-06-01: months old.
    write_json(
        &root.join("m.json"),
        &manifest(id, "old", &[("p.parquet", "parquet")], "BIGINT"),
    );
    let endpoint = |name: &str, max_staleness_minutes: Option<u64>| Endpoint {
        name: name.into(),
        version: 1,
        dataset: id.into(),
        description: None,
        serving_mode: ServingMode::LocalTable,
        tenant_column: None,
        max_staleness: max_staleness_minutes.map(|minutes| Duration::from_secs(minutes * 60)),
        params: Vec::new(),
        combinations: None,
        select: Vec::new(),
        filters: Vec::new(),
        group_by: Vec::new(),
        order_by: Vec::new(),
        sort_allowlist: Vec::new(),
        columns: Vec::new(),
        default_limit: 10,
        max_limit: 100,
        cache: CachePolicy::Snapshot,
    };
    let mut project = (*project(&root, vec![dataset(id, source("m.json"))], settings())).clone();
    project.endpoints = vec![
        endpoint("lenient", Some(10_000_000)),
        endpoint("strict", Some(120)),
        endpoint("unbounded", None),
    ];
    let snapshots = Snapshots::start(Arc::new(project), backend, root.join("state"));
    wait_for("the stale snapshot", || snapshots.is_ready());
    let status = snapshots.status()["datasets"][id].clone();
    assert_eq!(status["state"], "ready");
    assert_eq!(status["stale"], true, "{status}");
    assert_eq!(status["max_staleness_minutes"], 120);
    assert!(status["age_seconds"].as_f64().unwrap() > 7_200.0);
    assert_eq!(snapshots.metrics().datasets[0].stale, Some(true));
}
