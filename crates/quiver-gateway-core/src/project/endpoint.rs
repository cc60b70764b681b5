//! One `endpoints/*.yml` read and checked against its dataset: its name, version, tenant,
//! freshness, pagination and cache here; its params in `params.rs`, its query in `query.rs`
//! and `select.rs` (put together by `read_query`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::bounds::{DEFAULT_LIMIT, DEFAULT_MAX_LIMIT, HARD_MAX_LIMIT};
use super::model::{
    AuthMode, CachePolicy, ColumnType, Dataset, Endpoint, Filter, OrderBy, Param, SelectItem,
    ServingMode,
};
use super::params::{read_combinations, read_params};
use super::query::{read_filters, read_group_by, read_order_by, read_output_list};
use super::select::{read_select, Select};
use super::yaml::{printable, Fields, Node, Reader};

/// An endpoint name is part of a URL and a metrics label: `[a-z][a-z0-9_-]*`.
pub fn is_endpoint_name(text: &str) -> bool {
    let mut bytes = text.bytes();
    text.len() <= 128
        && matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// The fields an endpoint file may set.
const FIELDS: [&str; 14] = [
    "name",
    "version",
    "dataset",
    "description",
    "serving_mode",
    "tenant",
    "freshness",
    "params",
    "combinations",
    "query",
    "columns",
    "sort",
    "pagination",
    "cache",
];
/// The fields an endpoint's `query` may set.
const QUERY_FIELDS: [&str; 4] = ["select", "filters", "group_by", "order_by"];

/// One endpoint file read and checked against the project's datasets; `None` when it has a
/// problem (every one recorded in `reader`).
pub fn read_endpoint(
    reader: &mut Reader<'_>,
    node: &Node,
    datasets: &[Dataset],
    auth: AuthMode,
) -> Option<Endpoint> {
    let fields = reader.mapping(node, "an endpoint", &FIELDS, &["owner"])?;
    let name = fields
        .required(reader, "name", "an endpoint")
        .and_then(|node| read_name(reader, node));
    let version = fields
        .required(reader, "version", "an endpoint")
        .and_then(|node| reader.integer(node, "`version`", 1, i64::from(u32::MAX)))
        .map(|version| version as u32);
    let description = fields
        .get("description")
        .and_then(|node| reader.string(node, "`description`"));
    let dataset = fields
        .required(reader, "dataset", "an endpoint")
        .and_then(|node| read_dataset(reader, node, datasets));
    let serving_mode = read_serving_mode(reader, fields.get("serving_mode"));
    let tenant_column = read_tenant(reader, &fields, dataset, auth);
    let max_staleness = read_max_staleness(reader, &fields);

    // Params that failed their own checks still count as declared, so that combinations and
    // filters naming them are checked too (and not reported as undeclared).
    let (parsed_params, declared, params_complete) = read_params(reader, &fields);
    let combinations = read_combinations(reader, &fields, &declared);

    let query = fields
        .required(reader, "query", "an endpoint")
        .and_then(|node| reader.mapping(node, "`query`", &QUERY_FIELDS, &[]));
    let pagination = read_pagination(reader, &fields);
    let cache = read_cache(reader, &fields);
    // Without the dataset and the query the rest cannot be checked; every problem above is
    // already recorded.
    let (dataset, query) = (dataset?, query?);
    let checked = read_query(reader, &fields, &query, dataset, &parsed_params, &declared);
    let params = params_complete.then_some(parsed_params);
    let (default_limit, max_limit) = pagination?;
    Some(Endpoint {
        name: name?,
        version: version?,
        dataset: dataset.id.clone(),
        description,
        serving_mode: serving_mode?,
        tenant_column: tenant_column?,
        max_staleness,
        params: params?,
        combinations: combinations?,
        select: checked.select?,
        filters: checked.filters?,
        group_by: checked.group_by?,
        order_by: checked.order_by?,
        sort_allowlist: checked.sort_allowlist?,
        columns: checked.columns?,
        default_limit,
        max_limit,
        cache: cache?,
    })
}

/// What an endpoint's query and its output lists declare; `None` for each part with a problem.
struct CheckedQuery {
    group_by: Option<Vec<String>>,
    select: Option<Vec<SelectItem>>,
    filters: Option<Vec<Filter>>,
    order_by: Option<Vec<OrderBy>>,
    sort_allowlist: Option<Vec<String>>,
    columns: Option<Vec<String>>,
}

/// The query's parts, checked against `dataset` and the params, then the lists of outputs
/// (`order_by`, `sort`, `columns`) against what `select` declares, whole or not.
fn read_query(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    query: &Fields<'_>,
    dataset: &Dataset,
    params: &[Param],
    declared: &BTreeSet<String>,
) -> CheckedQuery {
    let group_by = read_group_by(reader, query, dataset);
    let select = read_select(reader, query, dataset, group_by.as_deref());
    let filters = read_filters(reader, query, dataset, params, declared);
    let outputs: BTreeMap<String, ColumnType> = select.outputs(dataset);
    let order_by = read_order_by(reader, query, &outputs, &select);
    let sort_allowlist = match fields.get("sort") {
        None => Some(Vec::new()),
        Some(node) => read_output_list(reader, node, "`sort`", &outputs, &select, true),
    };
    let columns = fields
        .required(reader, "columns", "an endpoint")
        .and_then(|node| read_columns(reader, node, &outputs, &select));
    CheckedQuery {
        group_by,
        select: select.complete.then_some(select.items),
        filters,
        order_by,
        sort_allowlist,
        columns,
    }
}

/// `name`: a URL segment and a metrics label, `[a-z][a-z0-9_-]*`.
fn read_name(reader: &mut Reader<'_>, node: &Node) -> Option<String> {
    let name = reader.string(node, "an endpoint name")?;
    if is_endpoint_name(&name) {
        Some(name)
    } else {
        reader.error(
            node.line,
            format!(
                "endpoint name `{}` must match [a-z][a-z0-9_-]*",
                printable(&name)
            ),
        );
        None
    }
}

/// `dataset`: one the project defines.
fn read_dataset<'d>(
    reader: &mut Reader<'_>,
    node: &Node,
    datasets: &'d [Dataset],
) -> Option<&'d Dataset> {
    let id = reader.string(node, "`dataset`")?;
    let found = datasets.iter().find(|dataset| dataset.id == id);
    if found.is_none() {
        reader.error(
            node.line,
            format!("dataset `{}` is not defined", printable(&id)),
        );
    }
    found
}

