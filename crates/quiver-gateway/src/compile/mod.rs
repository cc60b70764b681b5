//! An endpoint and a caller's query string become one parameterized SQL statement. Values are
//! bound, never spliced; the only text spliced is the project's own identifiers (checked at
//! load, quoted here) and the snapshot's relation.
//!
//! The statement's shape:
//!
//! ```sql
//! SELECT "visible", …, "hidden order keys" FROM (
//!     SELECT <column or agg(column)> AS "output", … FROM <relation>
//!     WHERE "tenant" = $1 AND <filters> GROUP BY …) AS "q"
//! WHERE <after the cursor's row>
//! ORDER BY <total order> NULLS LAST LIMIT <limit + 1> OFFSET <offset>
//! ```
//!
//! Every response is in a total order (the endpoint's `order_by` or the caller's `?sort=`, then
//! every other orderable output), so a response is a pure function of its request and snapshot
//! and keyset cursors never skip or repeat a row that differs from its neighbours. One row more
//! than the page is read: it says whether a next page exists.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::RecordBatch;
use quiver_client::Param as Value;
use sha2::{Digest, Sha256};

mod keyset;
mod values;

use keyset::{after_predicate, total_order};
pub use values::{parse_value, Parsed};

use crate::cursor::{self, CursorKey};
use crate::project::yaml::is_identifier;
use crate::project::{ColumnType, Dataset, Endpoint, FilterOp};

/// Query params every endpoint has (offloader's three); a project may not declare them.
pub const RESERVED_PARAMS: [&str; 3] = ["limit", "offset", "columns"];
/// quiver's own query params: an endpoint has each unless it declares a param of the same name,
/// which then wins (a project written for offloader may use these names).
pub const EXTRA_PARAMS: [&str; 3] = ["sort", "cursor", "format"];
/// At most this many `name=value` pairs in one query string.
pub const MAX_QUERY_PAIRS: usize = 64;
/// At most this many bytes in one value.
pub const MAX_VALUE_BYTES: usize = 4096;
/// `?offset=` at most this, as offloader bounds it (by nothing but the integer's size); deep pages
/// cost their skipped rows, which cursors do not.
pub const MAX_OFFSET: u64 = i64::MAX as u64;

/// A request's params are wrong: `422 invalid_param`. The message names the param and never
/// repeats the caller's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub message: String,
}

impl ParamError {
    pub fn new(message: impl Into<String>) -> Self {
        ParamError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParamError {}

/// One key of a response's total order: an output column and its direction (NULLs always last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderKey {
    pub output: String,
    pub descending: bool,
    pub column_type: ColumnType,
}

/// A request compiled against one snapshot.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The statement, with `$1..$n` placeholders.
    pub sql: String,
    /// The values of the placeholders, in order.
    pub values: Vec<Value>,
    /// The output columns, in order (the `?columns=` subset or the allowlist).
    pub columns: Vec<String>,
    /// The columns the statement yields: `columns`, then order keys the caller does not see
    /// (needed for the next cursor; [`Compiled::finish`] drops them).
    pub selected: Vec<String>,
    /// The response's total order.
    pub order: Vec<OrderKey>,
    /// The rows this response may hold (`?limit=` within the endpoint's bounds); the statement
    /// reads one more.
    pub limit: u64,
    /// A canonical text of everything that shapes the result (params after defaults and aliases,
    /// tenant, columns, limit, offset, sort, cursor), used in the cache key and the ETag.
    pub canonical: String,
    cursor_seed: CursorSeed,
}

/// What a next page's cursor carries besides the last row's values.
#[derive(Clone, Debug)]
struct CursorSeed {
    key: CursorKey,
    snapshot_id: String,
    endpoint: String,
    version: u32,
    shape: String,
}

/// A response's rows once the statement's result is cut to the page.
#[derive(Clone, Debug)]
pub struct Page {
    /// Only the caller's columns, at most `limit` rows.
    pub batches: Vec<RecordBatch>,
    pub row_count: u64,
    /// Present when more rows follow.
    pub next_cursor: Option<String>,
}

