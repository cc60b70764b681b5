//! `compile` over the fixture project of `../project/load_tests.rs`: the statement's text, its bound
//! values, the canonical text, and every 422 a caller can earn.

use crate::value::Value;

use super::*;
use crate::project::load_tests::good_project;
use crate::project::values::parse_value;
use crate::project::{load, ParamType, Project};

pub(super) fn project() -> Project {
    let dir = good_project();
    load(&dir.dir).unwrap_or_else(|diagnostics| panic!("{diagnostics}"))
}

pub(super) fn key() -> CursorKey {
    CursorKey::from_bytes([1; 32])
}

pub(super) fn run(
    project: &Project,
    endpoint: &str,
    query: &[(&str, &str)],
) -> Result<Compiled, ParamError> {
    let endpoint = project.endpoint(endpoint).unwrap();
    let dataset = project.dataset(&endpoint.dataset).unwrap();
    let query: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    compile(
        endpoint,
        dataset,
        "\"snap__usage__1\"",
        "s1",
        &query,
        Some("tenant_acme"),
        &key(),
    )
}

pub(super) fn error(project: &Project, endpoint: &str, query: &[(&str, &str)]) -> String {
    run(project, endpoint, query).expect_err("a 422").message
}

#[test]
fn an_aggregate_endpoint_compiles_to_one_parameterized_statement() {
    let project = project();
    let compiled = run(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("region", "europe"),
        ],
    )
    .unwrap();
    assert_eq!(
        compiled.sql,
        "SELECT \"account_id\", \"api_calls_total\", \"storage_gb_avg\" FROM (SELECT \"account_id\" AS \"account_id\", \
         CAST(sum(\"api_calls\") AS BIGINT) AS \"api_calls_total\", CAST(avg(\"storage_gb\") AS DOUBLE) AS \"storage_gb_avg\" \
         FROM \"snap__usage__1\" WHERE \"tenant_id\" = $1 AND \"usage_date\" >= CAST($2 AS DATE) AND \"usage_date\" <= CAST($3 AS DATE) \
         AND \"region\" = $4 GROUP BY \"account_id\") AS \"q\" ORDER BY \"api_calls_total\" DESC NULLS LAST, \
         \"account_id\" ASC NULLS LAST, \"storage_gb_avg\" ASC NULLS LAST LIMIT $5 OFFSET $6"
    );
    assert_eq!(
        compiled.values,
        vec![
            Value::Str("tenant_acme".into()),
            Value::Str("2026-01-01".into()),
            Value::Str("2026-01-31".into()),
            Value::Str("eu".into()),
            Value::I64(51),
            Value::I64(0),
        ]
    );
    assert_eq!(compiled.limit, 50);
    assert_eq!(
        compiled.columns,
        ["account_id", "api_calls_total", "storage_gb_avg"]
    );
    assert_eq!(compiled.selected, compiled.columns);
}

#[test]
fn the_canonical_text_is_the_same_for_equivalent_requests() {
    let project = project();
    let a = run(
        &project,
        "usage_summary",
        &[
            ("to", "2026-01-31"),
            ("from", "2026-01-01"),
            ("regions", "us,eu"),
        ],
    )
    .unwrap();
    let b = run(
        &project,
        "usage_summary",
        &[
            ("regions", "eu,us"),
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("limit", "50"),
        ],
    )
    .unwrap();
    assert_eq!(a.canonical, b.canonical);
    let c = run(
        &project,
        "usage_summary",
        &[
            ("regions", "eu"),
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
        ],
    )
    .unwrap();
    assert_ne!(a.canonical, c.canonical);
    let twice = run(
        &project,
        "usage_summary",
        &[
            ("regions", "eu,eu"),
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
        ],
    )
    .unwrap();
    assert_eq!(twice.canonical, c.canonical, "an `in` list is a set");
    let d = run(
        &project,
        "usage_summary",
        &[
            ("region", "europe"),
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
        ],
    )
    .unwrap();
    let e = run(
        &project,
        "usage_summary",
        &[
            ("region", "eu"),
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
        ],
    )
    .unwrap();
    assert_eq!(
        d.canonical, e.canonical,
        "aliases apply before the canonical text"
    );
    let endpoint = project.endpoint("usage_summary").unwrap();
    let dataset = project.dataset("usage").unwrap();
    let query = vec![
        ("from".to_string(), "2026-01-01".to_string()),
        ("to".to_string(), "2026-01-31".to_string()),
    ];
    let other_tenant = compile(
        endpoint,
        dataset,
        "t",
        "s1",
        &query,
        Some("tenant_other"),
        &key(),
    )
    .unwrap();
    let same_tenant = compile(
        endpoint,
        dataset,
        "t",
        "s1",
        &query,
        Some("tenant_acme"),
        &key(),
    )
    .unwrap();
    assert_ne!(other_tenant.canonical, same_tenant.canonical);
}

