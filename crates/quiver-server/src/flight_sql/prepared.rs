//! Prepared statements: `CreatePreparedStatement` prepares the SQL on the call's session (the
//! transaction's, or one of its own) to learn its result and parameter schemas, and keeps a small
//! record under a random handle: the SQL, the transaction, the parameters bound by `DoPut`. A
//! handle holds no DuckDB connection: each execution prepares the SQL again on the session it runs
//! on, so there is nothing to leak but the record, and the records are bounded in number
//! ([`PREPARED_STATEMENTS_MAX`]), in bound bytes (the server's message limit) and in idle time
//! ([`PREPARED_IDLE_MAX`]).
//!
//! A query runs once with one row of parameters; more rows are refused (DuckDB's error names the
//! count), since a result per row has no place in one Flight stream. An update runs once per row
//! and counts the rows of all of them. Parameters sent as unions are resolved to their values
//! (`union_parameters.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::error::FlightError;
use arrow_flight::sql::server::PeekableFlightDataStream;
use arrow_flight::{IpcMessage, SchemaAsIpc};
use arrow_ipc::writer::IpcWriteOptions;
use arrow_schema::{Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use prost::bytes::Bytes;
use tonic::Status;

use super::lease::Lease;
use super::result_types::ResultTypes;
use super::status::status;
use super::union_parameters;
use crate::duck::batch_stream;
use quiver_secret::random;

/// Most prepared statements kept at once, over all clients.
pub const PREPARED_STATEMENTS_MAX: usize = 4096;
/// How long a prepared statement may go unused before it is forgotten.
pub const PREPARED_IDLE_MAX: Duration = Duration::from_secs(15 * 60);
/// Most parameter bytes bound to all kept statements together (each binding is bounded by the
/// server's message limit too).
pub const PARAMETER_BYTES_BOUND_MAX: u64 = 1 << 30;
/// Bytes of a handle (as hex digits on the wire).
const HANDLE_BYTES: usize = 16;

/// One prepared statement's record.
#[derive(Clone)]
pub struct Statement {
    /// Its SQL.
    pub sql: String,
    /// The transaction it was prepared in, if any; it runs there.
    pub transaction_id: Option<Vec<u8>>,
    /// Its result schema when it returns a result set; `None` for DDL and DML, which run at
    /// `GetFlightInfo` (as `statements.rs` explains).
    pub result_schema: Option<SchemaRef>,
    /// The parameters bound last, if any.
    pub parameters: Option<Parameters>,
}

/// Parameter rows bound to a statement.
#[derive(Clone)]
pub struct Parameters {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    bytes: u64,
}

impl Parameters {
    /// The rows as DuckDB's parameter stream.
    pub fn stream(&self) -> arrow_array::ffi_stream::FFI_ArrowArrayStream {
        batch_stream(Arc::clone(&self.schema), self.batches.clone())
    }

    fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

struct Kept {
    statement: Statement,
    last_used: Instant,
}

/// The prepared statements of one server, by handle.
#[derive(Default)]
pub struct PreparedStatements {
    kept: Mutex<HashMap<Vec<u8>, Kept>>,
}

/// What `CreatePreparedStatement` answers.
pub struct Created {
    /// The handle.
    pub handle: Bytes,
    /// The result schema, IPC-encapsulated (empty for a statement without a result set).
    pub dataset_schema: Bytes,
    /// The parameter schema, IPC-encapsulated.
    pub parameter_schema: Bytes,
}

/// The one answer for a handle that names nothing kept.
pub fn unknown() -> Status {
    Status::not_found("unknown prepared statement")
}

fn ipc_schema(schema: &Schema) -> Result<Bytes, Status> {
    let message: Result<IpcMessage, _> =
        SchemaAsIpc::new(schema, &IpcWriteOptions::default()).try_into();
    let IpcMessage(bytes) = message.map_err(|e| Status::internal(format!("schema: {e}")))?;
    Ok(bytes)
}

impl PreparedStatements {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Kept>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Prepares `sql` on `lease` and keeps it. Blocks on DuckDB.
    pub fn create(
        &self,
        lease: &Lease,
        sql: String,
        transaction_id: Option<Vec<u8>>,
        types: ResultTypes,
    ) -> Result<Created, Status> {
        let (mut prepared, _, result) =
            lease.with(|open| open.duck.prepare(&sql)).map_err(status)?;
        let parameters = lease
            .with(|_| prepared.parameter_schema())
            .map_err(status)?;
        drop(prepared);
        let dataset_schema = match &result {
            Some(schema) => ipc_schema(&types.schema(schema))?,
            None => Bytes::new(),
        };
        let created = Created {
            handle: Bytes::new(),
            dataset_schema,
            parameter_schema: ipc_schema(&parameters)?,
        };
        let statement = Statement {
            sql,
            transaction_id,
            result_schema: result,
            parameters: None,
        };
        let mut kept = self.lock();
        expire(&mut kept, Instant::now());
        if kept.len() >= PREPARED_STATEMENTS_MAX {
            return Err(Status::resource_exhausted(format!(
                "prepared statements: at most {PREPARED_STATEMENTS_MAX} are kept at once; close some"
            )));
        }
        let handle = random::hex(HANDLE_BYTES).into_bytes();
        kept.insert(
            handle.clone(),
            Kept {
                statement,
                last_used: Instant::now(),
            },
        );
        Ok(Created {
            handle: handle.into(),
            ..created
        })
    }

    /// The record of `handle` (a copy: executions run without holding the store).
    pub fn get(&self, handle: &[u8]) -> Result<Statement, Status> {
        let mut kept = self.lock();
        let entry = kept.get_mut(handle).ok_or_else(unknown)?;
        entry.last_used = Instant::now();
        Ok(entry.statement.clone())
    }

    /// Binds `parameters` to `handle`, replacing what was bound before, within
    /// [`PARAMETER_BYTES_BOUND_MAX`] over all statements.
    pub fn bind(&self, handle: &[u8], parameters: Parameters) -> Result<(), Status> {
        let mut kept = self.lock();
        let others: u64 = kept
            .iter()
            .filter(|(other, _)| other.as_slice() != handle)
            .filter_map(|(_, entry)| entry.statement.parameters.as_ref())
            .map(|bound| bound.bytes)
            .sum();
        if others + parameters.bytes > PARAMETER_BYTES_BOUND_MAX {
            return Err(Status::resource_exhausted(format!(
                "prepared statements: more than {PARAMETER_BYTES_BOUND_MAX} bytes of parameters \
                 bound at once; close some statements"
            )));
        }
        let entry = kept.get_mut(handle).ok_or_else(unknown)?;
        entry.last_used = Instant::now();
        entry.statement.parameters = Some(parameters);
        Ok(())
    }

    /// Forgets the statements unused for longer than [`PREPARED_IDLE_MAX`].
    pub fn expire_idle(&self, now: Instant) {
        expire(&mut self.lock(), now);
    }

    /// Forgets `handle`.
    pub fn close(&self, handle: &[u8]) -> Result<(), Status> {
        self.lock().remove(handle).map(|_| ()).ok_or_else(unknown)
    }
}

fn expire(kept: &mut HashMap<Vec<u8>, Kept>, now: Instant) {
    kept.retain(|_, entry| now.duration_since(entry.last_used) <= PREPARED_IDLE_MAX);
}

/// The parameter rows a `DoPut` carries, at most `bytes_max` bytes of them; `None` for a stream
/// without a batch.
pub async fn read_parameters(
    stream: PeekableFlightDataStream,
    bytes_max: u64,
) -> Result<Option<Parameters>, Status> {
    let mut batches_in =
        FlightRecordBatchStream::new_from_flight_data(stream.map_err(FlightError::from));
    let mut batches = Vec::new();
    let mut bytes = 0u64;
    while let Some(batch) = batches_in.next().await {
        let batch = batch.map_err(|e| Status::invalid_argument(format!("parameters: {e}")))?;
        bytes += batch.get_array_memory_size() as u64;
        let batch = union_parameters::resolve(batch)?;
        if let Some(first) = batches.first() {
            if RecordBatch::schema(first) != batch.schema() {
                return Err(Status::invalid_argument(
                    "parameters: the batches' values have different types; send one type per parameter",
                ));
            }
        }
        if bytes > bytes_max {
            return Err(Status::resource_exhausted(format!(
                "parameters of more than {bytes_max} bytes"
            )));
        }
        batches.push(batch);
    }
    let schema = match (batches.first(), batches_in.schema()) {
        (Some(batch), _) => batch.schema(),
        (None, Some(schema)) => Arc::clone(schema),
        (None, None) => return Ok(None),
    };
    // The JDBC driver binds a statement without parameters as a stream of one empty-schema batch
    // (tests/test_flight_sql_jdbc.py): that is no parameters, not zero rows of them.
    if schema.fields().is_empty() {
        return Ok(None);
    }
    Ok(Some(Parameters {
        schema,
        batches,
        bytes,
    }))
}

/// Refuses more than one row of parameters for a query.
pub fn check_query_rows(parameters: Option<&Parameters>) -> Result<(), Status> {
    match parameters.map(Parameters::rows) {
        Some(rows) if rows > 1 => Err(Status::invalid_argument(format!(
            "a prepared query runs with one row of parameters, got {rows}; run it once per row"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(store: &PreparedStatements, handle: &[u8]) {
        let statement = Statement {
            sql: "SELECT ?".into(),
            transaction_id: None,
            result_schema: None,
            parameters: None,
        };
        let kept = Kept {
            statement,
            last_used: Instant::now(),
        };
        store.lock().insert(handle.to_vec(), kept);
    }

    fn claiming(bytes: u64) -> Parameters {
        Parameters {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
            bytes,
        }
    }

    #[test]
    fn bound_parameters_are_bounded_over_all_statements() {
        let store = PreparedStatements::default();
        keep(&store, b"a");
        keep(&store, b"b");
        let half = PARAMETER_BYTES_BOUND_MAX / 2 + 1;
        store.bind(b"a", claiming(half)).unwrap();
        // Rebinding the same statement replaces its parameters.
        store.bind(b"a", claiming(half)).unwrap();
        let refused = store.bind(b"b", claiming(half)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        store.close(b"a").unwrap();
        store.bind(b"b", claiming(half)).unwrap();
        assert_eq!(
            store.bind(b"gone", claiming(1)).unwrap_err().code(),
            tonic::Code::NotFound
        );
    }

    #[test]
    fn idle_statements_expire() {
        let store = PreparedStatements::default();
        keep(&store, b"a");
        store.expire_idle(Instant::now());
        assert!(store.get(b"a").is_ok());
        store.expire_idle(Instant::now() + PREPARED_IDLE_MAX + Duration::from_secs(1));
        let gone = store.get(b"a").err().expect("expired");
        assert_eq!(gone.code(), tonic::Code::NotFound);
    }

    #[test]
    fn a_query_takes_one_row_of_parameters() {
        let schema = Arc::new(Schema::new(vec![arrow_schema::Field::new(
            "1",
            arrow_schema::DataType::Int32,
            true,
        )]));
        let rows = |n: i32| {
            let column = Arc::new(arrow_array::Int32Array::from_iter_values(0..n));
            Parameters {
                schema: Arc::clone(&schema),
                batches: vec![RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap()],
                bytes: 0,
            }
        };
        assert!(check_query_rows(None).is_ok());
        assert!(check_query_rows(Some(&rows(1))).is_ok());
        let refused = check_query_rows(Some(&rows(2))).unwrap_err();
        assert!(refused.message().contains("got 2"));
    }
}
