//! `quiver_native.Connection`: a session on a quiver server, the Rust client's `Connection`
//! (`crates/quiver-client/src/connection.rs`) with Arrow in and out as pyarrow objects. Every call
//! that waits on the server runs with the GIL released.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use quiver_client::{CancelHandle, ConnectOptions, Connection as ClientConnection, Shm};

use crate::errors::IntoPy;
use crate::insert::{self, ArrowInserter};
use crate::params::to_batch;
use crate::prepared::Prepared;
use crate::reader::QueryReader;
use crate::session::Session;

/// A session on a quiver server. Calls are sequential (the wire is lockstep); a new statement
/// ends a query result that was not read to the end. `cancel` may come from any thread.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct Connection {
    session: Arc<Session>,
    cancel: CancelHandle,
    session_info: quiver_client::SessionInfo,
    address: String,
    uses_shm: bool,
}

impl Connection {
    pub(crate) fn from_client(connection: ClientConnection) -> Connection {
        Connection {
            cancel: connection.cancel_handle(),
            session_info: connection.session().clone(),
            address: connection.address().to_string(),
            uses_shm: connection.uses_shm(),
            session: Arc::new(Session::new(connection)),
        }
    }
}

/// Options of `connect`, from its keywords.
pub(crate) fn connect_options(
    token: Option<String>,
    shm: bool,
    shm_bytes: Option<u64>,
    client_name: Option<String>,
    batch_rows: Option<i64>,
) -> ConnectOptions {
    ConnectOptions {
        token,
        // Only Unix sockets use a segment; on TCP this asks for nothing.
        shm: if shm {
            Shm::Bytes(shm_bytes.unwrap_or(quiver_client::SHM_BYTES_DEFAULT))
        } else {
            Shm::Off
        },
        client_name: Some(client_name.unwrap_or_else(|| "quiver-native".into())),
        batch_rows,
        ..ConnectOptions::default()
    }
}

/// Connects to a quiver server at `address` (`tcp://HOST:PORT` or `unix:///PATH`). Shared memory
/// is on by default (Unix sockets only); `batch_rows` is the most rows per result batch.
#[pyfunction]
#[pyo3(signature = (address, token=None, *, shm=true, shm_bytes=None, client_name=None, batch_rows=None))]
pub(crate) fn connect(
    py: Python<'_>,
    address: String,
    token: Option<String>,
    shm: bool,
    shm_bytes: Option<u64>,
    client_name: Option<String>,
    batch_rows: Option<i64>,
) -> PyResult<Connection> {
    let options = connect_options(token, shm, shm_bytes, client_name, batch_rows);
    let connection = py
        .detach(|| ClientConnection::connect_with(address.as_str(), &options))
        .into_py_result()?;
    Ok(Connection::from_client(connection))
}

#[pymethods]
impl Connection {
    /// Runs SQL and returns the rows changed (0 when the statement reports none). `parameters`:
    /// a sequence of values for one row, or a `pyarrow.RecordBatch` run once per row.
    #[pyo3(signature = (sql, parameters=None))]
    fn execute(
        &self,
        py: Python<'_>,
        sql: &str,
        parameters: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let parameters = to_batch(parameters)?;
        py.detach(|| {
            self.session
                .with_connection(|connection| match &parameters {
                    Some(batch) => connection.execute_with(sql, batch),
                    None => connection.execute(sql),
                })
        })
        .into_py_result()
    }

    /// Runs a query and returns its result as a `pyarrow.RecordBatchReader` that pulls one batch
    /// per read from the server (`.read_all()` for a Table). The result holds the connection
    /// until it is read to the end; the next statement discards what is left.
    #[pyo3(signature = (sql, parameters=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        sql: String,
        parameters: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let parameters = to_batch(parameters)?;
        let session = self.session.clone();
        let reader = py
            .detach(move || {
                QueryReader::open(session, move |connection| match &parameters {
                    Some(batch) => connection.query_with(&sql, batch),
                    None => connection.query(&sql),
                })
            })
            .into_py_result()?;
        reader.into_pyarrow(py)
    }

    /// Prepares a statement (parameters as `?` or `$1`).
    fn prepare(&self, py: Python<'_>, sql: &str) -> PyResult<Prepared> {
        let handle = py
            .detach(|| {
                self.session
                    .with_connection(|connection| connection.prepare_handle(sql))
            })
            .into_py_result()?;
        Ok(Prepared::new(self.session.clone(), handle))
    }

    /// Inserts Arrow data (a Table, RecordBatch or RecordBatchReader, or anything with
    /// `__arrow_c_stream__`) into `table`, all or nothing; returns the rows inserted. `mode`:
    /// `append`, `create`, `create_append` or `replace`.
    #[pyo3(signature = (table, data, mode="append"))]
    fn insert_arrow(
        &self,
        py: Python<'_>,
        table: &str,
        data: &Bound<'_, PyAny>,
        mode: &str,
    ) -> PyResult<u64> {
        insert::insert_arrow(py, &self.session, table, data, mode)
    }

    /// Opens an insert of batches of `schema` into `table`: `write` batches, then `finish`.
    #[pyo3(signature = (table, schema, mode="append"))]
    fn arrow_inserter(
        &self,
        py: Python<'_>,
        table: &str,
        schema: &Bound<'_, PyAny>,
        mode: &str,
    ) -> PyResult<ArrowInserter> {
        ArrowInserter::open(py, self.session.clone(), table, schema, mode)
    }

    /// `BEGIN`: the statements that follow form one transaction.
    fn begin(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.session.with_connection(|c| c.begin()))
            .into_py_result()
    }

    /// `COMMIT`.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.session.with_connection(|c| c.commit()))
            .into_py_result()
    }

    /// `ROLLBACK`.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.session.with_connection(|c| c.rollback()))
            .into_py_result()
    }

    /// Interrupts the statement this connection is running, from any thread (a second,
    /// short-lived connection presents this session's id). Whether one was running.
    fn cancel(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.cancel.cancel()).into_py_result()
    }

    /// Closes the connection; an open result ends and an open insert rolls back.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.session.close());
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self) -> bool {
        matches!(&*self.session.lock(), crate::session::State::Closed)
    }

    /// Whether large batches travel through a shared-memory segment on this connection.
    #[getter]
    fn uses_shm(&self) -> bool {
        self.uses_shm
    }

    /// Where this connection goes.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// What the server answered to `connect`: versions, database, session id.
    #[getter]
    fn session<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = &self.session_info;
        let dict = PyDict::new(py);
        dict.set_item("server_version", &info.server_version)?;
        dict.set_item("duckdb_version", &info.duckdb_version)?;
        dict.set_item("session_id", &info.session_id)?;
        dict.set_item("database", &info.database)?;
        Ok(dict)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!(
            "<quiver_native.Connection {} database={} shm={}>",
            self.address, self.session_info.database, self.uses_shm
        )
    }
}
