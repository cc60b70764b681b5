//! Enum members that travel as their names (`dictionary<int16, utf8>` or plain strings): the
//! spellings both sides compare against.

/// `FunctionType`: what a `BindRequest` asks to bind and `FunctionInfo` declares. A
/// table-in-out function is a `TABLE` with a TABLE parameter.
pub mod function_type {
    /// A scalar function.
    pub const SCALAR: &str = "SCALAR";
    /// A table or table-in-out function.
    pub const TABLE: &str = "TABLE";
    /// A buffered table function: sees its whole input before it answers.
    pub const TABLE_BUFFERING: &str = "TABLE_BUFFERING";
}

/// `CatalogObjectType`: the kinds of catalog entry a schema's contents are listed by.
pub mod object_type {
    /// Scalar functions.
    pub const SCALAR_FUNCTION: &str = "SCALAR_FUNCTION";
    /// Table and table-in-out functions.
    pub const TABLE_FUNCTION: &str = "TABLE_FUNCTION";
    /// Aggregate functions.
    pub const AGGREGATE_FUNCTION: &str = "AGGREGATE_FUNCTION";
}

/// `InitRequest.phase` of a table-in-out or buffered call.
pub mod init_phase {
    /// The input stream: batches in, batches out.
    pub const INPUT: &str = "INPUT";
    /// After the input ended: what the function emits at the end, on the same connection.
    pub const FINALIZE: &str = "FINALIZE";
    /// A buffered call's sink: the header names the execution, the stream carries no data.
    pub const TABLE_BUFFERING: &str = "TABLE_BUFFERING";
    /// A buffered call's output for one finalize id.
    pub const TABLE_BUFFERING_FINALIZE: &str = "TABLE_BUFFERING_FINALIZE";
}
