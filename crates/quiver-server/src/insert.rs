//! `insert`: an exchange that appends each input batch to a table, all or nothing (the handshake is
//! `quiver_server_protocol::insert`), over [`TableInsert`], the insert core Flight SQL's bulk ingest
//! (`flight_sql/ingest.rs`) drives too. Outside a `BEGIN` of the session, the call opens its own
//! transaction: the commit marker commits it, any other end of the stream (the client closes or
//! cancels it, dies, a batch fails) rolls it back, so no row of an unfinished call is ever seen.
//! The call runs one `INSERT ... SELECT * FROM quiver_server_batch()` (extension/src/server_batch.cpp)
//! on a thread of its own, over a bounded queue the session thread fills (`insert_queue.rs`): a batch
//! is acknowledged once queued, so the next one travels while DuckDB appends this one. The
//! statement's error surfaces at the next acknowledgement or at the commit marker.

use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use quiver_rpc::{CallContext, Params, StreamOutput, StreamSetup, StreamState};
use quiver_server_protocol::insert::{ack, ack_schema, COMMIT_KEY, COMMIT_VALUE};
use quiver_server_protocol::limits::IDENTIFIER_BYTES_MAX;
use quiver_server_protocol::methods::param;
use quiver_server_protocol::parameters::decode_schema;
use quiver_server_protocol::{errors, InsertMode};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::duck::{batch_stream, one_batch_stream};
use crate::insert_queue::{queue, QueueWriter};
use crate::insert_types;
use crate::service::bounded_str;
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
    /// The table `table` in `schema_name` of `catalog` (each `None`: DuckDB's current one).
    pub fn new(table: String, schema_name: Option<String>, catalog: Option<String>) -> TableName {
        TableName {
            table,
            schema_name,
            catalog,
        }
    }

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
    let parameters = batch_stream(filter.schema(), vec![filter]);
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

/// The SQL column definitions (`"name" TYPE, ...`) DuckDB gives batches of `schema`.
///
/// The target is created from these, not by `CREATE TABLE ... AS` over an empty stream: in DuckDB
/// 2.0.0 a table made by an empty `CREATE TABLE AS` and then filled by a parallel (batch-index)
/// `INSERT` in the same transaction counts its rows but scans none. The types come from a
/// temporary table that DuckDB's own Arrow scan creates, so every type maps as a scan maps it.
fn column_definitions(session: &Arc<Session>, schema: &SchemaRef) -> Result<String, ErrorReport> {
    let shape = format!("quiver_insert_shape_{}", session.id);
    let create = format!(
        "CREATE OR REPLACE TEMPORARY TABLE {} AS SELECT * FROM quiver_server_batch()",
        quote(&shape)
    );
    let empty = one_batch_stream(RecordBatch::new_empty(Arc::clone(schema)));
    session.with(|open| open.duck.execute(&create, None, Some(empty)))?;
    let columns = format!(
        "SELECT column_name || '' AS name, data_type || '' AS type FROM duckdb_columns() \
         WHERE database_name = 'temp' AND table_name = '{shape}' ORDER BY column_index"
    );
    let mut cursor = session.with(|open| open.duck.query(&columns, None, 4096))?;
    let mut definitions = Vec::new();
    while let Some(batch) = session.with(|_| cursor.next_batch())? {
        let text = |index: usize| {
            arrow_cast::cast(batch.column(index), &arrow_schema::DataType::Utf8)
                .map_err(|e| errors::protocol(e.to_string()))
        };
        let (names, types) = (text(0)?, text(1)?);
        let names = names.as_any().downcast_ref::<arrow_array::StringArray>();
        let types = types.as_any().downcast_ref::<arrow_array::StringArray>();
        let (names, types) = names.zip(types).expect("cast to utf8 yields StringArrays");
        for (column, data_type) in names.iter().zip(types.iter()) {
            let (column, data_type) = column.zip(data_type).expect("columns have names and types");
            definitions.push(format!("{} {data_type}", quote(column)));
        }
    }
    drop(cursor);
    let drop_shape = format!("DROP TABLE temp.main.{}", quote(&shape));
    session.with(|open| open.duck.execute(&drop_shape, None, None))?;
    assert_eq!(
        definitions.len(),
        schema.fields().len(),
        "DuckDB made one column per field"
    );
    Ok(definitions.join(", "))
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
    let insert = TableInsert::begin(session, &name, &schema, mode)?;
    Ok(StreamSetup::exchange(
        schema,
        ack_schema(),
        InsertStream { insert },
    ))
}

