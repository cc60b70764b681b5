//! What the server's database holds: the tables and views a session sees, and one table's schema.

use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::SchemaRef;
use quiver_server_protocol::{limits, methods, parameters};

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::request::{request, Value};

/// One table or view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// The catalog (attached database).
    pub catalog: String,
    /// The schema.
    pub schema_name: String,
    /// The table's name.
    pub table_name: String,
    /// `BASE TABLE` or `VIEW`.
    pub table_type: String,
    /// How many columns it has.
    pub column_count: i64,
    /// DuckDB's row estimate; `None` for views.
    pub estimated_rows: Option<i64>,
}

/// Most tables one listing collects (a bound on what [`Connection::tables`] holds).
pub const TABLES_LISTED_MAX: usize = 1 << 20;

impl Connection {
    /// Every table and view the session sees.
    pub fn tables(&mut self) -> Result<Vec<TableInfo>> {
        let params = request(
            methods::tables_params(),
            &[Value::Text(None), Value::Text(None)],
        );
        let mut tables = Vec::new();
        let stream = crate::query::QueryStream::open(self.wire(), methods::TABLES, &params)?;
        for batch in stream {
            read_tables(&batch?, &mut tables)?;
            if tables.len() > TABLES_LISTED_MAX {
                return Err(Error::Protocol(format!(
                    "more than {TABLES_LISTED_MAX} tables listed"
                )));
            }
        }
        Ok(tables)
    }

    /// The Arrow schema of a table in the session's default catalog and schema.
    pub fn table_schema(&mut self, table: &str) -> Result<SchemaRef> {
        check_identifier(table)?;
        let params = request(
            methods::table_schema_params(),
            &[
                Value::Text(Some(table)),
                Value::Text(None),
                Value::Text(None),
            ],
        );
        let reply = self.unary(methods::TABLE_SCHEMA, &params)?;
        let bytes = reply
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .filter(|column| column.len() == 1 && !column.is_null(0))
            .ok_or_else(|| Error::Protocol("table_schema answered no schema".into()))?;
        parameters::decode_schema(bytes.value(0), "table schema")
            .map_err(|report| Error::Protocol(report.message))
    }
}

pub(crate) fn check_identifier(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > limits::IDENTIFIER_BYTES_MAX {
        return Err(Error::InvalidInput(format!(
            "identifier of {} bytes (1..={} allowed)",
            name.len(),
            limits::IDENTIFIER_BYTES_MAX
        )));
    }
    Ok(())
}

fn read_tables(batch: &RecordBatch, tables: &mut Vec<TableInfo>) -> Result<()> {
    let text = |name: &str| -> Result<&StringArray> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| Error::Protocol(format!("tables listing has no utf8 {name}")))
    };
    let int = |name: &str| -> Result<&Int64Array> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .ok_or_else(|| Error::Protocol(format!("tables listing has no int64 {name}")))
    };
    use methods::tables as col;
    let (catalog, schema, name, kind) = (
        text(col::CATALOG)?,
        text(col::SCHEMA_NAME)?,
        text(col::TABLE_NAME)?,
        text(col::TABLE_TYPE)?,
    );
    let (columns, estimate) = (int(col::COLUMN_COUNT)?, int(col::ESTIMATED_ROWS)?);
    for row in 0..batch.num_rows() {
        tables.push(TableInfo {
            catalog: catalog.value(row).to_string(),
            schema_name: schema.value(row).to_string(),
            table_name: name.value(row).to_string(),
            table_type: kind.value(row).to_string(),
            column_count: columns.value(row),
            estimated_rows: (!estimate.is_null(row)).then(|| estimate.value(row)),
        });
    }
    Ok(())
}
