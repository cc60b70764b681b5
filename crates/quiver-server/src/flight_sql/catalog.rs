//! The catalog commands: catalogs, db schemas, tables (with their Arrow schemas on request) and
//! table types, read from DuckDB's own `duckdb_databases()`, `duckdb_schemas()`, `duckdb_tables()`
//! and `duckdb_views()` and answered through arrow-flight's builders (which apply the commands'
//! filters as Flight SQL defines them), and a table's primary key from `duckdb_constraints()`.
//! The spine's listing, `tables`, is `crate::catalog`.
//!
//! The listing shows the databases a client attached or opened (`NOT internal`: not DuckDB's
//! `system` and `temp`); a metadata call runs on a session of its own, which has no temporary
//! tables. At most [`TABLES_MAX`] tables per call; more is a clear error asking for a filter.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::ProstMessageExt;
use arrow_flight::sql::{
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetPrimaryKeys, CommandGetTableTypes,
    CommandGetTables,
};
use arrow_flight::{FlightDescriptor, FlightInfo};
use arrow_schema::DataType;
use futures::StreamExt;
use prost::Message;
use tonic::{Request, Response, Status};

use super::lease::Lease;
use super::result_types::ResultTypes;
use super::service::FlightSql;
use super::statements;
use super::status::status;
use crate::duck::batch_stream;
use crate::insert::{table_schema, TableName};

/// Most tables one `GetTables` lists.
pub const TABLES_MAX: usize = 10_000;
/// The table types DuckDB has, as Flight SQL clients name them.
pub const TABLE_TYPES: [&str; 3] = ["BASE TABLE", "LOCAL TEMPORARY", "VIEW"];

const CATALOGS: &str = "SELECT database_name FROM duckdb_databases() WHERE NOT internal ORDER BY 1";
const SCHEMAS: &str = "SELECT s.database_name, s.schema_name FROM duckdb_schemas() s \
     JOIN duckdb_databases() d USING (database_name) WHERE NOT d.internal ORDER BY 1, 2";
/// Tables and views, narrowed by the catalog and the two patterns when given (the builder applies
/// the same filters again; narrowing here spares reading schemas of tables it would drop).
const TABLES: &str = "SELECT * FROM (\
     SELECT database_name, schema_name, table_name, \
            CASE WHEN temporary THEN 'LOCAL TEMPORARY' ELSE 'BASE TABLE' END AS table_type \
       FROM duckdb_tables() WHERE NOT internal \
     UNION ALL \
     SELECT database_name, schema_name, view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal) \
     WHERE ($1::VARCHAR IS NULL OR database_name = $1) \
       AND ($2::VARCHAR IS NULL OR schema_name LIKE $2) \
       AND ($3::VARCHAR IS NULL OR table_name LIKE $3) \
     ORDER BY 1, 2, 3";

/// Primary key columns of one table, narrowed by catalog and schema when given, in Flight SQL's
/// order (the command names a table, not a pattern).
const PRIMARY_KEYS: &str = "SELECT database_name, schema_name, table_name, \
            constraint_column_names[k] AS column_name, constraint_name, k AS key_sequence \
       FROM duckdb_constraints(), range(1, len(constraint_column_names) + 1) r(k) \
      WHERE constraint_type = 'PRIMARY KEY' \
        AND ($1::VARCHAR IS NULL OR database_name = $1) \
        AND ($2::VARCHAR IS NULL OR schema_name = $2) \
        AND table_name = $3 \
      ORDER BY 1, 2, 3, 5, 6";

/// The rows of a listing query, as text, at most `rows_max`.
fn listing(
    lease: &Lease,
    sql: &str,
    parameters: &[Option<&str>],
    rows_max: usize,
) -> Result<Vec<Vec<String>>, Status> {
    let parameters = if parameters.is_empty() {
        None
    } else {
        let columns: Vec<(String, ArrayRef)> = parameters
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let column: ArrayRef = Arc::new(StringArray::from(vec![*value]));
                (format!("p{index}"), column)
            })
            .collect();
        let batch = RecordBatch::try_from_iter(columns)
            .map_err(|e| Status::internal(format!("listing parameters: {e}")))?;
        Some(batch_stream(batch.schema(), vec![batch]))
    };
    let session = lease.session();
    let mut cursor = session
        .with(|open| open.duck.query(sql, parameters, 4096))
        .map_err(status)?;
    let mut rows = Vec::new();
    while let Some(batch) = session.with(|_| cursor.next_batch()).map_err(status)? {
        if rows.len() + batch.num_rows() > rows_max {
            return Err(Status::resource_exhausted(format!(
                "the listing has more than {rows_max} rows; narrow it with a filter"
            )));
        }
        let columns = batch
            .columns()
            .iter()
            .map(|column| arrow_cast::cast(column, &DataType::Utf8))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Status::internal(format!("listing: {e}")))?;
        let columns: Vec<&StringArray> = columns
            .iter()
            .map(|column| column.as_any().downcast_ref().expect("cast to utf8"))
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(
                columns
                    .iter()
                    .map(|column| column.value(row).to_string())
                    .collect(),
            );
        }
    }
    Ok(rows)
}

