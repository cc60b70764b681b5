//! `load` over whole projects written to a temporary directory: a good one loads into the model,
//! and a bad one reports every problem with its file and line.

use std::path::{Path, PathBuf};

use super::*;

/// A temporary project directory, removed when dropped.
pub struct TempProject {
    pub dir: PathBuf,
}

impl TempProject {
    pub fn new(files: &[(&str, &str)]) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "quiver-gateway-project-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        TempProject { dir }
    }
}

impl Drop for TempProject {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub const PROJECT: &str = "version: 1\ndatasets_dir: datasets\nendpoints_dir: endpoints\nkeys: keys/keys.yml\nauth: required\nobject_store_mode: local\ngateway:\n  ready: [usage]\n  materialize: { parallelism: 3, budget_seconds: 60 }\n  cache: { max_bytes: 1048576 }\n";

pub const USAGE: &str = "id: usage
description: daily usage
tenant_column: tenant_id
manifest: data/usage/manifest.json
schema:
  - { name: usage_date, type: DATE }
  - { name: tenant_id, type: VARCHAR }
  - { name: account_id, type: VARCHAR }
  - { name: region, type: VARCHAR }
  - { name: api_calls, type: BIGINT }
  - { name: storage_gb, type: DOUBLE }
  - { name: active, type: BOOLEAN }
  - { name: stats, type: JSON }
";

pub const SUMMARY: &str = "name: usage_summary
version: 1
dataset: usage
owner: analytics
serving_mode: local_table
freshness: { max_staleness_minutes: 120 }
tenant: { column: tenant_id }
params:
  - { name: account_id, type: string }
  - { name: from, type: date, required: true }
  - { name: to, type: date, required: true }
  - { name: region, type: enum, enum: [eu, us], aliases: { europe: eu } }
  - { name: regions, type: enum, enum: [eu, us, ap], max_values: 2 }
combinations:
  - [from, to]
  - [account_id, from, to]
  - [from, region, to]
  - [from, regions, to]
query:
  group_by: [account_id]
  select:
    - { as: account_id, column: account_id }
    - { as: api_calls_total, column: api_calls, agg: sum }
    - { as: storage_gb_avg, column: storage_gb, agg: avg }
  filters:
    - { column: account_id, op: eq, param: account_id }
    - { column: usage_date, op: gte, param: from }
    - { column: usage_date, op: lte, param: to }
    - { column: region, op: eq, param: region }
    - { column: region, op: in, param: regions }
  order_by:
    - { column: api_calls_total, dir: desc }
columns: [account_id, api_calls_total, storage_gb_avg]
sort: [account_id, api_calls_total]
pagination: { default_limit: 50, max_limit: 100 }
cache: { policy: snapshot }
";

pub const DAILY: &str = "name: usage_daily
version: 3
dataset: usage
params:
  - { name: min_calls, type: integer, min: 0, max: 1000000, default: 0 }
  - { name: account_prefix, type: string }
  - { name: no_region, type: boolean }
  - { name: days, type: date }
query:
  select:
    - { as: usage_date, column: usage_date }
    - { as: account_id, column: account_id }
    - { as: region, column: region }
    - { as: api_calls, column: api_calls }
    - { as: stats, column: stats }
  filters:
    - { column: api_calls, op: gte, param: min_calls }
    - { column: account_id, op: prefix, param: account_prefix }
    - { column: region, op: is_null, param: no_region }
    - { column: usage_date, op: between, param: days }
  order_by:
    - { column: usage_date }
columns: [usage_date, account_id, region, api_calls, stats]
";

pub const KEYS: &str = "keys:
  - id: acme_prod
    hash: \"745ce437a64ab1f020c303be50aa3785e742b72e61533d692f7aa024ff16b121\"
    tenant: tenant_acme
    endpoints: [usage_summary, usage_daily]
    status: active
    expires_at: 2030-01-01T00:00:00Z
    rate_limit_per_second: 50
  - id: old
    hash: \"0000000000000000000000000000000000000000000000000000000000000000\"
    tenant: tenant_acme
    endpoints: [usage_daily]
    status: revoked
";

pub fn good_project() -> TempProject {
    TempProject::new(&[
        ("offloader.yml", PROJECT),
        ("datasets/usage.yml", USAGE),
        ("endpoints/summary.yml", SUMMARY),
        ("endpoints/daily.yml", DAILY),
        ("keys/keys.yml", KEYS),
    ])
}

#[test]
fn a_good_project_loads_into_the_model() {
    let project = good_project();
    let loaded = load(&project.dir).unwrap_or_else(|diagnostics| panic!("{diagnostics}"));
    assert_eq!(loaded.settings.auth, AuthMode::Required);
    assert_eq!(loaded.settings.materialize_parallelism, 3);
    assert_eq!(loaded.settings.cache_max_bytes, 1 << 20);
    assert_eq!(
        loaded.settings.ready,
        ReadyPolicy::Required(["usage".to_string()].into())
    );
    let usage = loaded.dataset("usage").unwrap();
    assert_eq!(usage.tenant_column.as_deref(), Some("tenant_id"));
    assert_eq!(
        usage.source,
        SnapshotSource::Manifest("data/usage/manifest.json".into())
    );
    // Relative to the project's root (the serving crate's `snapshot::fetch::locate` joins them).
    assert_eq!(loaded.root, project.dir);
    assert_eq!(usage.schema.len(), 8);
    let summary = loaded.endpoint("usage_summary").unwrap();
    assert_eq!(summary.tenant_column.as_deref(), Some("tenant_id"));
    assert_eq!((summary.default_limit, summary.max_limit), (50, 100));
    assert_eq!(summary.cache, CachePolicy::Snapshot);
    assert_eq!(summary.combinations.as_ref().unwrap().len(), 4);
    assert_eq!(summary.param("region").unwrap().aliases["europe"], "eu");
    assert_eq!(summary.param("regions").unwrap().max_values, 2);
    let daily = loaded.endpoint("usage_daily").unwrap();
    assert_eq!(
        daily.tenant_column.as_deref(),
        Some("tenant_id"),
        "a tenant dataset scopes every endpoint"
    );
    assert_eq!((daily.default_limit, daily.max_limit), (50, 100));
    assert_eq!(
        daily.param("min_calls").unwrap().default.as_deref(),
        Some("0")
    );
    assert_eq!(loaded.keys.len(), 2);
    assert!(!loaded.keys[1].active);
    assert_eq!(loaded.keys[0].expires_at, Some(1_893_456_000));
    assert_eq!(loaded.keys[0].rate_limit_per_second, Some(50));
}

fn problems(files: &[(&str, &str)]) -> Vec<String> {
    let project = TempProject::new(files);
    let diagnostics = load(&project.dir).expect_err("the project has problems");
    diagnostics
        .items
        .iter()
        .map(|d| {
            let file = d.file.strip_prefix(&project.dir).unwrap_or(&d.file);
            format!("{}:{}: {}", file.display(), d.line, d.message)
        })
        .collect()
}

/// The problems of a public project (`auth: none`) with the usage dataset, untenanted, and one
/// endpoint, `endpoints/e.yml`.
fn public_endpoint_problems(endpoint: &str) -> Vec<String> {
    problems(&[
        ("gateway.yml", "version: 1\nauth: none\n"),
        (
            "datasets/usage.yml",
            &USAGE.replace("tenant_column: tenant_id\n", ""),
        ),
        ("endpoints/e.yml", endpoint),
    ])
}

fn assert_has(problems: &[String], expected: &str) {
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with(expected.split('|').next().unwrap())
                && p.contains(expected.split('|').nth(1).unwrap_or(""))),
        "expected `{expected}` among:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_problem_is_reported_at_once_with_file_and_line() {
    let bad_endpoint = "name: bad
version: 1
dataset: usage
colour: blue
params:
  - { name: n, type: integer, default: abc }
  - { name: kind, type: enum }
  - { name: limit, type: string }
  - { name: flag, type: string }
combinations:
  - [n, nope]
query:
  select:
    - { as: account_id, column: account_id }
    - { as: total, column: api_calls, agg: sum }
    - { as: ghost, column: missing }
  filters:
    - { column: api_calls, op: gte, param: undeclared }
    - { column: region, op: is_null, param: flag }
    - { column: region, op: like, param: flag }
  order_by:
    - { column: nowhere }
columns: [account_id, unknown_output]
pagination: { default_limit: 500, max_limit: 100 }
";
    let problems = problems(&[
        ("offloader.yml", "version: 2\nauth: none\nkeys: keys/keys.yml\nextra: 1\n"),
        ("datasets/usage.yml", USAGE),
        (
            "datasets/other.yml",
            "id: Other\nsource: { type: databricks }\nschema:\n  - { name: a, type: TEXT }\n  - { name: a, type: DATE }\n",
        ),
        ("endpoints/bad.yml", bad_endpoint),
        ("endpoints/summary.yml", SUMMARY),
        ("endpoints/broken.yml", "name: [unclosed\n"),
        ("keys/keys.yml", "keys:\n  - id: k\n    hash: \"745ce437a64ab1f020c303be50aa3785e742b72e61533d692f7aa024ff16b121\"\n    endpoints: [nope]\n"),
    ]);
    for expected in [
        "offloader.yml:1:|`version` must be within 1..=1",
        "offloader.yml:4:|unknown field `extra`",
        "datasets/other.yml:1:|a dataset id `Other`",
        "datasets/other.yml:2:|`source:`",
        "datasets/other.yml:4:|unknown column type `TEXT`",
        "datasets/other.yml:5:|column `a` is listed twice",
        "endpoints/bad.yml:4:|unknown field `colour`",
        "endpoints/bad.yml:6:|`default` of param `n`: must be an integer",
        "endpoints/bad.yml:7:|enum param `kind` needs",
        "endpoints/bad.yml:8:|param `limit` is reserved",
        "endpoints/bad.yml:11:|`combinations` names param `nope`",
        "endpoints/bad.yml:14:|`select` column `account_id` is neither aggregated nor in `group_by`",
        "endpoints/bad.yml:13:|`select` uses `agg`, so `query` needs `group_by`",
        "endpoints/bad.yml:16:|`select` column `missing` is not in dataset `usage`",
        "endpoints/bad.yml:18:|filter param `undeclared` is not declared",
        "endpoints/bad.yml:19:|`is_null` needs a boolean param",
        "endpoints/bad.yml:20:|unknown filter `op` `like`",
        "endpoints/bad.yml:1:|needs `auth: required`",
        "endpoints/bad.yml:24:|`default_limit` 500 is above `max_limit` 100",
        "endpoints/broken.yml:2:|not valid YAML",
        "keys/keys.yml:4:|key grants endpoint `nope`, which is not defined",
    ] {
        assert_has(&problems, expected);
    }
}

