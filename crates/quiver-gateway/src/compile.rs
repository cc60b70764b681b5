//! An endpoint and a caller's query string become one parameterized SQL statement. Values are
//! bound, never spliced; the only text spliced is the project's own identifiers (checked at
//! load) and the snapshot's relation.

use quiver_client::Param as Value;

/// A request compiled against one snapshot.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The statement, with `$1..$n` placeholders.
    pub sql: String,
    /// The values of the placeholders, in order.
    pub values: Vec<Value>,
    /// The output columns, in order (the `?columns=` subset or the allowlist).
    pub columns: Vec<String>,
    /// The rows this response may hold (`?limit=` within the endpoint's bounds).
    pub limit: u64,
    /// A canonical text of everything that shapes the result (params after defaults and aliases,
    /// columns, limit, offset, sort, cursor), used in the cache key and the ETag.
    pub canonical: String,
}