fn built<E: std::fmt::Display>(result: Result<RecordBatch, E>) -> Result<RecordBatch, Status> {
    result.map_err(|e| Status::internal(format!("catalog: {e}")))
}

/// `GetCatalogs`. Blocks on DuckDB.
pub fn catalogs(lease: &Lease, query: CommandGetCatalogs) -> Result<RecordBatch, Status> {
    let mut builder = query.into_builder();
    for row in listing(lease, CATALOGS, &[], TABLES_MAX)? {
        builder.append(&row[0]);
    }
    built(builder.build())
}

/// `GetDbSchemas`. Blocks on DuckDB.
pub fn db_schemas(lease: &Lease, query: CommandGetDbSchemas) -> Result<RecordBatch, Status> {
    let mut builder = query.into_builder();
    for row in listing(lease, SCHEMAS, &[], TABLES_MAX)? {
        builder.append(&row[0], &row[1]);
    }
    built(builder.build())
}

/// `GetTables`, each table's Arrow schema with `include_schema`, in the types the client reads
/// results in (so a JDBC column's type is the type its values arrive in). Blocks on DuckDB.
pub fn tables(
    lease: &Lease,
    query: CommandGetTables,
    types: ResultTypes,
) -> Result<RecordBatch, Status> {
    let include_schema = query.include_schema;
    let filters = [
        query.catalog.as_deref(),
        query.db_schema_filter_pattern.as_deref(),
        query.table_name_filter_pattern.as_deref(),
    ];
    let rows = listing(lease, TABLES, &filters, TABLES_MAX)?;
    let wanted_types = query.table_types.clone();
    let mut builder = query.into_builder();
    let empty = arrow_schema::Schema::empty();
    for row in rows {
        let [catalog, schema_name, table, table_type] = <[String; 4]>::try_from(row)
            .map_err(|_| Status::internal("catalog: a listing row has four columns"))?;
        if !wanted_types.is_empty() && !wanted_types.contains(&table_type) {
            continue;
        }
        let schema = if include_schema {
            let name = TableName::new(
                table.clone(),
                Some(schema_name.clone()),
                Some(catalog.clone()),
            );
            types.schema(&table_schema(lease.session(), &name).map_err(status)?)
        } else {
            Arc::new(empty.clone())
        };
        builder
            .append(&catalog, &schema_name, &table, &table_type, &schema)
            .map_err(|e| Status::internal(format!("catalog: {e}")))?;
    }
    built(builder.build())
}

/// The schema of `GetPrimaryKeys`' answer, as Flight SQL defines it.
pub fn primary_keys_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::Field;
    Arc::new(arrow_schema::Schema::new(vec![
        Field::new("catalog_name", DataType::Utf8, true),
        Field::new("db_schema_name", DataType::Utf8, true),
        Field::new("table_name", DataType::Utf8, false),
        Field::new("column_name", DataType::Utf8, false),
        Field::new("key_name", DataType::Utf8, true),
        Field::new("key_sequence", DataType::Int32, false),
    ]))
}

/// `GetPrimaryKeys`: the table's primary key columns, one row each. Blocks on DuckDB.
pub fn primary_keys(lease: &Lease, query: CommandGetPrimaryKeys) -> Result<RecordBatch, Status> {
    let filters = [
        query.catalog.as_deref(),
        query.db_schema.as_deref(),
        Some(query.table.as_str()),
    ];
    let rows = listing(lease, PRIMARY_KEYS, &filters, TABLES_MAX)?;
    let text = |column: usize| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|row| row[column].as_str()),
        ))
    };
    let sequence = rows
        .iter()
        .map(|row| row[5].parse::<i32>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Status::internal(format!("primary keys: key sequence: {e}")))?;
    let columns = vec![
        text(0),
        text(1),
        text(2),
        text(3),
        text(4),
        Arc::new(Int32Array::from(sequence)) as ArrayRef,
    ];
    built(RecordBatch::try_new(primary_keys_schema(), columns))
}

/// `GetTableTypes`.
pub fn table_types(query: CommandGetTableTypes) -> Result<RecordBatch, Status> {
    let mut builder = query.into_builder();
    for table_type in TABLE_TYPES {
        builder.append(table_type);
    }
    built(builder.build())
}

/// The `FlightInfo` of a metadata command: its ticket is the command itself.
pub fn metadata_info<C: ProstMessageExt>(
    schema: &arrow_schema::Schema,
    command: &C,
    request: Request<FlightDescriptor>,
) -> Result<Response<FlightInfo>, Status> {
    let ticket = command.as_any().encode_to_vec().into();
    let info = statements::flight_info(schema, ticket, request.into_inner())?;
    Ok(Response::new(info))
}

/// A response of one batch (the metadata answers, built in memory).
pub fn one_batch(batch: arrow_array::RecordBatch) -> <FlightSql as FlightService>::DoGetStream {
    let schema = batch.schema();
    let encoded = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::iter(vec![Ok(batch)]))
        .map(|item| item.map_err(Status::from));
    Box::pin(encoded)
}
