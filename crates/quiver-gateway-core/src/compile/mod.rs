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
//!
//! [`compile`] runs in stages, each in its own module: the request's params read and checked
//! (`request.rs`: declared, reserved and quiver's extra params), the select list and grouping
//! (`select.rs`), the conditions (`filter.rs`: the tenant's, then each filter's), and the page
//! (`page.rs`: the cursor's predicate, the total order from `keyset.rs`, limit and offset).
//! A request that equality alone selects is described as a keyed lookup too (`lookup.rs`), so
//! the serving side may answer it from the snapshot's rows in memory.
//! Cursors are signed in `cursor.rs`.

use crate::value::Value;
use arrow_array::RecordBatch;
use sha2::{Digest, Sha256};

pub mod cursor;
mod filter;
mod keyset;
pub mod lookup;
mod page;
mod request;
mod select;

pub use crate::project::{EXTRA_PARAMS, RESERVED_PARAMS};
pub use lookup::{key_columns, Lookup};
pub use request::extra_param;

use crate::project::yaml::is_identifier;
use crate::project::{ColumnType, Dataset, Endpoint};
use cursor::CursorKey;

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
    /// What is wrong, naming the param.
    pub message: String,
}

impl ParamError {
    /// An error with this message.
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
pub(crate) struct OrderKey {
    /// The output column.
    pub output: String,
    /// Whether it orders descending.
    pub descending: bool,
    /// Its type, how a cursor's value for it is read back.
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
    pub(crate) order: Vec<OrderKey>,
    /// The rows this response may hold (`?limit=` within the endpoint's bounds); the statement
    /// reads one more.
    pub limit: u64,
    /// A canonical text of everything that shapes the result (params after defaults and aliases,
    /// tenant, columns, limit, offset, sort, cursor), used in the cache key and the ETag.
    pub canonical: String,
    /// The same request as a keyed lookup, when equality alone picks its rows (see `lookup.rs`).
    pub lookup: Option<Lookup>,
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
    /// How many rows `batches` hold.
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
    let sent = request::sent(endpoint, query)?;
    request::check_combinations(endpoint, &sent)?;
    let given = request::given(endpoint, &sent)?;
    let tenant = request::tenant(endpoint, tenant)?;
    let columns = request::columns(endpoint, sent.get("columns").copied())?;
    let limit = request::limit(sent.get("limit").copied(), endpoint.max_limit)?
        .unwrap_or(endpoint.default_limit);
    let offset = request::offset(sent.get("offset").copied())?.unwrap_or(0);
    let sort = request::sort(endpoint, extra_param(endpoint, &sent, "sort"))?;
    let order = keyset::total_order(&sort, &select::outputs(endpoint, dataset));

    let params_canonical = request::canonical(&given);
    let sort_canonical = request::sort_canonical(&sort);
    let seed = CursorSeed {
        key: cursor_key.clone(),
        snapshot_id: snapshot_id.to_string(),
        endpoint: endpoint.name.clone(),
        version: endpoint.version,
        shape: hex_sha256(
            serde_json::json!({"params": params_canonical, "tenant": tenant, "sort": sort_canonical})
                .to_string()
                .as_bytes(),
        ),
    };
    let cursor = extra_param(endpoint, &sent, "cursor");
    let after = page::after(cursor, sent.contains_key("offset"), &seed, order.len())?;
    let lookup = lookup::lookup(endpoint, dataset, &given, tenant, after.is_some(), offset);

    // The statement: its values are bound in the order its text names them.
    let mut values = Vec::new();
    let conditions = filter::conditions(endpoint, &given, tenant, &mut values);
    let inner = select::inner(endpoint, dataset, relation, &conditions);
    let page = page::PageShape {
        columns: &columns,
        order: &order,
        after: after.as_deref(),
        limit,
        offset,
    };
    let (sql, selected) = page.outer(&inner, &mut values)?;
    let canonical = serde_json::json!({
        "params": params_canonical,
        "tenant": tenant,
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
        lookup,
        cursor_seed: seed,
    })
}

/// Lower-case hex of a SHA-256 (every request hashes its shape: one allocation, not one a byte).
fn hex_sha256(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        hex.push(HEX[usize::from(byte >> 4)] as char);
        hex.push(HEX[usize::from(byte & 0xf)] as char);
    }
    hex
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_pages;