/// `"name"`: an identifier the project load checked, quoted for SQL.
fn quote(identifier: &str) -> String {
    assert!(is_identifier(identifier), "identifiers are checked at load");
    format!("\"{identifier}\"")
}

/// Binds `value` as the next placeholder and returns its SQL.
fn bind(values: &mut Vec<Value>, value: Value, cast: Option<&'static str>) -> String {
    values.push(value);
    let placeholder = format!("${}", values.len());
    match cast {
        Some(cast) => format!("CAST({placeholder} AS {cast})"),
        None => placeholder,
    }
}

/// A filter param's checked value.
enum Given {
    One(Parsed),
    Many(Vec<Parsed>),
}

impl Given {
    fn canonical(&self) -> serde_json::Value {
        match self {
            Given::One(parsed) => parsed.canonical.clone().into(),
            Given::Many(list) => list
                .iter()
                .map(|parsed| serde_json::Value::from(parsed.canonical.clone()))
                .collect(),
        }
    }
}

/// Compiles one request of `endpoint` over `relation` (the snapshot's table or file scan).
/// `tenant` is the caller's key's tenant, bound server-side when the endpoint is tenant-scoped.
#[allow(clippy::too_many_arguments)]
pub fn compile(
    endpoint: &Endpoint,
    dataset: &Dataset,
    relation: &str,
    snapshot_id: &str,
    query: &[(String, String)],
    tenant: Option<&str>,
    cursor_key: &CursorKey,
) -> Result<Compiled, ParamError> {
    assert_eq!(
        endpoint.dataset, dataset.id,
        "an endpoint compiles over its own dataset"
    );
    if query.len() > MAX_QUERY_PAIRS {
        return Err(ParamError::new(format!(
            "more than {MAX_QUERY_PAIRS} query params"
        )));
    }
    let mut sent: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, value) in query {
        if value.len() > MAX_VALUE_BYTES {
            return Err(ParamError::new(format!(
                "param \"{}\" is longer than {MAX_VALUE_BYTES} bytes",
                shown_name(name).unwrap_or("(not a valid name)")
            )));
        }
        let known = RESERVED_PARAMS.contains(&name.as_str())
            || EXTRA_PARAMS.contains(&name.as_str())
            || endpoint.param(name).is_some();
        if !known {
            return Err(ParamError::new(match shown_name(name) {
                Some(name) => format!("unknown param \"{name}\""),
                None => "unknown param".to_string(),
            }));
        }
        // A name sent twice: the last value wins, as offloader reads a query string (a project
        // may refuse it instead, before compile: `gateway: repeated_params: refuse`).
        sent.insert(name, value);
    }

    // Combinations are checked on what the caller sent, before defaults; reserved params never count.
    if let Some(combinations) = &endpoint.combinations {
        let names: BTreeSet<String> = sent
            .keys()
            .filter(|name| endpoint.param(name).is_some())
            .map(|name| name.to_string())
            .collect();
        // The allowed combinations are not listed: they describe the data's shape.
        if !combinations.contains(&names) {
            return Err(ParamError::new(
                "params do not match an allowed combination",
            ));
        }
    }

    // Each declared param: sent, else defaulted, else absent (and its filters are skipped).
    let mut given: BTreeMap<&str, Given> = BTreeMap::new();
    for param in &endpoint.params {
        let raw = match (sent.get(param.name.as_str()), &param.default) {
            (Some(raw), _) => *raw,
            (None, Some(default)) => default.as_str(),
            (None, None) if param.required => {
                return Err(ParamError::new(format!(
                    "missing required param \"{}\"",
                    param.name
                )));
            }
            (None, None) => continue,
        };
        let multi = endpoint
            .filters
            .iter()
            .find(|filter| filter.param == param.name)
            .map(|f| f.op);
        let parse = |piece: &str| {
            parse_value(param, piece)
                .map_err(|message| ParamError::new(format!("param \"{}\" {message}", param.name)))
        };
        let value = match multi {
            Some(FilterOp::In) => {
                let pieces: Vec<&str> = raw.split(',').collect();
                if pieces.len() > param.max_values {
                    return Err(ParamError::new(format!(
                        "param `{}` lists more than {} values",
                        param.name, param.max_values
                    )));
                }
                let mut list = pieces
                    .into_iter()
                    .map(parse)
                    .collect::<Result<Vec<_>, _>>()?;
                list.sort_by(|a, b| a.canonical.cmp(&b.canonical));
                list.dedup_by(|a, b| a.canonical == b.canonical);
                Given::Many(list)
            }
            Some(FilterOp::Between) => {
                let pieces: Vec<&str> = raw.split(',').collect();
                if pieces.len() != 2 {
                    return Err(ParamError::new(format!(
                        "param `{}` must be two values `low,high`",
                        param.name
                    )));
                }
                Given::Many(
                    pieces
                        .into_iter()
                        .map(parse)
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            _ => Given::One(parse(raw)?),
        };
        given.insert(param.name.as_str(), value);
    }

    let outputs: Vec<(String, ColumnType)> = endpoint
        .select
        .iter()
        .map(|item| (item.output.clone(), item.output_type(dataset)))
        .collect();
    let columns = reserved_columns(endpoint, sent.get("columns").copied())?;
    let limit = reserved_limit(sent.get("limit").copied(), endpoint.max_limit)?
        .unwrap_or(endpoint.default_limit);
    let offset = reserved_offset(sent.get("offset").copied())?.unwrap_or(0);
    let extra = |name: &str| extra_param(endpoint, &sent, name);
    let sort = reserved_sort(endpoint, extra("sort"))?;
    let order = total_order(&sort, &outputs);

    let tenant_value = match (&endpoint.tenant_column, tenant) {
        (Some(_), None) => {
            return Err(ParamError::new(
                "this endpoint needs a key bound to a tenant",
            ));
        }
        (Some(_), Some(tenant)) => Some(tenant),
        (None, _) => None,
    };
    let params_canonical: BTreeMap<&str, serde_json::Value> = given
        .iter()
        .map(|(name, value)| (*name, value.canonical()))
        .collect();
    let sort_canonical: Vec<String> = sort
        .iter()
        .map(|(name, descending)| {
            if *descending {
                format!("-{name}")
            } else {
                name.clone()
            }
        })
        .collect();
    let shape = hex_sha256(
        serde_json::json!({"params": params_canonical, "tenant": tenant_value, "sort": sort_canonical})
            .to_string()
            .as_bytes(),
    );

    let after = match extra("cursor") {
        None => None,
        Some(_) if sent.contains_key("offset") => {
            return Err(ParamError::new(
                "params `cursor` and `offset` cannot be used together",
            ));
        }
        Some(text) => {
            let cursor = cursor::verify(cursor_key, text)?;
            if cursor.endpoint != endpoint.name
                || cursor.version != endpoint.version
                || cursor.shape != shape
                || cursor.after.len() != order.len()
            {
                return Err(cursor::invalid());
            }
            if cursor.snapshot_id != snapshot_id {
                return Err(cursor::expired());
            }
            Some(cursor.after)
        }
    };

    // The statement.
    let mut values = Vec::new();
    let mut conditions = Vec::new();
    if let (Some(column), Some(tenant)) = (&endpoint.tenant_column, tenant_value) {
        let placeholder = bind(&mut values, Value::Str(tenant.to_string()), None);
        conditions.push(format!("{} = {placeholder}", quote(column)));
    }
    for filter in &endpoint.filters {
        let Some(value) = given.get(filter.param.as_str()) else {
            continue;
        };
        let column = quote(&filter.column);
        let condition = match (filter.op, value) {
            (FilterOp::IsNull, Given::One(parsed)) => match parsed.value {
                Value::Bool(true) => format!("{column} IS NULL"),
                _ => format!("{column} IS NOT NULL"),
            },
            (FilterOp::In, Given::Many(list)) => {
                let placeholders: Vec<String> = list
                    .iter()
                    .map(|parsed| bind(&mut values, parsed.value.clone(), parsed.cast))
                    .collect();
                format!("{column} IN ({})", placeholders.join(", "))
            }
            (FilterOp::Between, Given::Many(list)) => {
                let low = bind(&mut values, list[0].value.clone(), list[0].cast);
                let high = bind(&mut values, list[1].value.clone(), list[1].cast);
                format!("{column} BETWEEN {low} AND {high}")
            }
            (FilterOp::Prefix, Given::One(parsed)) => {
                let placeholder = bind(&mut values, parsed.value.clone(), parsed.cast);
                format!("starts_with({column}, {placeholder})")
            }
            (op, Given::One(parsed)) => {
                let placeholder = bind(&mut values, parsed.value.clone(), parsed.cast);
                let operator = match op {
                    FilterOp::Eq => "=",
                    FilterOp::Ne => "<>",
                    FilterOp::Lt => "<",
                    FilterOp::Lte => "<=",
                    FilterOp::Gt => ">",
                    FilterOp::Gte => ">=",
                    _ => unreachable!("one-value filters are handled above"),
                };
                format!("{column} {operator} {placeholder}")
            }
            (_, Given::Many(_)) => unreachable!("only in and between take several values"),
        };
        conditions.push(condition);
    }
    let items: Vec<String> = endpoint
        .select
        .iter()
        .map(|item| {
            let column = quote(&item.column);
            let expression = match item.aggregate {
                None => column,
                Some(aggregate) => {
                    let function = match aggregate {
                        crate::project::Aggregate::Sum => "sum",
                        crate::project::Aggregate::Avg => "avg",
                        crate::project::Aggregate::Min => "min",
                        crate::project::Aggregate::Max => "max",
                        crate::project::Aggregate::Count => "count",
                    };
                    // Cast to the output type: sums of integers are HUGEINT in DuckDB.
                    format!(
                        "CAST({function}({column}) AS {})",
                        item.output_type(dataset).sql()
                    )
                }
            };
            format!("{expression} AS {}", quote(&item.output))
        })
        .collect();
    let mut inner = format!("SELECT {} FROM {relation}", items.join(", "));
    if !conditions.is_empty() {
        inner.push_str(" WHERE ");
        inner.push_str(&conditions.join(" AND "));
    }
    if !endpoint.group_by.is_empty() {
        let group_by: Vec<String> = endpoint
            .group_by
            .iter()
            .map(|column| quote(column))
            .collect();
        inner.push_str(" GROUP BY ");
        inner.push_str(&group_by.join(", "));
    }

    let mut selected = columns.clone();
    for key in &order {
        if !selected.contains(&key.output) {
            selected.push(key.output.clone());
        }
    }
    let selected_sql: Vec<String> = selected.iter().map(|name| quote(name)).collect();
    let mut sql = format!("SELECT {} FROM ({inner}) AS \"q\"", selected_sql.join(", "));
    if let Some(after) = &after {
        sql.push_str(" WHERE ");
        sql.push_str(&after_predicate(&order, after, &mut values)?);
    }
    if !order.is_empty() {
        let keys: Vec<String> = order
            .iter()
            .map(|key| {
                let direction = if key.descending { "DESC" } else { "ASC" };
                format!("{} {direction} NULLS LAST", quote(&key.output))
            })
            .collect();
        sql.push_str(" ORDER BY ");
        sql.push_str(&keys.join(", "));
    }
    let limit_placeholder = bind(&mut values, Value::I64((limit + 1) as i64), None);
    let offset_placeholder = bind(&mut values, Value::I64(offset as i64), None);
    sql.push_str(&format!(
        " LIMIT {limit_placeholder} OFFSET {offset_placeholder}"
    ));

    let canonical = serde_json::json!({
        "params": params_canonical,
        "tenant": tenant_value,
        "columns": columns,
        "limit": limit,
        "offset": offset,
        "sort": sort_canonical,
        "after": after,
    })
    .to_string();
    Ok(Compiled {
        sql,
        values,
        columns,
        selected,
        order,
        limit,
        canonical,
        cursor_seed: CursorSeed {
            key: cursor_key.clone(),
            snapshot_id: snapshot_id.to_string(),
            endpoint: endpoint.name.clone(),
            version: endpoint.version,
            shape,
        },
    })
}

/// A caller's name (of a param or a column) fit to repeat in a message: only when it is
/// identifier-shaped (offloader's `^[A-Za-z0-9_]{1,63}$`).
fn shown_name(name: &str) -> Option<&str> {
    let plain = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then_some(name)
}

/// One of quiver's own params, unless the endpoint declares a param of that name (which wins).
pub fn extra_param<'a>(
    endpoint: &Endpoint,
    sent: &BTreeMap<&str, &'a str>,
    name: &str,
) -> Option<&'a str> {
    if endpoint.param(name).is_some() {
        return None;
    }
    sent.get(name).copied()
}