#[test]
fn filters_of_every_op_bind_their_values() {
    let project = project();
    let compiled = run(
        &project,
        "usage_daily",
        &[
            ("account_prefix", "acc_"),
            ("no_region", "true"),
            ("days", "2026-01-01,2026-01-07"),
            ("columns", "account_id,api_calls"),
        ],
    )
    .unwrap();
    assert!(
        compiled.sql.contains("\"api_calls\" >= $2"),
        "{}",
        compiled.sql
    );
    assert!(
        compiled.sql.contains("starts_with(\"account_id\", $3)"),
        "{}",
        compiled.sql
    );
    assert!(
        compiled.sql.contains("\"region\" IS NULL"),
        "{}",
        compiled.sql
    );
    assert!(
        compiled
            .sql
            .contains("\"usage_date\" BETWEEN CAST($4 AS DATE) AND CAST($5 AS DATE)"),
        "{}",
        compiled.sql
    );
    assert_eq!(compiled.values[1], Value::I64(0), "the default applies");
    assert_eq!(compiled.columns, ["account_id", "api_calls"]);
    assert_eq!(
        compiled.selected,
        ["account_id", "api_calls", "usage_date", "region"],
        "order keys ride along hidden; JSON never orders"
    );
    let compiled = run(&project, "usage_daily", &[("no_region", "false")]).unwrap();
    assert!(
        compiled.sql.contains("\"region\" IS NOT NULL"),
        "{}",
        compiled.sql
    );
    let compiled = run(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("regions", "eu,us"),
        ],
    )
    .unwrap();
    assert!(
        compiled.sql.contains("\"region\" IN ($4, $5)"),
        "{}",
        compiled.sql
    );
}

#[test]
fn sort_replaces_order_by_within_the_allowlist() {
    let project = project();
    let compiled = run(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("sort", "-account_id"),
        ],
    )
    .unwrap();
    assert!(
        compiled.sql.contains("ORDER BY \"account_id\" DESC NULLS LAST, \"api_calls_total\" ASC NULLS LAST, \"storage_gb_avg\" ASC NULLS LAST"),
        "{}",
        compiled.sql
    );
    let message = error(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("sort", "storage_gb_avg"),
        ],
    );
    assert!(message.contains("param `sort`"), "{message}");
    assert!(error(&project, "usage_daily", &[("sort", "usage_date")]).contains("not allowed"));
}

