//! The snapshot failure lab against a real spawned quiver server: a dataset that cannot load, a
//! type that narrowed, a materialize over its budget; each gives its documented state and the other
//! datasets keep serving.

mod support;

use std::time::Duration;

use quiver_gateway::snapshot::{RefreshOutcome, Snapshots};
use support::*;

#[test]
fn failure_lab_one_failing_dataset_never_blocks_the_others() {
    let backend = shared_backend();
    let root = scratch("lab");
    write_parquet(&root.join("good.parquet"), 3, true);
    write_parquet(&root.join("int32.parquet"), 3, false);
    write_json(
        &root.join("good.json"),
        &manifest("lab_good", "g1", &[("good.parquet", "parquet")], "BIGINT"),
    );
    std::fs::write(
        root.join("bad.json"),
        b"{\"dataset_id\": \"lab_bad\", \"files\": [",
    )
    .unwrap();
    let mut empty_id = manifest("lab_fields", "", &[("good.parquet", "parquet")], "BIGINT");
    empty_id["schema"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "day", "type": "DATE"}));
    write_json(&root.join("fields.json"), &empty_id);
    write_json(
        &root.join("missing.json"),
        &manifest(
            "lab_missing",
            "m1",
            &[("good.parquet", "parquet"), ("gone.parquet", "parquet")],
            "BIGINT",
        ),
    );
    // The manifest narrows calls to INTEGER where the dataset declares BIGINT.
    write_json(
        &root.join("narrow.json"),
        &manifest(
            "lab_narrow",
            "n1",
            &[("good.parquet", "parquet")],
            "INTEGER",
        ),
    );
    // The manifest keeps BIGINT, but the part holds INTEGER.
    write_json(
        &root.join("narrow_files.json"),
        &manifest(
            "lab_narrow_files",
            "f1",
            &[("int32.parquet", "parquet")],
            "BIGINT",
        ),
    );
    // A widened source (BIGINT data for an INTEGER contract) is allowed and cast to the contract.
    write_json(
        &root.join("wide.json"),
        &manifest("lab_wide", "w1", &[("good.parquet", "parquet")], "BIGINT"),
    );
    let mut wide = dataset("lab_wide", source("wide.json"));
    wide.schema[2].column_type = quiver_gateway::project::ColumnType::Integer;

    let datasets = vec![
        dataset("lab_good", source("good.json")),
        dataset("lab_bad", source("bad.json")),
        dataset("lab_fields", source("fields.json")),
        dataset("lab_missing", source("missing.json")),
        dataset("lab_narrow", source("narrow.json")),
        dataset("lab_narrow_files", source("narrow_files.json")),
        dataset("lab_nowhere", source("no/such/manifest.json")),
        wide,
    ];
    let mut settings = settings();
    settings.ready = required(&["lab_good", "lab_wide"]);
    let snapshots = Snapshots::start(
        project(&root, datasets, settings),
        backend.clone(),
        root.join("state"),
    );
    wait_for("lab_good and lab_wide", || snapshots.is_ready());
    let wide_table = snapshots.current("lab_wide").unwrap().table.clone();
    let cast = format!("SELECT count(*) FROM {wide_table} WHERE typeof(calls) = 'INTEGER'");
    assert_eq!(scalar(&backend, &cast), 3, "cast to the declared INTEGER");
    let expectations = [
        ("lab_bad", "not JSON"),
        ("lab_fields", "snapshot_id: must not be empty"),
        ("lab_fields", "schema[3].name: duplicate column 'day'"),
        ("lab_missing", "files[1].path: gone.parquet is missing"),
        ("lab_narrow", "column 'calls' is INTEGER in the manifest"),
        ("lab_narrow_files", "column 'calls' is INTEGER in the parts"),
        ("lab_nowhere", "manifest.json"),
    ];
    for (id, expected) in expectations {
        let status = wait_settled(&snapshots, id);
        assert_eq!(status["state"], "failed", "{id}: {status}");
        let error = status["last_error"].as_str().unwrap_or_default();
        assert!(
            error.contains(expected),
            "{id}: '{expected}' not in '{error}'"
        );
        assert!(snapshots.current(id).is_none());
    }
    assert_eq!(snapshots.status()["datasets"]["lab_good"]["state"], "ready");
    assert!(snapshots.is_ready(), "the required dataset serves");
    let metrics = snapshots.metrics();
    assert_eq!(metrics.datasets.iter().filter(|d| d.ready).count(), 2);
    assert!(metrics.datasets.iter().any(|d| d.refresh_failed_total >= 1));
}

