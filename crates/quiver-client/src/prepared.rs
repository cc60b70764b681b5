//! Prepared statements: parsed and planned once on the session, executed many times with
//! parameters. A `Prepared` borrows its connection; closing it (or dropping it) forgets the
//! statement on the server. A [`PreparedHandle`] is the same statement without the borrow, for
//! callers that keep statements apart from their connection (the Python module,
//! `crates/quiver-python`): they pass it back to the connection's `*_prepared` methods.

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
    handle: PreparedHandle,
    closed: bool,
}

/// A prepared statement's identity on its session, apart from the connection: the connection's
/// `execute_prepared`, `query_prepared` and `close_prepared` take it. Nothing closes it on drop.
#[derive(Clone, Debug)]
pub struct PreparedHandle {
    statement_id: i64,
    parameter_count: usize,
    result_schema: Option<SchemaRef>,
}

impl Connection {
    /// Prepares one statement (parameters as `?` or `$1`).
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared<'_>> {
        let handle = self.prepare_handle(sql)?;
        Ok(Prepared {
            connection: self,
            handle,
            closed: false,
        })
    }

    /// Prepares one statement and returns its handle; [`Connection::close_prepared`] forgets it.
    pub fn prepare_handle(&mut self, sql: &str) -> Result<PreparedHandle> {
        check_sql(sql)?;
        let params = request(methods::prepare_params(), &[Value::Text(Some(sql))]);
        let reply = self.unary(methods::PREPARE, &params)?;
        read_prepared(&reply)
    }

    /// Executes a prepared statement once per row of `parameters`; rows changed in all.
    pub fn execute_prepared(
        &mut self,
        handle: &PreparedHandle,
        parameters: Option<&RecordBatch>,
    ) -> Result<u64> {
        let encoded = handle.encode(parameters)?;
        let params = request(
            methods::execute_prepared_params(),
            &[
                Value::Int(Some(handle.statement_id)),
                Value::Bytes(encoded.as_deref()),
            ],
        );
        let reply = self.unary(methods::EXECUTE_PREPARED, &params)?;
        rows_changed(&reply)
    }

    /// Runs a prepared statement with one row of parameters and streams the result.
    pub fn query_prepared(
        &mut self,
        handle: &PreparedHandle,
        parameters: Option<&RecordBatch>,
    ) -> Result<QueryStream<'_>> {
        let encoded = handle.encode(parameters)?;
        let batch_rows = self.options().batch_rows;
        let params = request(
            methods::query_prepared_params(),
            &[
                Value::Int(Some(handle.statement_id)),
                Value::Bytes(encoded.as_deref()),
                Value::Int(batch_rows),
            ],
        );
        QueryStream::open(self.wire(), methods::QUERY_PREPARED, &params)
    }

    /// Forgets a prepared statement on the server.
    pub fn close_prepared(&mut self, handle: &PreparedHandle) -> Result<()> {
        let params = request(
            methods::close_prepared_params(),
            &[Value::Int(Some(handle.statement_id))],
        );
        self.unary_void(methods::CLOSE_PREPARED, &params)
    }
}

impl Prepared<'_> {
    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.handle.parameter_count
    }

    /// The schema of its result, when it returns rows.
    pub fn result_schema(&self) -> Option<&SchemaRef> {
        self.handle.result_schema()
    }

    /// Executes once per row of `parameters` (`None` when it takes none); rows changed in all.
    pub fn execute(&mut self, parameters: Option<&RecordBatch>) -> Result<u64> {
        self.connection.execute_prepared(&self.handle, parameters)
    }

    /// Runs it with one row of parameters and streams the result.
    pub fn query(&mut self, parameters: Option<&RecordBatch>) -> Result<QueryStream<'_>> {
        self.connection.query_prepared(&self.handle, parameters)
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
        self.connection.close_prepared(&self.handle)
    }
}

impl PreparedHandle {
    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.parameter_count
    }

    /// The schema of its result, when it returns rows.
    pub fn result_schema(&self) -> Option<&SchemaRef> {
        self.result_schema.as_ref()
    }

    fn encode(&self, parameters: Option<&RecordBatch>) -> Result<Option<Vec<u8>>> {
        let Some(batch) = parameters else {
            if self.parameter_count > 0 {
                return Err(Error::InvalidInput(format!(
                    "the statement takes {} parameters, none given",
                    self.parameter_count
                )));
            }
            return Ok(None);
        };
        if batch.num_columns() != self.parameter_count {
            return Err(Error::InvalidInput(format!(
                "the statement takes {} parameters, {} given",
                self.parameter_count,
                batch.num_columns()
            )));
        }
        Ok(Some(parameters::encode_parameters(std::slice::from_ref(
            batch,
        ))?))
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        // Best effort: a lost connection forgets its statements with its session anyway.
        let _ = self.close_on_server();
    }
}

fn read_prepared(reply: &RecordBatch) -> Result<PreparedHandle> {
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
    Ok(PreparedHandle {
        statement_id,
        parameter_count,
        result_schema,
    })
}