#[test]
fn every_bad_request_is_a_422_naming_the_param_without_its_value() {
    let project = project();
    let dates = [("from", "2026-01-01"), ("to", "2026-01-31")];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        dates.iter().copied().chain(extra.iter().copied()).collect()
    };
    let secret = "SECRET<script>";
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (with(&[("nope", secret)]), "unknown param \"nope\""),
        (with(&[("<bad>", "1")]), "unknown param"),
        (
            vec![("from", "2026-01-01")],
            "params do not match an allowed combination",
        ),
        (
            vec![("account_id", "a")],
            "params do not match an allowed combination",
        ),
        (
            vec![("from", secret), ("to", "2026-01-31")],
            "param \"from\" must be an ISO date (YYYY-MM-DD)",
        ),
        (
            vec![("from", "2026-02-30"), ("to", "2026-01-31")],
            "param \"from\" must be an ISO date",
        ),
        (
            with(&[("region", secret)]),
            "param \"region\" is not an allowed value",
        ),
        (
            with(&[("regions", "eu,us,ap")]),
            "param `regions` lists more than 2 values",
        ),
        (with(&[("limit", "101")]), "limit exceeds max of 100"),
        (with(&[("limit", "0")]), "limit must be a positive integer"),
        (
            with(&[("offset", "-1")]),
            "offset must be a non-negative integer",
        ),
        (with(&[("columns", secret)]), "unknown column"),
        (
            with(&[("columns", "account_id,,account_id")]),
            "columns must be a comma-separated list of columns",
        ),
        (
            with(&[("cursor", secret)]),
            "param `cursor`: cursor is invalid",
        ),
        (
            with(&[("cursor", "x"), ("offset", "1")]),
            "params `cursor` and `offset` cannot be used together",
        ),
        (with(&[("columns", "plan")]), "unknown column \"plan\""),
        (
            vec![("from", "x"), ("from", "2026-01-02"), ("to", "x")],
            "param \"to\" must be an ISO date",
        ),
    ];
    for (query, expected) in cases {
        let message = error(&project, "usage_summary", &query);
        assert!(
            message.starts_with(expected),
            "{query:?}: `{message}` should start with `{expected}`"
        );
        assert!(!message.contains("SECRET"), "{message}");
        for value in ["eu", "us", "account_id", "api_calls_total"] {
            assert!(
                !message.contains(value) || expected.contains(value),
                "{message} reveals {value}"
            );
        }
    }
    assert!(error(&project, "usage_daily", &[("min_calls", "-1")])
        .starts_with("param \"min_calls\" must be at least 0"));
    assert!(error(&project, "usage_daily", &[("min_calls", "1.5")])
        .starts_with("param \"min_calls\" must be an integer"));
    assert!(error(&project, "usage_daily", &[("no_region", "yes")])
        .starts_with("param \"no_region\" must be true or false"));
    assert!(error(&project, "usage_daily", &[("days", "2026-01-01")])
        .starts_with("param `days` must be two values"));
    let long = "x".repeat(MAX_VALUE_BYTES + 1);
    assert!(error(&project, "usage_daily", &[("account_prefix", &long)])
        .contains("longer than 4096 bytes"));
    let many: Vec<(String, String)> = (0..=MAX_QUERY_PAIRS)
        .map(|i| (format!("p{i}"), String::new()))
        .collect();
    let endpoint = project.endpoint("usage_daily").unwrap();
    let too_many = compile(
        endpoint,
        project.dataset("usage").unwrap(),
        "t",
        "s1",
        &many,
        Some("t"),
        &key(),
    );
    assert!(too_many
        .unwrap_err()
        .message
        .contains("more than 64 query params"));
}

#[test]
fn a_required_param_and_a_missing_tenant_are_refused() {
    let project = project();
    let endpoint = project.endpoint("usage_summary").unwrap();
    let dataset = project.dataset("usage").unwrap();
    let query = vec![
        ("from".to_string(), "2026-01-01".to_string()),
        ("to".to_string(), "2026-01-31".to_string()),
    ];
    let error = compile(endpoint, dataset, "t", "s1", &query, None, &key()).unwrap_err();
    assert!(error.message.contains("tenant"), "{error}");
    let mut no_combinations = endpoint.clone();
    no_combinations.combinations = None;
    let error = compile(
        &no_combinations,
        dataset,
        "t",
        "s1",
        &query[..1],
        Some("t"),
        &key(),
    )
    .unwrap_err();
    assert_eq!(error.message, "missing required param \"to\"");
}