#[test]
fn a_narrowed_type_is_refused_and_the_previous_snapshot_keeps_serving() {
    let backend = shared_backend();
    let root = scratch("narrow");
    let id = "narrow_usage";
    write_parquet(&root.join("p.parquet"), 3, true);
    write_json(
        &root.join("m.json"),
        &manifest(id, "v1", &[("p.parquet", "parquet")], "BIGINT"),
    );
    let project = project(&root, vec![dataset(id, source("m.json"))], settings());
    let snapshots = Snapshots::start(project, backend, root.join("state"));
    wait_for("v1", || snapshots.is_ready());

    write_json(
        &root.join("m.json"),
        &manifest(id, "v2", &[("p.parquet", "parquet")], "INTEGER"),
    );
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    let RefreshOutcome::Failed { error } = &outcomes[id] else {
        panic!("a narrowed type was accepted: {outcomes:?}");
    };
    assert!(
        error.contains("not compatible with the dataset's BIGINT"),
        "{error}"
    );
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "v1");
    let status = snapshots.status()["datasets"][id].clone();
    assert_eq!(status["state"], "ready");
    assert_eq!(status["refresh_failed"], 1);
    assert!(status["last_error"].as_str().unwrap().contains("INTEGER"));

    // A manifest rewritten under the same snapshot_id is refused too.
    write_json(
        &root.join("m.json"),
        &manifest(
            id,
            "v1",
            &[("p.parquet", "parquet"), ("p.parquet", "parquet")],
            "BIGINT",
        ),
    );
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    assert!(
        matches!(&outcomes[id], RefreshOutcome::Failed { error } if error.contains("snapshot_id 'v1' did not"))
    );
    assert_eq!(snapshots.current(id).unwrap().row_count, 3);
}

#[test]
fn a_materialize_over_its_budget_is_cancelled_while_another_dataset_becomes_ready() {
    let backend = shared_backend();
    let root = scratch("budget");
    // One CSV listed many times: a scan of a billion rows from a few megabytes on disk.
    let mut csv = String::from("day,tenant,calls\n");
    for i in 0..200_000 {
        csv.push_str(&format!("2026-01-{:02},t{},{}\n", 1 + i % 28, i % 7, i));
    }
    std::fs::write(root.join("big.csv"), csv).unwrap();
    let parts: Vec<(&str, &str)> = (0..5_000).map(|_| ("big.csv", "csv")).collect();
    write_json(
        &root.join("slow.json"),
        &manifest("budget_slow", "b1", &parts, "BIGINT"),
    );
    write_parquet(&root.join("quick.parquet"), 3, true);
    write_json(
        &root.join("quick.json"),
        &manifest(
            "budget_quick",
            "q1",
            &[("quick.parquet", "parquet")],
            "BIGINT",
        ),
    );
    let mut slow = dataset("budget_slow", source("slow.json"));
    slow.materialize_budget = Some(Duration::from_secs(1));
    let mut settings = settings();
    settings.ready = quiver_gateway::project::ReadyPolicy::Any;
    let project = project(
        &root,
        vec![slow, dataset("budget_quick", source("quick.json"))],
        settings,
    );
    let snapshots = Snapshots::start(project, backend.clone(), root.join("state"));

    wait_for("the quick dataset", || {
        snapshots.current("budget_quick").is_some()
    });
    assert!(snapshots.is_ready());
    let status = wait_settled(&snapshots, "budget_slow");
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["last_error"].as_str().unwrap();
    assert!(error.contains("exceeded its budget"), "{error}");
    assert_eq!(status["attempts"], 1);
    assert!(snapshots.current("budget_slow").is_none());
    // The cancelled statement left no table behind.
    let leftovers = scalar(
        &backend,
        "SELECT count(*) FROM duckdb_tables() WHERE starts_with(table_name, 'snap__budget_slow__')",
    );
    assert_eq!(leftovers, 0);
    // And the server still serves.
    let quick = snapshots.current("budget_quick").unwrap();
    assert_eq!(
        scalar(&backend, &format!("SELECT count(*) FROM {}", quick.table)),
        3
    );
}
