//! `insert`: an exchange that appends each input batch to a table, all or nothing (the handshake is
//! `quiver_server_protocol::insert`). Outside a `BEGIN` of the session, the call opens its own
//! transaction: the commit marker commits it, any other end of the stream (the client closes or
//! cancels it, dies, a batch fails) rolls it back, so no row of an unfinished call is ever seen.
//! Batches reach DuckDB through `quiver_server_batch()` (extension/src/server_batch.cpp).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use quiver_rpc::{CallContext, Params, StreamOutput, StreamSetup, StreamState};
use quiver_server_protocol::insert::{ack, ack_schema, COMMIT_KEY, COMMIT_VALUE};
use quiver_server_protocol::limits::IDENTIFIER_BYTES_MAX;
use quiver_server_protocol::methods::param;
use quiver_server_protocol::parameters::decode_schema;
use quiver_server_protocol::{errors, InsertMode};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::service::{bounded_str, one_batch_stream};
use crate::session::Session;

/// A table named by a request: catalog and schema optional.
pub struct TableName {
    table: String,
    schema_name: Option<String>,
    catalog: Option<String>,
}

fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

impl TableName {
    /// The table a request names (`table`, `schema_name`, `catalog`).
    pub fn from_params(params: &Params) -> Result<TableName, ErrorReport> {
        let text = |name| bounded_str(params, name, IDENTIFIER_BYTES_MAX);
        Ok(TableName {
            table: text(param::TABLE)?
                .ok_or_else(|| errors::protocol("table must not be null"))?
                .to_string(),
            schema_name: text(param::SCHEMA_NAME)?.map(str::to_string),
            catalog: text(param::CATALOG)?.map(str::to_string),
        })
    }

    /// The quoted, qualified name for SQL text.
    fn sql(&self) -> String {
        [
            self.catalog.as_deref(),
            self.schema_name.as_deref(),
            Some(&self.table),
        ]
        .into_iter()
        .flatten()
        .map(quote)
        .collect::<Vec<_>>()
        .join(".")
    }
}

/// The `NOT NULL` columns of a table, from DuckDB's catalog (a result schema says every column
/// may be null).
const NOT_NULL_COLUMNS: &str = "SELECT column_name FROM duckdb_columns() \
     WHERE database_name = coalesce($1, current_database()) \
       AND schema_name = coalesce($2, current_schema()) \
       AND table_name = $3 AND NOT is_nullable";

/// A table's Arrow schema, as DuckDB exports its columns, with its `NOT NULL` columns non-nullable.
pub fn table_schema(session: &Arc<Session>, name: &TableName) -> Result<SchemaRef, ErrorReport> {
    let sql = format!("SELECT * FROM {} LIMIT 0", name.sql());
    let schema = session
        .with(|open| open.duck.query(&sql, None, 1))?
        .schema();
    let filter = RecordBatch::try_from_iter(vec![
        ("catalog", text_column(name.catalog.as_deref())),
        ("schema_name", text_column(name.schema_name.as_deref())),
        ("table", text_column(Some(&name.table))),
    ])
    .map_err(|e| errors::protocol(e.to_string()))?;
    let parameters = crate::duck::batch_stream(filter.schema(), vec![filter]);
    let mut cursor =
        session.with(|open| open.duck.query(NOT_NULL_COLUMNS, Some(parameters), 4096))?;
    let mut not_null = Vec::new();
    while let Some(batch) = session.with(|_| cursor.next_batch())? {
        let names = arrow_cast::cast(batch.column(0), &arrow_schema::DataType::Utf8)
            .map_err(|e| errors::protocol(e.to_string()))?;
        let names = names
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("cast to utf8 yields a StringArray");
        not_null.extend(names.iter().flatten().map(str::to_string));
    }
    let fields: Vec<arrow_schema::Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let required = not_null.iter().any(|name| name == field.name());
            field.as_ref().clone().with_nullable(!required)
        })
        .collect();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

fn text_column(value: Option<&str>) -> arrow_array::ArrayRef {
    Arc::new(arrow_array::StringArray::from(vec![value]))
}

/// Refuses batches whose columns are not the table's, naming the first column that differs.
fn check_columns(table: &str, batches: &Schema, columns: &Schema) -> Result<(), ErrorReport> {
    for (index, field) in batches.fields().iter().enumerate() {
        let Some(column) = columns.fields().get(index) else {
            return Err(errors::sql(
                "Binder",
                format!(
                    "Binder Error: table {table} has {} columns but the batches have {}; column '{}' has no place",
                    columns.fields().len(),
                    batches.fields().len(),
                    field.name()
                ),
            ));
        };
        if !column.name().eq_ignore_ascii_case(field.name()) {
            return Err(errors::sql(
                "Binder",
                format!(
                    "Binder Error: column {} of table {table} is '{}' but the batches name it '{}'",
                    index + 1,
                    column.name(),
                    field.name()
                ),
            ));
        }
    }
    if let Some(missing) = columns.fields().get(batches.fields().len()) {
        return Err(errors::sql(
            "Binder",
            format!(
                "Binder Error: the batches lack column '{}' of table {table}",
                missing.name()
            ),
        ));
    }
    Ok(())
}

