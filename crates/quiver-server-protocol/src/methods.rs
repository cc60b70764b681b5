//! Every method of `quiver.server`, with its parameter fields and its reply. The server declares
//! its methods from these functions and the clients build requests from them, so a field renamed
//! here is renamed for both.
//!
//! | method | kind | parameters | reply |
//! |---|---|---|---|
//! | `connect` | unary | `token`?, `client_name`? | [`SessionInfo`](crate::SessionInfo) struct |
//! | `execute` | unary | `sql`, `parameters`? | rows changed (`int64`, null when the statement reports none) |
//! | `query` | producer | `sql`, `parameters`?, `batch_rows`? | the result's batches |
//! | `prepare` | unary | `sql` | [`PREPARED_FIELDS`] struct |
//! | `execute_prepared` | unary | `statement_id`, `parameters`? | rows changed |
//! | `query_prepared` | producer | `statement_id`, `parameters`?, `batch_rows`? | the result's batches |
//! | `close_prepared` | unary | `statement_id` | void |
//! | `insert` | exchange | `table`, `schema_name`?, `catalog`?, `schema`, `mode` | one [`insert::ack_schema`](crate::insert::ack_schema) batch per input batch |
//! | `tables` | producer | `catalog`?, `schema_name`? | [`tables_schema`] batches |
//! | `table_schema` | unary | `table`, `schema_name`?, `catalog`? | the table's Arrow schema (a schema message) |
//! | `cancel` | unary | `session_id` | whether a running statement of that session was interrupted |
//!
//! `parameters` is a nested Arrow IPC stream (see [`crate::parameters`]): one row per execution,
//! one column per statement parameter, in order. `batch_rows` bounds the rows per output batch
//! (default [`crate::limits::BATCH_ROWS_DEFAULT`]). A `?` marks a nullable parameter.
//!
//! `connect` opens the session and must come first, with one exception: `cancel` may be the one
//! call of a connection that never connects. There the session id is the credential (it is 128
//! random bits only the session's client knows), so a client stops its statement without a
//! `max_connections` place; a wrong id is a failed authentication, and the connection closes after
//! the answer either way.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

/// Opens the session; the first call on every connection.
pub const CONNECT: &str = "connect";
/// Runs SQL (one or more statements; with parameters, exactly one) and reports rows changed.
pub const EXECUTE: &str = "execute";
/// Runs one statement and streams its result.
pub const QUERY: &str = "query";
/// Prepares one statement on the session.
pub const PREPARE: &str = "prepare";
/// Executes a prepared statement and reports rows changed.
pub const EXECUTE_PREPARED: &str = "execute_prepared";
/// Executes a prepared statement and streams its result.
pub const QUERY_PREPARED: &str = "query_prepared";
/// Forgets a prepared statement.
pub const CLOSE_PREPARED: &str = "close_prepared";
/// Appends a stream of Arrow batches to a table, all or nothing.
pub const INSERT: &str = "insert";
/// Lists tables and views.
pub const TABLES: &str = "tables";
/// One table's Arrow schema.
pub const TABLE_SCHEMA: &str = "table_schema";
/// Interrupts another session's running statement.
pub const CANCEL: &str = "cancel";

/// Every method name, in the order of the table above.
pub const ALL: [&str; 11] = [
    CONNECT,
    EXECUTE,
    QUERY,
    PREPARE,
    EXECUTE_PREPARED,
    QUERY_PREPARED,
    CLOSE_PREPARED,
    INSERT,
    TABLES,
    TABLE_SCHEMA,
    CANCEL,
];

/// Parameter names shared by several methods.
pub mod param {
    /// The access token (`connect`).
    pub const TOKEN: &str = "token";
    /// A name the client gives itself, for the server's log (`connect`).
    pub const CLIENT_NAME: &str = "client_name";
    /// SQL text.
    pub const SQL: &str = "sql";
    /// Statement parameters, a nested IPC stream.
    pub const PARAMETERS: &str = "parameters";
    /// Most rows per output batch.
    pub const BATCH_ROWS: &str = "batch_rows";
    /// A prepared statement's id.
    pub const STATEMENT_ID: &str = "statement_id";
    /// A table's name (unquoted; the server quotes it).
    pub const TABLE: &str = "table";
    /// A schema's name (unquoted), null for the session's default.
    pub const SCHEMA_NAME: &str = "schema_name";
    /// A catalog (attached database) name (unquoted), null for the session's default.
    pub const CATALOG: &str = "catalog";
    /// The Arrow schema of the batches an insert sends, a schema message.
    pub const SCHEMA: &str = "schema";
    /// An [`InsertMode`](crate::InsertMode) name.
    pub const MODE: &str = "mode";
    /// Another session's id (`cancel`).
    pub const SESSION_ID: &str = "session_id";
}

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

fn binary(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Binary, nullable)
}

fn int64(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Int64, nullable)
}

fn table_ref() -> Vec<Field> {
    vec![
        utf8(param::TABLE, false),
        utf8(param::SCHEMA_NAME, true),
        utf8(param::CATALOG, true),
    ]
}