#[test]
fn timestamps_are_normalized_to_utc() {
    let mut param = project()
        .endpoint("usage_daily")
        .unwrap()
        .param("account_prefix")
        .unwrap()
        .clone();
    param.param_type = ParamType::Timestamp;
    let parsed = parse_value(&param, "2026-01-31T12:00:00+02:00").unwrap();
    assert_eq!(parsed.value, Value::Str("2026-01-31 10:00:00".into()));
    assert_eq!(parsed.cast, Some("TIMESTAMP"));
    assert!(parse_value(&param, "2026-01-31").is_err());
    param.param_type = ParamType::Number;
    assert_eq!(parse_value(&param, "1e3").unwrap().canonical, "1000");
    assert!(parse_value(&param, "NaN").is_err());
    assert!(parse_value(&param, "inf").is_err());
}

#[test]
fn a_repeated_param_takes_its_last_value() {
    let project = project();
    let twice = run(
        &project,
        "usage_summary",
        &[
            ("from", "bad"),
            ("from", "2026-01-02"),
            ("to", "2026-01-31"),
        ],
    )
    .unwrap();
    let once = run(
        &project,
        "usage_summary",
        &[("from", "2026-01-02"), ("to", "2026-01-31")],
    )
    .unwrap();
    assert_eq!(twice.values, once.values);
    assert_eq!(twice.canonical, once.canonical);
}

#[test]
fn columns_are_trimmed_collapsed_and_kept_in_select_order() {
    let project = project();
    let compiled = run(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("columns", "storage_gb_avg, account_id,storage_gb_avg"),
        ],
    )
    .unwrap();
    assert_eq!(compiled.columns, ["account_id", "storage_gb_avg"]);
}

#[test]
fn a_plus_sent_unescaped_still_finds_its_alias_and_enum_member() {
    let mut project = project();
    let endpoint = project
        .endpoints
        .iter_mut()
        .find(|endpoint| endpoint.name == "usage_summary")
        .unwrap();
    let region = endpoint
        .params
        .iter_mut()
        .find(|param| param.name == "region")
        .unwrap();
    region.allowed.push("13+".into());
    region.aliases.insert("EMERALD+".into(), "eu".into());
    let base = [("from", "2026-01-01"), ("to", "2026-01-31")];
    for (sent, bound) in [("13 ", "13+"), ("EMERALD ", "eu"), ("europe", "eu")] {
        let query: Vec<(&str, &str)> = base.iter().copied().chain([("region", sent)]).collect();
        let compiled = run(&project, "usage_summary", &query).unwrap();
        assert!(
            compiled.values.contains(&Value::Str(bound.into())),
            "{sent:?} binds {bound:?}: {:?}",
            compiled.values
        );
    }
    let query: Vec<(&str, &str)> = base.iter().copied().chain([("region", "14 ")]).collect();
    assert_eq!(
        error(&project, "usage_summary", &query),
        "param \"region\" is not an allowed value"
    );
}

#[test]
fn a_declared_sort_or_cursor_param_is_the_endpoints_own() {
    let mut project = project();
    let endpoint = project
        .endpoints
        .iter_mut()
        .find(|endpoint| endpoint.name == "usage_daily")
        .unwrap();
    let mut sort = endpoint.param("account_prefix").unwrap().clone();
    sort.name = "sort".into();
    let mut cursor = sort.clone();
    cursor.name = "cursor".into();
    endpoint.params.push(sort);
    endpoint.params.push(cursor);
    // Neither is read as quiver's: not a sort of the output, not a signed cursor.
    let compiled = run(
        &project,
        "usage_daily",
        &[("sort", "not a column"), ("cursor", "not a cursor")],
    )
    .unwrap();
    assert!(compiled
        .order
        .iter()
        .all(|key| key.output != "not a column"));
}