/// `insert(table, schema_name?, catalog?, schema, mode)`.
pub fn insert(session: &Arc<Session>, params: &Params) -> Result<StreamSetup, ErrorReport> {
    let name = TableName::from_params(params)?;
    let schema = decode_schema(params.bytes(param::SCHEMA)?, "insert schema")?;
    let mode: InsertMode = params.str(param::MODE)?.parse().map_err(errors::protocol)?;
    let in_transaction = session.with(|open| Ok(open.duck.in_transaction()))?;
    let state = Insert {
        session: Arc::clone(session),
        sql: format!(
            "INSERT INTO {} SELECT * FROM quiver_server_batch()",
            name.sql()
        ),
        owns_transaction: !in_transaction,
        finished: false,
        rows: 0,
    };
    if state.owns_transaction {
        session.with(|open| open.duck.execute("BEGIN TRANSACTION", None, None))?;
    }
    // From here on, dropping `state` rolls back what this call did.
    let create = match mode {
        InsertMode::Append => None,
        InsertMode::Create => Some("CREATE TABLE"),
        InsertMode::CreateAppend => Some("CREATE TABLE IF NOT EXISTS"),
        InsertMode::Replace => Some("CREATE OR REPLACE TABLE"),
    };
    if let Some(create) = create {
        let sql = format!(
            "{create} {} AS SELECT * FROM quiver_server_batch()",
            name.sql()
        );
        let empty = one_batch_stream(RecordBatch::new_empty(Arc::clone(&schema)));
        session.with(|open| open.duck.execute(&sql, None, Some(empty)))?;
    }
    let columns = table_schema(session, &name)?;
    check_columns(&name.sql(), &schema, &columns)?;
    Ok(StreamSetup::exchange(schema, ack_schema(), state))
}

struct Insert {
    session: Arc<Session>,
    sql: String,
    owns_transaction: bool,
    finished: bool,
    rows: i64,
}

impl Insert {
    fn append(&mut self, batch: &RecordBatch) -> Result<(), ErrorReport> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let stream = one_batch_stream(batch.clone());
        let changed = self
            .session
            .with(|open| open.duck.execute(&self.sql, None, Some(stream)))?;
        let changed = changed.unwrap_or(batch.num_rows() as i64);
        assert_eq!(
            changed,
            batch.num_rows() as i64,
            "DuckDB inserted a different number of rows than the batch holds"
        );
        self.rows += changed;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), ErrorReport> {
        self.finished = true;
        if self.owns_transaction {
            self.session
                .with(|open| open.duck.execute("COMMIT", None, None))?;
        }
        Ok(())
    }

    fn roll_back(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.owns_transaction {
            // Best effort: closing the session rolls back too.
            let _ = self
                .session
                .with(|open| open.duck.execute("ROLLBACK", None, None));
        }
    }
}

impl StreamState for Insert {
    fn process(
        &mut self,
        input: &RecordBatch,
        input_metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.finished {
            return Err(errors::protocol("insert: a batch after the commit marker"));
        }
        if let Err(error) = self.append(input) {
            self.roll_back();
            return Err(error);
        }
        if input_metadata.get(COMMIT_KEY) == Some(COMMIT_VALUE) {
            self.commit()?;
        }
        output.emit(ack(self.rows));
        Ok(())
    }

    fn on_cancel(&mut self) {
        self.roll_back();
    }
}

impl Drop for Insert {
    fn drop(&mut self) {
        self.roll_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    fn schema(names: &[&str]) -> Schema {
        Schema::new(
            names
                .iter()
                .map(|name| Field::new(*name, DataType::Int32, true))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn columns_must_match_by_position_and_name() {
        let table = schema(&["id", "value"]);
        assert!(check_columns("t", &schema(&["ID", "Value"]), &table).is_ok());
        let renamed = check_columns("t", &schema(&["id", "price"]), &table).unwrap_err();
        assert!(renamed.message.contains("price") && renamed.message.contains("value"));
        assert_eq!(renamed.error_type, "BinderException");
        let extra = check_columns("t", &schema(&["id", "value", "more"]), &table).unwrap_err();
        assert!(extra.message.contains("more"));
        let missing = check_columns("t", &schema(&["id"]), &table).unwrap_err();
        assert!(missing.message.contains("value"));
    }

    #[test]
    fn identifiers_are_quoted() {
        let name = TableName {
            table: "we\"ird".into(),
            schema_name: Some("main".into()),
            catalog: None,
        };
        assert_eq!(name.sql(), "\"main\".\"we\"\"ird\"");
    }
}
