//! Field metadata of a function's `arguments` schema (in `FunctionInfo`): how a worker tells the
//! engine what each parameter is, beyond its name and type. A worker writes these keys; the
//! engine reads them to register the function's signature.

/// The parameter's documentation.
pub const DOC: &str = "vgi_doc";
/// `named` for a `name := value` parameter (absent: positional).
pub const ARG: &str = "vgi_arg";
/// Value of [`ARG`] for a named parameter.
pub const ARG_NAMED: &str = "named";
/// `table` for the TABLE input of a table-in-out function; `any` for a parameter of any type.
pub const TYPE: &str = "vgi_type";
/// Value of [`TYPE`] for a TABLE parameter.
pub const TYPE_TABLE: &str = "table";
/// Value of [`TYPE`] for a parameter of any type.
pub const TYPE_ANY: &str = "any";
/// `true` for a scalar parameter that must be a constant (it arrives at bind).
pub const CONST: &str = "vgi_const";
/// `true` for a trailing parameter that takes any number of values.
pub const VARARGS: &str = "vgi_varargs";
/// The value of a boolean flag ([`CONST`], [`VARARGS`]) when set.
pub const TRUE: &str = "true";
/// The accepted integer range, as an interval such as `[0, +inf)`.
pub const RANGE: &str = "vgi_range";
/// The default of a named parameter, rendered as JSON.
pub const DEFAULT: &str = "vgi_default";
