//! The streams of the engine role (`vgi.rs`) as Python reads them: a scan's streams, each read by
//! a thread of its own into a bounded channel, so the streams of a parallel scan run at once while
//! Python holds one batch at a time (dropping the reader ends them: their streams are cancelled on
//! drop); and a scalar or table-in-out call, fed one input batch per exchange.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::thread;

use arrow_array::RecordBatch;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use quiver_duckdb::calls::StreamHandle;
use quiver_duckdb::Failure;

use crate::vgi::to_py;

/// Batches buffered per scan reader beyond the one Python holds (each stream thread blocks past it).
const BUFFERED_BATCHES: usize = 4;

/// The batches of a scan's streams, each read by a thread of its own (see the module's comment).
#[pyclass(module = "quiver_native")]
pub(crate) struct ScanReader {
    schema: SchemaRef,
    batches: Mutex<Receiver<Result<RecordBatch, Failure>>>,
}

impl ScanReader {
    pub(crate) fn spawn(schema: SchemaRef, handles: Vec<StreamHandle>) -> ScanReader {
        let (sender, receiver) = sync_channel(BUFFERED_BATCHES);
        for handle in handles {
            let sender = sender.clone();
            thread::spawn(move || read_stream(handle, &sender));
        }
        ScanReader {
            schema,
            batches: Mutex::new(receiver),
        }
    }
}

/// Sends every batch of `handle`, then closes it in step; stops at the first failure, or when the
/// reader is gone (dropping the handle cancels its stream).
fn read_stream(mut handle: StreamHandle, sender: &SyncSender<Result<RecordBatch, Failure>>) {
    loop {
        match handle.next_batch() {
            Ok(Some(batch)) => {
                if sender.send(Ok(batch)).is_err() {
                    return;
                }
            }
            Ok(None) => {
                if let Err(failure) = handle.close() {
                    let _ = sender.send(Err(failure));
                }
                return;
            }
            Err(failure) => {
                let _ = sender.send(Err(failure));
                return;
            }
        }
    }
}

#[pymethods]
impl ScanReader {
    /// The columns every batch has.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema.as_ref().to_pyarrow(py)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let next = py.detach(|| {
            let batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
            // Every stream's thread gone (all ended) reads as the end.
            batches.recv().ok()
        });
        match next.transpose().map_err(to_py)? {
            Some(batch) => Ok(Some(batch.to_pyarrow(py)?.unbind())),
            None => Ok(None),
        }
    }
}

/// An open scalar or table-in-out call: input batches in, output batches out, on one stream.
#[pyclass(module = "quiver_native")]
pub(crate) struct VgiCall {
    pub(crate) handle: Mutex<Option<StreamHandle>>,
    pub(crate) output: SchemaRef,
}

impl VgiCall {
    fn with_handle<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Option<StreamHandle>) -> Result<T, Failure> + Send,
    ) -> PyResult<T>
    where
        T: Send,
    {
        py.detach(|| {
            let mut handle = self.handle.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut handle)
        })
        .map_err(to_py)
    }
}

fn finished() -> Failure {
    Failure::invalid("the call was already finished")
}

#[pymethods]
impl VgiCall {
    /// The columns every output batch has.
    #[getter]
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.output.as_ref().to_pyarrow(py)
    }

    /// One exchange: `batch` in (`None`: ask for more output of the previous batch); returns the
    /// output batch and whether the worker has more output for the same input.
    #[pyo3(signature = (batch = None))]
    fn exchange(
        &self,
        py: Python<'_>,
        batch: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Py<PyAny>, bool)> {
        let batch = batch.map(RecordBatch::from_pyarrow_bound).transpose()?;
        let (output, more) = self.with_handle(py, |handle| {
            handle.as_mut().ok_or_else(finished)?.exchange(batch)
        })?;
        Ok((output.to_pyarrow(py)?.unbind(), more))
    }

    /// Ends the input: the batches of the function's FINALIZE phase (none for a scalar or a
    /// function without one); the call is finished after.
    fn finish(&self, py: Python<'_>) -> PyResult<ScanReader> {
        let finalize =
            self.with_handle(py, |handle| handle.take().ok_or_else(finished)?.finalize())?;
        Ok(ScanReader::spawn(
            self.output.clone(),
            finalize.into_iter().collect(),
        ))
    }
}