#[test]
fn columns_order_by_and_sort_must_name_outputs() {
    let endpoint = "name: e
version: 1
dataset: usage
params:
  - { name: d, type: date }
query:
  select:
    - { as: when, column: usage_date }
    - { as: stats, column: stats }
  filters:
    - { column: api_calls, op: eq, param: d }
  order_by:
    - { column: usage_date }
    - { column: stats }
columns: [when, usage_date]
sort: [stats]
";
    let problems = public_endpoint_problems(endpoint);
    for expected in [
        "endpoints/e.yml:11:|a BIGINT column cannot be compared with a date param",
        "endpoints/e.yml:13:|`order_by` column `usage_date` is not a `select` output",
        "endpoints/e.yml:14:|`order_by` column `stats` is JSON",
        "endpoints/e.yml:15:|`columns` column `usage_date` is not a `select` output",
        "endpoints/e.yml:16:|`sort` column `stats` is JSON",
    ] {
        assert_has(&problems, expected);
    }
    assert_eq!(problems.len(), 5, "{}", problems.join("\n"));
}

#[test]
fn a_missing_project_file_and_auth_without_keys_are_reported() {
    let empty = TempProject::new(&[("README", "")]);
    let diagnostics = load(&empty.dir).unwrap_err();
    assert!(
        diagnostics.items[0].message.contains("no project file"),
        "{diagnostics}"
    );
    let problems = problems(&[
        ("offloader.yml", "version: 1\n"),
        ("datasets/.keep", ""),
        ("endpoints/.keep", ""),
    ]);
    assert_eq!(problems, vec!["offloader.yml:1: `auth: required` needs a `keys` file (or set `auth: none` for a public API)".to_string()]);
}

