//! `quiver_native.Prepared`: a statement prepared on a connection's session
//! (`crates/quiver-client/src/prepared.rs`), held apart from the connection by its handle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_pyarrow::ToPyArrow;
use pyo3::prelude::*;
use quiver_client::PreparedHandle;

use crate::errors::IntoPy;
use crate::params::to_batch;
use crate::reader::QueryReader;
use crate::session::{Session, State};

/// A prepared statement; `close` (or garbage collection) forgets it on the server.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct Prepared {
    session: Arc<Session>,
    handle: PreparedHandle,
    closed: AtomicBool,
}

impl Prepared {
    pub(crate) fn new(session: Arc<Session>, handle: PreparedHandle) -> Prepared {
        Prepared {
            session,
            handle,
            closed: AtomicBool::new(false),
        }
    }

    fn check_open(&self) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(crate::errors::InvalidInputError::new_err(
                "the prepared statement is closed",
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl Prepared {
    /// How many parameters the statement takes.
    #[getter]
    fn parameter_count(&self) -> usize {
        self.handle.parameter_count()
    }

    /// The `pyarrow.Schema` of its result, or `None` when it returns no rows.
    #[getter]
    fn result_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.handle
            .result_schema()
            .map(|schema| schema.as_ref().to_pyarrow(py))
            .transpose()
    }

    /// Executes once per row of `parameters`; the rows changed in all.
    #[pyo3(signature = (parameters=None))]
    fn execute(&self, py: Python<'_>, parameters: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        self.check_open()?;
        let batch = to_batch(parameters)?;
        py.detach(|| {
            self.session.with_connection(|connection| {
                connection.execute_prepared(&self.handle, batch.as_ref())
            })
        })
        .into_py_result()
    }

    /// Runs it with one row of parameters; the result as a `pyarrow.RecordBatchReader`.
    #[pyo3(signature = (parameters=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        parameters: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check_open()?;
        let batch = to_batch(parameters)?;
        let session = self.session.clone();
        let handle = self.handle.clone();
        let reader = py
            .detach(move || {
                QueryReader::open(session, move |connection| {
                    connection.query_prepared(&handle, batch.as_ref())
                })
            })
            .into_py_result()?;
        reader.into_pyarrow(py)
    }

    /// Forgets the statement on the server; closing twice is fine.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        py.detach(|| {
            self.session
                .with_connection(|connection| connection.close_prepared(&self.handle))
        })
        .into_py_result()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.close(py)
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // Best effort, and only when the connection is idle: a garbage-collected statement must
        // not end a result being read. A closed session forgot its statements already.
        let mut state = self.session.lock();
        if let State::Ready(connection) = &mut *state {
            let _ = connection.close_prepared(&self.handle);
        }
    }
}
