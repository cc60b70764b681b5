//! A value bound into a compiled statement (a caller's param, a default, a tenant, a cursor's
//! key, a page's bounds). The serving crate hands them to its database client.

/// One bound value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A `BOOLEAN`.
    Bool(bool),
    /// A `BIGINT`.
    I64(i64),
    /// A `DOUBLE`.
    F64(f64),
    /// A `VARCHAR` (also a date or timestamp, cast in the statement).
    Str(String),
}