/// The call's one `INSERT` statement, running on its own thread over the queue the session
/// thread fills. It holds the session's DuckDB connection until it ends.
struct Append {
    queue: QueueWriter,
    statement: JoinHandle<Result<Option<i64>, ErrorReport>>,
}

impl Append {
    fn start(
        session: &Arc<Session>,
        name: &TableName,
        schema: SchemaRef,
    ) -> Result<Append, ErrorReport> {
        let sql = format!(
            "INSERT INTO {} SELECT * FROM quiver_server_batch()",
            name.sql()
        );
        let shared = Arc::clone(&session.shared);
        let (queue, reader) = queue(schema, Box::new(move || shared.is_stopping()));
        let session = Arc::clone(session);
        let statement = std::thread::Builder::new()
            .name("quiver-insert".into())
            .spawn(move || {
                let input = FFI_ArrowArrayStream::new(Box::new(reader));
                session.with(|open| open.duck.execute(&sql, None, Some(input)))
            })
            .map_err(|e| errors::protocol(format!("insert: no thread for the statement: {e}")))?;
        Ok(Append { queue, statement })
    }

    /// Waits for the statement (it ends once its queue has ended or its reader failed).
    fn join(statement: JoinHandle<Result<Option<i64>, ErrorReport>>) -> Result<i64, ErrorReport> {
        let changed = statement
            .join()
            .map_err(|_| errors::protocol("insert: the statement's thread panicked"))??;
        changed.ok_or_else(|| errors::protocol("insert: DuckDB reported no row count"))
    }
}

/// One all-or-nothing insert into a table, the core both front doors drive (the spine's `insert`
/// stream below, Flight SQL's bulk ingest): [`TableInsert::begin`] opens its own transaction
/// unless the session is in one, creates the table as `mode` says, checks the columns and starts
/// the one `INSERT`; [`TableInsert::push`] queues batches; [`TableInsert::commit`] ends it. Any
/// other end — an error, a drop — rolls back what it did.
pub struct TableInsert {
    session: Arc<Session>,
    owns_transaction: bool,
    finished: bool,
    /// Rows queued by this call so far (what the acknowledgements report).
    rows: i64,
    /// `None` once the call ended.
    append: Option<Append>,
    /// The schema DuckDB scans when the batches need widening first (`insert_types.rs`).
    widened: Option<SchemaRef>,
}

impl TableInsert {
    /// Begins inserting batches of `schema` into `name`.
    pub fn begin(
        session: &Arc<Session>,
        name: &TableName,
        schema: &SchemaRef,
        mode: InsertMode,
    ) -> Result<TableInsert, ErrorReport> {
        let in_transaction = session.with(|open| Ok(open.duck.in_transaction()))?;
        let mut insert = TableInsert {
            session: Arc::clone(session),
            owns_transaction: !in_transaction,
            finished: false,
            rows: 0,
            append: None,
            widened: insert_types::widened(schema),
        };
        let schema = insert.widened.clone().unwrap_or_else(|| Arc::clone(schema));
        let schema = &schema;
        if insert.owns_transaction {
            session.with(|open| open.duck.execute("BEGIN TRANSACTION", None, None))?;
        }
        // From here on, dropping `insert` rolls back what this call did.
        let create = match mode {
            InsertMode::Append => None,
            InsertMode::Create => Some("CREATE TABLE"),
            InsertMode::CreateAppend => Some("CREATE TABLE IF NOT EXISTS"),
            InsertMode::Replace => Some("CREATE OR REPLACE TABLE"),
        };
        if let Some(create) = create {
            let columns = column_definitions(session, schema)?;
            let sql = format!("{create} {} ({columns})", name.sql());
            session.with(|open| open.duck.execute(&sql, None, None))?;
        }
        let columns = table_schema(session, name)?;
        check_columns(&name.sql(), schema, &columns)?;
        insert.append = Some(Append::start(session, name, Arc::clone(schema))?);
        Ok(insert)
    }