/// `connect` parameters.
pub fn connect_params() -> Vec<Field> {
    vec![utf8(param::TOKEN, true), utf8(param::CLIENT_NAME, true)]
}

/// `execute` parameters.
pub fn execute_params() -> Vec<Field> {
    vec![utf8(param::SQL, false), binary(param::PARAMETERS, true)]
}

/// `query` parameters.
pub fn query_params() -> Vec<Field> {
    vec![
        utf8(param::SQL, false),
        binary(param::PARAMETERS, true),
        int64(param::BATCH_ROWS, true),
    ]
}

/// `prepare` parameters.
pub fn prepare_params() -> Vec<Field> {
    vec![utf8(param::SQL, false)]
}

/// `execute_prepared` parameters.
pub fn execute_prepared_params() -> Vec<Field> {
    vec![
        int64(param::STATEMENT_ID, false),
        binary(param::PARAMETERS, true),
    ]
}

/// `query_prepared` parameters.
pub fn query_prepared_params() -> Vec<Field> {
    vec![
        int64(param::STATEMENT_ID, false),
        binary(param::PARAMETERS, true),
        int64(param::BATCH_ROWS, true),
    ]
}

/// `close_prepared` parameters.
pub fn close_prepared_params() -> Vec<Field> {
    vec![int64(param::STATEMENT_ID, false)]
}

/// `insert` parameters.
pub fn insert_params() -> Vec<Field> {
    let mut fields = table_ref();
    fields.push(binary(param::SCHEMA, false));
    fields.push(utf8(param::MODE, false));
    fields
}

/// `tables` parameters.
pub fn tables_params() -> Vec<Field> {
    vec![utf8(param::CATALOG, true), utf8(param::SCHEMA_NAME, true)]
}

/// `table_schema` parameters.
pub fn table_schema_params() -> Vec<Field> {
    table_ref()
}

/// `cancel` parameters.
pub fn cancel_params() -> Vec<Field> {
    vec![utf8(param::SESSION_ID, false)]
}

/// The reply of `execute` and `execute_prepared`: rows changed, null when the statement reports
/// no count (DDL, a `SELECT` run for its side effects).
pub fn rows_changed_result() -> Field {
    int64("result", true)
}

/// The reply of `table_schema`: the table's Arrow schema as a schema message.
pub fn table_schema_result() -> Field {
    binary("result", false)
}

/// The reply of `cancel`.
pub fn cancel_result() -> Field {
    Field::new("result", DataType::Boolean, false)
}

/// The fields of `prepare`'s reply.
pub mod prepared {
    /// The id later calls name the statement by (unique within the session).
    pub const STATEMENT_ID: &str = "statement_id";
    /// How many parameters the statement takes.
    pub const PARAMETER_COUNT: &str = "parameter_count";
    /// The Arrow schema of its result (a schema message); null when the statement returns none.
    pub const RESULT_SCHEMA: &str = "result_schema";
}

/// The struct `prepare` answers with.
pub fn prepare_result() -> Field {
    let fields = Fields::from(vec![
        int64(prepared::STATEMENT_ID, false),
        int64(prepared::PARAMETER_COUNT, false),
        binary(prepared::RESULT_SCHEMA, true),
    ]);
    Field::new("result", DataType::Struct(fields), false)
}

/// The columns of the `tables` listing.
pub mod tables {
    /// The catalog (attached database).
    pub const CATALOG: &str = "catalog";
    /// The schema.
    pub const SCHEMA_NAME: &str = "schema_name";
    /// The table or view.
    pub const TABLE_NAME: &str = "table_name";
    /// `BASE TABLE` or `VIEW`.
    pub const TABLE_TYPE: &str = "table_type";
    /// How many columns it has.
    pub const COLUMN_COUNT: &str = "column_count";
    /// DuckDB's row estimate; null for views.
    pub const ESTIMATED_ROWS: &str = "estimated_rows";
}

/// The schema of the `tables` listing.
pub fn tables_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(tables::CATALOG, false),
        utf8(tables::SCHEMA_NAME, false),
        utf8(tables::TABLE_NAME, false),
        utf8(tables::TABLE_TYPE, false),
        int64(tables::COLUMN_COUNT, false),
        int64(tables::ESTIMATED_ROWS, true),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn method_names_are_unique() {
        let names: HashSet<&str> = ALL.iter().copied().collect();
        assert_eq!(names.len(), ALL.len());
    }

    #[test]
    fn parameter_names_are_unique_per_method() {
        for fields in [
            connect_params(),
            execute_params(),
            query_params(),
            prepare_params(),
            execute_prepared_params(),
            query_prepared_params(),
            close_prepared_params(),
            insert_params(),
            tables_params(),
            table_schema_params(),
            cancel_params(),
        ] {
            let names: HashSet<&String> = fields.iter().map(|f| f.name()).collect();
            assert_eq!(names.len(), fields.len());
        }
    }
}