/// `?columns=a,b`: pieces trimmed, each in the allowlist, duplicates collapsed; the response
/// keeps the endpoint's column order. The allowlist is never listed in an error.
fn reserved_columns(endpoint: &Endpoint, raw: Option<&str>) -> Result<Vec<String>, ParamError> {
    let Some(raw) = raw else {
        return Ok(endpoint.columns.clone());
    };
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for piece in raw.split(',').map(str::trim) {
        if piece.is_empty() {
            return Err(ParamError::new(
                "columns must be a comma-separated list of columns",
            ));
        }
        if !endpoint.columns.iter().any(|allowed| allowed == piece) {
            return Err(ParamError::new(match shown_name(piece) {
                Some(name) => format!("unknown column \"{name}\""),
                None => "unknown column".to_string(),
            }));
        }
        wanted.insert(piece);
    }
    Ok(endpoint
        .columns
        .iter()
        .filter(|column| wanted.contains(column.as_str()))
        .cloned()
        .collect())
}

/// `?limit=`: a whole integer (a leading `+` allowed) within `1..=max_limit`.
fn reserved_limit(raw: Option<&str>, max: u64) -> Result<Option<u64>, ParamError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.parse::<i64>() {
        Ok(value) if value > 0 && value as u64 > max => {
            Err(ParamError::new(format!("limit exceeds max of {max}")))
        }
        Ok(value) if value > 0 => Ok(Some(value as u64)),
        _ => Err(ParamError::new("limit must be a positive integer")),
    }
}