    /// Rows queued so far.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Whether it committed or rolled back.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Queues one batch (a zero-row batch is only a check that the statement still runs).
    pub fn push(&mut self, batch: &RecordBatch) -> Result<(), ErrorReport> {
        let append = self
            .append
            .as_ref()
            .expect("a running call has its statement");
        let batch = match &self.widened {
            Some(schema) => insert_types::widen(batch, schema)?,
            None => batch.clone(),
        };
        let rows = batch.num_rows();
        let bytes = batch.get_array_memory_size();
        if rows > 0 && append.queue.push(batch).is_err() {
            return Err(self.fail());
        }
        // The statement ends early only by failing: report it at this acknowledgement.
        if append.statement.is_finished() {
            return Err(self.fail());
        }
        self.rows += rows as i64;
        crate::metrics::metrics().batch_in(rows, bytes);
        Ok(())
    }

    /// The statement's error, once it ended; the call is rolled back.
    fn fail(&mut self) -> ErrorReport {
        let append = self
            .append
            .take()
            .expect("a running call has its statement");
        drop(append.queue);
        let error = match Append::join(append.statement) {
            Err(error) => error,
            Ok(_) => errors::protocol("insert: the statement ended before the commit marker"),
        };
        self.roll_back();
        if self.session.shared.is_stopping() {
            return errors::stopping();
        }
        error
    }

    /// Ends the input and commits (unless the session's own transaction holds it); the rows
    /// inserted.
    pub fn commit(&mut self) -> Result<i64, ErrorReport> {
        let append = self
            .append
            .take()
            .expect("a running call has its statement");
        append.queue.finish();
        let changed = match Append::join(append.statement) {
            Ok(changed) => changed,
            Err(error) => {
                self.roll_back();
                return Err(error);
            }
        };
        assert_eq!(
            changed, self.rows,
            "DuckDB inserted a different number of rows than the call queued"
        );
        self.finished = true;
        if self.owns_transaction {
            self.session
                .with(|open| open.duck.execute("COMMIT", None, None))?;
        }
        Ok(self.rows)
    }

    /// Abandons the insert and rolls back what it did (nothing once finished).
    pub fn roll_back(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(append) = self.append.take() {
            // The queue abandoned, the statement fails and appends nothing.
            drop(append.queue);
            let _ = Append::join(append.statement);
        }
        if self.owns_transaction {
            // Best effort: closing the session rolls back too.
            let _ = self
                .session
                .with(|open| open.duck.execute("ROLLBACK", None, None));
        }
    }
}

/// The spine's `insert` exchange: one acknowledgement per batch, the commit marker commits.
struct InsertStream {
    insert: TableInsert,
}

impl StreamState for InsertStream {
    fn process(
        &mut self,
        input: &RecordBatch,
        input_metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.insert.is_finished() {
            return Err(errors::protocol("insert: a batch after the commit marker"));
        }
        self.insert.push(input)?;
        if input_metadata.get(COMMIT_KEY) == Some(COMMIT_VALUE) {
            self.insert.commit()?;
        }
        output.emit(ack(self.insert.rows()));
        Ok(())
    }

    fn on_cancel(&mut self) {
        self.insert.roll_back();
    }
}

impl Drop for TableInsert {
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
