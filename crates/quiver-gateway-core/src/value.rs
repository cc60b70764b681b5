//! A value bound into a compiled statement (a caller's param, a default, a tenant, a cursor's
//! key, a page's bounds). The serving crate hands them to its database client.

/// One bound value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    Bool(bool),
    I64(i64),
    F64(f64),
    Str(String),
}