/// `serving_mode`: `local_table` (the default) or `remote_scan`.
fn read_serving_mode(reader: &mut Reader<'_>, node: Option<&Node>) -> Option<ServingMode> {
    let Some(node) = node else {
        return Some(ServingMode::LocalTable);
    };
    match reader.string(node, "`serving_mode`").as_deref() {
        Some("local_table") => Some(ServingMode::LocalTable),
        Some("remote_scan") => Some(ServingMode::RemoteScan),
        Some(other) => {
            reader.error(
                node.line,
                format!(
                    "`serving_mode` must be `local_table` or `remote_scan`, not `{}`",
                    printable(other)
                ),
            );
            None
        }
        None => None,
    }
}

/// `freshness.max_staleness_minutes`: 0 to a year. `None` when absent or wrong (a problem is
/// recorded for the latter).
fn read_max_staleness(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Option<Duration> {
    fields
        .get("freshness")
        .and_then(|node| reader.mapping(node, "`freshness`", &["max_staleness_minutes"], &[]))
        .and_then(|freshness| freshness.get("max_staleness_minutes"))
        .and_then(|node| reader.integer(node, "`max_staleness_minutes`", 0, 525_600))
        .map(|minutes| Duration::from_secs(minutes as u64 * 60))
}

/// `columns`: the outputs a response may contain, at least one.
fn read_columns(
    reader: &mut Reader<'_>,
    node: &Node,
    outputs: &BTreeMap<String, ColumnType>,
    select: &Select,
) -> Option<Vec<String>> {
    let columns = read_output_list(reader, node, "`columns`", outputs, select, false);
    if columns.as_ref().is_some_and(Vec::is_empty) {
        reader.error(node.line, "`columns` lists no column");
    }
    columns
}

fn read_cache(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Option<CachePolicy> {
    let Some(cache) = fields
        .get("cache")
        .and_then(|node| reader.mapping(node, "`cache`", &["policy"], &[]))
    else {
        return Some(CachePolicy::None);
    };
    let node = match cache.get("policy") {
        None => return Some(CachePolicy::None),
        Some(node) => node,
    };
    match reader.string(node, "`policy`").as_deref() {
        Some("none") => Some(CachePolicy::None),
        Some("snapshot") => Some(CachePolicy::Snapshot),
        Some(other) => {
            reader.error(
                node.line,
                format!(
                    "cache `policy` must be `none` or `snapshot`, not `{}`",
                    printable(other)
                ),
            );
            None
        }
        None => None,
    }
}

/// The tenant column: the dataset's `tenant_column` (every endpoint over it is tenant-scoped);
/// an endpoint's own `tenant: {column}` must name that same column. `Some(None)`: no tenant.
fn read_tenant(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    dataset: Option<&Dataset>,
    auth: AuthMode,
) -> Option<Option<String>> {
    let declared = fields
        .get("tenant")
        .and_then(|node| reader.mapping(node, "`tenant`", &["column"], &[]))
        .and_then(|tenant| tenant.required(reader, "column", "`tenant`"))
        .and_then(|node| {
            reader
                .identifier(node, "the tenant column")
                .map(|c| (c, node.line))
        });
    let dataset = dataset?;
    let line = fields.key_line("tenant").unwrap_or(fields.line);
    let column = match (&declared, &dataset.tenant_column) {
        (Some((column, line)), Some(tenant_column)) if column != tenant_column => {
            reader.error(
                *line,
                format!(
                    "tenant column `{column}` must be dataset `{}`'s `tenant_column` `{tenant_column}`",
                    dataset.id
                ),
            );
            return None;
        }
        (Some((column, line)), None) => {
            reader.error(
                *line,
                format!(
                    "tenant column `{column}`: dataset `{}` has no `tenant_column`",
                    dataset.id
                ),
            );
            return None;
        }
        (_, tenant_column) => tenant_column.clone(),
    };
    if column.is_some() && auth == AuthMode::None {
        reader.error(
            line,
            format!(
                "a tenant-scoped endpoint (dataset `{}` has `tenant_column`) needs `auth: required`",
                dataset.id
            ),
        );
        return None;
    }
    Some(column)
}

fn read_pagination(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Option<(u64, u64)> {
    let Some(node) = fields.get("pagination") else {
        return Some((DEFAULT_LIMIT, DEFAULT_MAX_LIMIT));
    };
    let pagination = reader.mapping(node, "`pagination`", &["default_limit", "max_limit"], &[])?;
    let hard = HARD_MAX_LIMIT as i64;
    let max_limit = match pagination.get("max_limit") {
        Some(node) => reader
            .integer(node, "`max_limit`", 1, hard)
            .map(|n| n as u64),
        None => Some(DEFAULT_MAX_LIMIT),
    };
    let default_limit = match pagination.get("default_limit") {
        Some(node) => reader
            .integer(node, "`default_limit`", 1, hard)
            .map(|n| n as u64),
        None => max_limit.map(|max_limit| DEFAULT_LIMIT.min(max_limit)),
    };
    let (default_limit, max_limit) = (default_limit?, max_limit?);
    if default_limit > max_limit {
        reader.error(
            node.line,
            format!("`default_limit` {default_limit} is above `max_limit` {max_limit}"),
        );
        return None;
    }
    Some((default_limit, max_limit))
}
