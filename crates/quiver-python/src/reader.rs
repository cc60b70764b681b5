//! A query result as a `pyarrow.RecordBatchReader`: `RecordBatchReader.from_batches` over
//! [`Batches`], which pulls one batch per `next` from the session's open query stream (the GIL
//! released while it waits), so Python holds a batch at a time. Each batch crosses through the
//! Arrow C data interface without a copy: its columns as one struct array, imported against the
//! result's `pyarrow.Schema`, which crosses once per query rather than once per batch. An error mid-stream reaches the caller as
//! quiver's own exception (`SqlError`, `ConnectionLostError`, ...): pyarrow re-raises what a
//! Python iterator raised, where the C stream interface would have turned it into `ArrowInvalid`.

use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::ffi::FFI_ArrowArray;
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_pyarrow::ToPyArrow;
use arrow_schema::{Schema, SchemaRef};
use pyo3::prelude::*;
use quiver_client::{Connection, Error, QueryStream, Result};

use crate::errors::IntoPy;
use crate::session::{Session, State};

/// The batches of one query, read from the session that holds its stream.
pub(crate) struct QueryReader {
    session: Arc<Session>,
    id: u64,
    schema: SchemaRef,
    /// The batch read when the query opened (it carried the schema).
    first: Option<RecordBatch>,
    ended: bool,
}

impl QueryReader {
    /// Opens a query with `start` and reads its first batch, so a SQL error surfaces here and
    /// the reader knows its schema. Runs without the GIL.
    pub(crate) fn open(
        session: Arc<Session>,
        start: impl FnOnce(&'static mut Connection) -> Result<QueryStream<'static>>,
    ) -> Result<QueryReader> {
        let id = session.open_query(start)?;
        let mut reader = QueryReader {
            session,
            id,
            schema: Arc::new(Schema::empty()),
            first: None,
            ended: false,
        };
        match reader.pull()? {
            Some(batch) => {
                reader.schema = batch.schema();
                reader.first = Some(batch);
            }
            None => reader.ended = true,
        }
        Ok(reader)
    }

    /// The next batch from the session's stream; `None` at its end, which gives the connection
    /// back.
    fn pull(&mut self) -> Result<Option<RecordBatch>> {
        if self.ended {
            return Ok(None);
        }
        let mut state = self.session.lock();
        let stream = match &mut *state {
            State::Query(lent) if lent.id == self.id => lent.borrower(),
            _ => {
                self.ended = true;
                return Err(discarded());
            }
        };
        let next = stream.next();
        if next.is_none() {
            // An empty result's columns arrive with its end.
            if let Some(schema) = stream.schema() {
                self.schema = schema;
            }
        }
        drop(state);
        match next {
            Some(Ok(batch)) => Ok(Some(batch)),
            Some(Err(error)) => {
                self.finish();
                Err(error)
            }
            None => {
                self.finish();
                Ok(None)
            }
        }
    }

    fn finish(&mut self) {
        self.ended = true;
        self.session.end_query(self.id);
    }

    /// The reader as a `pyarrow.RecordBatchReader`.
    pub(crate) fn into_pyarrow(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        let schema = self.schema.to_pyarrow(py)?;
        let batches = Batches {
            reader: Mutex::new(self),
            schema: schema.clone().unbind(),
            import: py
                .import("pyarrow")?
                .getattr("RecordBatch")?
                .getattr("_import_from_c")?
                .unbind(),
        };
        py.import("pyarrow")?
            .getattr("RecordBatchReader")?
            .call_method1("from_batches", (schema, batches))
    }

    /// The next batch: the one read at open first, then the stream's.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self.first.take() {
            Some(batch) => Ok(Some(batch)),
            None => self.pull(),
        }
    }
}

/// What reading a result the session has moved on from answers.
fn discarded() -> Error {
    Error::InvalidInput(
        "the result was discarded: another statement ran on this connection (or it closed) \
         before the result was read to the end"
            .into(),
    )
}

/// The iterator `pyarrow.RecordBatchReader.from_batches` reads: one `pyarrow.RecordBatch` per
/// `next`, quiver's exception on an error.
#[pyclass(module = "quiver_native")]
pub(crate) struct Batches {
    reader: Mutex<QueryReader>,
    /// The result's `pyarrow.Schema`, every batch's.
    schema: Py<PyAny>,
    /// `pyarrow.RecordBatch._import_from_c`.
    import: Py<PyAny>,
}

#[pymethods]
impl Batches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let next = py.detach(|| {
            let mut reader = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
            reader.next_batch()
        });
        match next.into_py_result()? {
            Some(batch) => Ok(Some(self.to_pyarrow(py, batch)?)),
            None => Ok(None),
        }
    }
}

impl Batches {
    /// `batch` as a `pyarrow.RecordBatch` over the same buffers: its columns exported as one
    /// struct array through the C data interface and imported with the result's schema (which
    /// keeps the schema's metadata and nullability; the struct's own field list is not used).
    fn to_pyarrow(&self, py: Python<'_>, batch: RecordBatch) -> PyResult<Py<PyAny>> {
        let data = StructArray::from(batch).into_data();
        let mut array = FFI_ArrowArray::new(&data);
        // pyarrow moves the struct out (leaving it released) when the import succeeds; when it
        // fails, `array` still owns the batch's buffers and releases them on drop.
        let address = &mut array as *mut FFI_ArrowArray as usize;
        let imported = self
            .import
            .bind(py)
            .call1((address, self.schema.bind(py)))?;
        Ok(imported.unbind())
    }
}

impl Drop for QueryReader {
    fn drop(&mut self) {
        // Dropped before its end (pyarrow released the stream): cancel the rest on the server.
        if !self.ended {
            self.session.end_query(self.id);
        }
    }
}
