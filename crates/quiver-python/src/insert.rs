//! Arrow inserts from Python (`crates/quiver-client/src/insert.rs`): `Connection.insert_arrow`
//! sends a whole Table or reader in one call, `ArrowInserter` takes batches as the caller has
//! them. Either is all or nothing: an error ends the insert and the server rolls it back.
//!
//! Batches come from pyarrow through the Arrow C stream interface without a copy. They are read
//! with the session unlocked (a Python-backed reader takes the GIL to produce one), and each is
//! sent with the session locked, so no thread ever waits for the GIL while holding the session.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::{Schema, SchemaRef};
use pyo3::prelude::*;
use quiver_client::{Error, InsertMode, Result};

use crate::errors::{to_py, IntoPy, InvalidInputError};
use crate::session::{Session, State};

/// `Connection.insert_arrow`: every batch of `data` into `table`, then the commit.
pub(crate) fn insert_arrow(
    py: Python<'_>,
    session: &Arc<Session>,
    table: &str,
    data: &Bound<'_, PyAny>,
    mode: &str,
) -> PyResult<u64> {
    let mode = insert_mode(mode)?;
    let source = stream_of(data)?;
    let schema = source.schema();
    py.detach(|| {
        let id =
            session.open_insert(|connection| connection.arrow_inserter(table, &schema, mode))?;
        match write_all(session, id, source) {
            Ok(()) => session.end_insert(id, |inserter| inserter.finish()),
            Err(error) => {
                let _ = session.end_insert(id, |inserter| inserter.abort());
                Err(error)
            }
        }
    })
    .into_py_result()
}

/// An open insert into one table: `write` batches, then `finish` (commit) or `abort`.
/// Garbage collection before `finish` aborts.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct ArrowInserter {
    session: Arc<Session>,
    id: u64,
    schema: SchemaRef,
    ended: AtomicBool,
}

impl ArrowInserter {
    pub(crate) fn open(
        py: Python<'_>,
        session: Arc<Session>,
        table: &str,
        schema: &Bound<'_, PyAny>,
        mode: &str,
    ) -> PyResult<ArrowInserter> {
        let mode = insert_mode(mode)?;
        let schema = Arc::new(Schema::from_pyarrow_bound(schema)?);
        let id = py
            .detach(|| {
                session.open_insert(|connection| connection.arrow_inserter(table, &schema, mode))
            })
            .into_py_result()?;
        Ok(ArrowInserter {
            session,
            id,
            schema,
            ended: AtomicBool::new(false),
        })
    }

    fn end(&self, py: Python<'_>, commit: bool) -> PyResult<u64> {
        if self.ended.swap(true, Ordering::AcqRel) {
            return Err(InvalidInputError::new_err("the insert has already ended"));
        }
        py.detach(|| {
            self.session.end_insert(self.id, |inserter| {
                if commit {
                    inserter.finish()
                } else {
                    inserter.abort().map(|()| 0)
                }
            })
        })
        .into_py_result()
    }
}

#[pymethods]
impl ArrowInserter {
    /// Appends a RecordBatch, Table or reader (its columns' types must match the insert's
    /// schema); returns once the server has appended it.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.ended.load(Ordering::Acquire) {
            return Err(InvalidInputError::new_err("the insert has already ended"));
        }
        let source = stream_of(data)?;
        let written = py.detach(|| write_all(&self.session, self.id, source));
        if let Err(error) = written {
            // All or nothing: a failed write ends the insert, and the server rolls it back.
            if !self.ended.swap(true, Ordering::AcqRel) {
                let _ = py.detach(|| {
                    self.session
                        .end_insert(self.id, |inserter| inserter.abort())
                });
            }
            return Err(to_py(error));
        }
        Ok(())
    }

    /// Commits; the rows become visible (with the session's open transaction, if any). Returns
    /// the rows this insert appended.
    fn finish(&self, py: Python<'_>) -> PyResult<u64> {
        self.end(py, true)
    }

    /// Gives up: the server rolls back every row of this insert.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.end(py, false).map(drop)
    }

    /// The schema every batch must have.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        use arrow_pyarrow::ToPyArrow;
        self.schema.as_ref().to_pyarrow(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Finishes when the block succeeded, aborts when it raised.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if self.ended.load(Ordering::Acquire) {
            return Ok(());
        }
        self.end(py, exc_type.is_none()).map(drop)
    }
}

impl Drop for ArrowInserter {
    fn drop(&mut self) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            let _ = self
                .session
                .end_insert(self.id, |inserter| inserter.abort());
        }
    }
}

/// `data` as a stream of batches: anything with `__arrow_c_stream__` (Table, RecordBatch,
/// RecordBatchReader).
fn stream_of(data: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    RecordBatchStreamReader::from_pyarrow_bound(data)
}

/// Sends every batch of `source` on the open insert `id`.
fn write_all(session: &Session, id: u64, source: RecordBatchStreamReader) -> Result<()> {
    for batch in source {
        let batch =
            batch.map_err(|error| Error::InvalidInput(format!("reading the data: {error}")))?;
        write(session, id, &batch)?;
    }
    Ok(())
}

fn write(session: &Session, id: u64, batch: &RecordBatch) -> Result<()> {
    let mut state = session.lock();
    match &mut *state {
        State::Insert(lent) if lent.id == id => lent.borrower().write(batch),
        _ => Err(Error::InvalidInput(
            "the insert has ended (the connection closed)".into(),
        )),
    }
}

fn insert_mode(mode: &str) -> PyResult<InsertMode> {
    InsertMode::from_str(mode).map_err(InvalidInputError::new_err)
}
