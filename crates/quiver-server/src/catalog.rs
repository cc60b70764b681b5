//! `tables`: the catalog listing, read from DuckDB's own `duckdb_tables()` and `duckdb_views()`
//! and cast to the protocol's `tables_schema`.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_cast::cast;
use quiver_rpc::{CallContext, Params, StreamOutput, StreamSetup, StreamState};
use quiver_server_protocol::errors;
use quiver_server_protocol::limits::IDENTIFIER_BYTES_MAX;
use quiver_server_protocol::methods::{param, tables_schema};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::duck::batch_stream;
use crate::service::bounded_str;
use crate::session::Session;

const LISTING: &str = "SELECT * FROM (\
     SELECT database_name, schema_name, table_name, 'BASE TABLE' AS table_type, \
            column_count, estimated_size AS estimated_rows \
       FROM duckdb_tables() WHERE NOT internal \
     UNION ALL \
     SELECT database_name, schema_name, view_name, 'VIEW', column_count, NULL::BIGINT \
       FROM duckdb_views() WHERE NOT internal) \
     WHERE ($1::VARCHAR IS NULL OR database_name = $1) AND ($2::VARCHAR IS NULL OR schema_name = $2) \
     ORDER BY 1, 2, 3";

/// `tables(catalog?, schema_name?)`.
pub fn tables(session: &Arc<Session>, params: &Params) -> Result<StreamSetup, ErrorReport> {
    let catalog = bounded_str(params, param::CATALOG, IDENTIFIER_BYTES_MAX)?.map(str::to_string);
    let schema_name =
        bounded_str(params, param::SCHEMA_NAME, IDENTIFIER_BYTES_MAX)?.map(str::to_string);
    let filter = RecordBatch::try_from_iter(vec![
        (
            "catalog",
            Arc::new(arrow_array::StringArray::from(vec![catalog])) as ArrayRef,
        ),
        (
            "schema_name",
            Arc::new(arrow_array::StringArray::from(vec![schema_name])) as ArrayRef,
        ),
    ])
    .map_err(|e| errors::protocol(e.to_string()))?;
    let parameters = batch_stream(filter.schema(), vec![filter]);
    let mut cursor = session.with(|open| open.duck.query(LISTING, Some(parameters), 4096))?;
    let mut batches = Vec::new();
    while let Some(batch) = session.with(|_| cursor.next_batch())? {
        batches.push(conform(&batch)?);
    }
    batches.reverse();
    Ok(StreamSetup::producer(tables_schema(), Listing { batches }))
}

/// DuckDB's column types (its string layout, its integer widths) as the protocol's.
fn conform(batch: &RecordBatch) -> Result<RecordBatch, ErrorReport> {
    let schema = tables_schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| cast(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| errors::protocol(format!("tables: {e}")))?;
    RecordBatch::try_new(schema, columns).map_err(|e| errors::protocol(format!("tables: {e}")))
}

struct Listing {
    /// In reverse order: popped from the end.
    batches: Vec<RecordBatch>,
}

impl StreamState for Listing {
    fn process(
        &mut self,
        _input: &RecordBatch,
        _input_metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        match self.batches.pop() {
            Some(batch) => output.emit(batch),
            None => output.finish(),
        }
        Ok(())
    }
}
