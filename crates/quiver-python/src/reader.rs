//! A query result as a `pyarrow.RecordBatchReader`: the reader pyarrow imports through the Arrow C
//! stream interface pulls one batch per `next` from the session's open query stream, so Python
//! holds one batch at a time and the batches cross without a copy. pyarrow calls `next` with the
//! GIL released.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use pyo3::prelude::*;
use quiver_client::{Connection, Error, QueryStream, Result};

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
                return Err(Error::InvalidInput(
                    "the result was discarded: another statement ran on this connection (or it \
                     closed) before the result was read to the end"
                        .into(),
                ));
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
        use arrow_pyarrow::IntoPyArrow;
        let boxed: Box<dyn RecordBatchReader + Send> = Box::new(self);
        boxed.into_pyarrow(py)
    }
}

impl Iterator for QueryReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(batch) = self.first.take() {
            return Some(Ok(batch));
        }
        match self.pull() {
            Ok(batch) => batch.map(Ok),
            // The error's text crosses the C stream interface as pyarrow's exception message.
            Err(error) => Some(Err(ArrowError::ExternalError(Box::new(error)))),
        }
    }
}

impl RecordBatchReader for QueryReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
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