#[test]
fn duplicates_across_files_name_the_first_definition() {
    let problems = problems(&[
        ("gateway.yml", "version: 1\nauth: none\n"),
        (
            "datasets/a.yml",
            &USAGE.replace("tenant_column: tenant_id\n", ""),
        ),
        (
            "datasets/b.yml",
            &USAGE.replace("tenant_column: tenant_id\n", ""),
        ),
        ("endpoints/.keep", ""),
    ]);
    assert_eq!(problems.len(), 1, "{}", problems.join("\n"));
    assert!(
        problems[0].starts_with("datasets/b.yml:1: dataset `usage` is already defined at "),
        "{}",
        problems[0]
    );
}

#[test]
fn diagnostics_print_as_path_line_message() {
    let diagnostic = Diagnostic {
        file: Path::new("p/endpoints/e.yml").to_path_buf(),
        line: 7,
        message: "boom".into(),
    };
    assert_eq!(diagnostic.to_string(), "p/endpoints/e.yml:7: boom");
}

#[test]
fn double_sums_is_a_project_setting() {
    let sum_of_doubles = |project: &Project| {
        let summary = project.endpoint("usage_summary").unwrap();
        let dataset = project.dataset("usage").unwrap();
        let mut item = summary.select[0].clone();
        item.column = "storage_gb".into();
        item.aggregate = Some(Aggregate::Sum);
        item.output_type(dataset)
    };
    let offloaders = load(&good_project().dir).unwrap();
    assert_eq!(offloaders.settings.double_sums, DoubleSums::Bigint);
    assert_eq!(sum_of_doubles(&offloaders), ColumnType::Bigint);

    let keeping = format!("{PROJECT}  double_sums: double\n");
    let project = TempProject::new(&[
        ("offloader.yml", keeping.as_str()),
        ("datasets/usage.yml", USAGE),
        ("endpoints/summary.yml", SUMMARY),
        ("endpoints/daily.yml", DAILY),
        ("keys/keys.yml", KEYS),
    ]);
    let loaded = load(&project.dir).unwrap_or_else(|diagnostics| panic!("{diagnostics}"));
    assert_eq!(sum_of_doubles(&loaded), ColumnType::Double);

    let wrong = format!("{PROJECT}  double_sums: decimal\n");
    let problems = problems(&[
        ("offloader.yml", wrong.as_str()),
        ("datasets/usage.yml", USAGE),
        ("endpoints/summary.yml", SUMMARY),
        ("endpoints/daily.yml", DAILY),
        ("keys/keys.yml", KEYS),
    ]);
    assert_has(
        &problems,
        "offloader.yml:11|`double_sums` must be `bigint` or `double`, not `decimal`",
    );
}

