//! Prepared statements: parsed and planned once on the session, executed many times with
//! parameters. A `Prepared` borrows its connection; closing it (or dropping it) forgets the
//! statement on the server.

use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch, StructArray};
use arrow_schema::SchemaRef;
use quiver_server_protocol::{methods, parameters};

use crate::connection::{check_sql, rows_changed, Connection};
use crate::error::{Error, Result};
use crate::query::QueryStream;
use crate::request::{request, Value};

/// A statement prepared on a connection's session.
pub struct Prepared<'c> {
    connection: &'c mut Connection,
    statement_id: i64,
    parameter_count: usize,
    result_schema: Option<SchemaRef>,
    closed: bool,
}

impl Connection {
    /// Prepares one statement (parameters as `?` or `$1`).
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared<'_>> {
        let (statement_id, parameter_count, result_schema) = self.prepare_on_server(sql)?;
        Ok(Prepared {
            connection: self,
            statement_id,
            parameter_count,
            result_schema,
            closed: false,
        })
    }

    /// Prepares `sql` on the session: its statement id, parameter count and result schema.
    pub(crate) fn prepare_on_server(
        &mut self,
        sql: &str,
    ) -> Result<(i64, usize, Option<SchemaRef>)> {
        check_sql(sql)?;
        let params = request(methods::prepare_params(), &[Value::Text(Some(sql))]);
        let reply = self.unary(methods::PREPARE, &params)?;
        read_prepared(&reply)
    }

    /// Runs prepared statement `statement_id` with `parameters` (checked against its count).
    pub(crate) fn query_statement(
        &mut self,
        statement_id: i64,
        parameter_count: usize,
        parameters: Option<&RecordBatch>,
    ) -> Result<QueryStream<'_>> {
        let encoded = encode(parameter_count, parameters)?;
        let params = request(
            methods::query_prepared_params(),
            &[
                Value::Int(Some(statement_id)),
                Value::Bytes(encoded.as_deref()),
                Value::Int(self.options().batch_rows),
            ],
        );
        QueryStream::open(self.wire(), methods::QUERY_PREPARED, &params)
    }

    /// Forgets prepared statement `statement_id` on the server.
    pub(crate) fn close_statement(&mut self, statement_id: i64) -> Result<()> {
        let params = request(
            methods::close_prepared_params(),
            &[Value::Int(Some(statement_id))],
        );
        self.unary_void(methods::CLOSE_PREPARED, &params)
    }
}

impl Prepared<'_> {
    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.parameter_count
    }

    /// The schema of its result, when it returns rows.
    pub fn result_schema(&self) -> Option<&SchemaRef> {
        self.result_schema.as_ref()
    }

    /// Executes once per row of `parameters` (`None` when it takes none); rows changed in all.
    pub fn execute(&mut self, parameters: Option<&RecordBatch>) -> Result<u64> {
        let encoded = encode(self.parameter_count, parameters)?;
        let params = request(
            methods::execute_prepared_params(),
            &[
                Value::Int(Some(self.statement_id)),
                Value::Bytes(encoded.as_deref()),
            ],
        );
        let reply = self.connection.unary(methods::EXECUTE_PREPARED, &params)?;
        rows_changed(&reply)
    }

    /// Runs it with one row of parameters and streams the result.
    pub fn query(&mut self, parameters: Option<&RecordBatch>) -> Result<QueryStream<'_>> {
        self.connection
            .query_statement(self.statement_id, self.parameter_count, parameters)
    }

    /// Forgets the statement on the server.
    pub fn close(mut self) -> Result<()> {
        self.close_on_server()
    }

    fn close_on_server(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.connection.close_statement(self.statement_id)
    }
}

/// One row of parameters encoded for a statement that takes `parameter_count`.
fn encode(parameter_count: usize, parameters: Option<&RecordBatch>) -> Result<Option<Vec<u8>>> {
    let Some(batch) = parameters else {
        if parameter_count > 0 {
            return Err(Error::InvalidInput(format!(
                "the statement takes {parameter_count} parameters, none given"
            )));
        }
        return Ok(None);
    };
    if batch.num_columns() != parameter_count {
        return Err(Error::InvalidInput(format!(
            "the statement takes {parameter_count} parameters, {} given",
            batch.num_columns()
        )));
    }
    Ok(Some(parameters::encode_parameters(std::slice::from_ref(
        batch,
    ))?))
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        // Best effort: a lost connection forgets its statements with its session anyway.
        let _ = self.close_on_server();
    }
}

fn read_prepared(reply: &RecordBatch) -> Result<(i64, usize, Option<SchemaRef>)> {
    let malformed = |what: &str| Error::Protocol(format!("prepare reply: {what}"));
    let fields = reply
        .column(0)
        .as_any()
        .downcast_ref::<StructArray>()
        .filter(|array| array.len() == 1)
        .ok_or_else(|| malformed("not one struct"))?;
    let int = |name: &str| -> Result<i64> {
        let column = fields
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .filter(|c| !c.is_null(0))
            .ok_or_else(|| malformed(name))?;
        Ok(column.value(0))
    };
    let statement_id = int(methods::prepared::STATEMENT_ID)?;
    let parameter_count = usize::try_from(int(methods::prepared::PARAMETER_COUNT)?)
        .map_err(|_| malformed("negative parameter count"))?;
    let schema = fields
        .column_by_name(methods::prepared::RESULT_SCHEMA)
        .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
        .ok_or_else(|| malformed("result_schema"))?;
    let result_schema = if schema.is_null(0) {
        None
    } else {
        Some(
            parameters::decode_schema(schema.value(0), "result schema")
                .map_err(|report| malformed(&report.message))?,
        )
    };
    Ok((statement_id, parameter_count, result_schema))
}