/// `?offset=`: a whole integer, zero or more.
fn reserved_offset(raw: Option<&str>) -> Result<Option<u64>, ParamError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.parse::<i64>() {
        Ok(value) if value >= 0 && value as u64 <= MAX_OFFSET => Ok(Some(value as u64)),
        _ => Err(ParamError::new("offset must be a non-negative integer")),
    }
}

/// `?sort=a,-b` within the endpoint's sort allowlist; without it, the endpoint's `order_by`.
fn reserved_sort(
    endpoint: &Endpoint,
    raw: Option<&str>,
) -> Result<Vec<(String, bool)>, ParamError> {
    let Some(raw) = raw else {
        return Ok(endpoint
            .order_by
            .iter()
            .map(|order| (order.column.clone(), order.descending))
            .collect());
    };
    if endpoint.sort_allowlist.is_empty() {
        return Err(ParamError::new(
            "param `sort` is not allowed on this endpoint",
        ));
    }
    let mut sort: Vec<(String, bool)> = Vec::new();
    for piece in raw.split(',') {
        let (name, descending) = match piece.strip_prefix('-') {
            Some(name) => (name, true),
            None => (piece, false),
        };
        if !endpoint
            .sort_allowlist
            .iter()
            .any(|allowed| allowed == name)
        {
            return Err(ParamError::new(format!(
                "param `sort` names a column that is not sortable (sortable: {})",
                endpoint.sort_allowlist.join(", ")
            )));
        }
        if sort.iter().any(|(other, _)| other == name) {
            return Err(ParamError::new("param `sort` lists a column twice"));
        }
        sort.push((name.to_string(), descending));
    }
    Ok(sort)
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