#[test]
fn an_ungrouped_select_column_is_reported_at_its_own_line_after_a_failed_entry() {
    let endpoint = "name: e
version: 1
dataset: usage
query:
  group_by: [region]
  select:
    - { as: ghost, column: missing }
    - { as: total, column: api_calls, agg: sum }
    - { as: account, column: account_id }
";
    let problems = public_endpoint_problems(endpoint);
    assert_has(
        &problems,
        "endpoints/e.yml:7:|`select` column `missing` is not in dataset `usage`",
    );
    assert_has(
        &problems,
        "endpoints/e.yml:9:|`select` column `account_id` is neither aggregated nor in `group_by`",
    );
}

#[test]
fn filters_over_the_tenant_a_shared_range_param_or_a_bad_default_are_reported() {
    let endpoint = "name: f
version: 1
dataset: usage
params:
  - { name: tenant, type: string }
  - { name: calls, type: integer }
  - { name: span, type: integer, default: '1' }
query:
  select:
    - { as: account_id, column: account_id }
  filters:
    - { column: tenant_id, op: eq, param: tenant }
    - { column: api_calls, op: in, param: calls }
    - { column: api_calls, op: gte, param: calls }
    - { column: api_calls, op: between, param: span }
";
    let problems = problems(&[
        ("gateway.yml", "version: 1\nauth: none\n"),
        ("datasets/usage.yml", USAGE),
        ("endpoints/f.yml", endpoint),
    ]);
    for expected in [
        "endpoints/f.yml:12:|column `tenant_id` is the tenant column",
        "endpoints/f.yml:14:|param `calls` of an `in`/`between` filter may serve one filter only",
        "endpoints/f.yml:15:|`default` of param `span`: `between` needs two values",
    ] {
        assert_has(&problems, expected);
    }
}
