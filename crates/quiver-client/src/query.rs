//! A streaming query result: an iterator that pulls one batch per `next` from the server, so the
//! client holds one batch at a time and the server, a producer on the spine, computes no further
//! than the client has asked. Dropping it early cancels the statement on the server and leaves
//! the connection ready for its next call.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::StreamCall;

use crate::connection::{note, Wire};
use crate::error::{Error, Result};

/// The batches of one query, in order.
pub struct QueryStream<'c> {
    /// `None` once the stream has ended (its end, an error, or a cancel).
    call: Option<StreamCall<'c>>,
    broken: &'c mut bool,
    rows: u64,
    /// The output schema, kept when the stream ends.
    schema: Option<SchemaRef>,
}

impl<'c> QueryStream<'c> {
    /// Sends the request of a producer method (`query`, `query_prepared`).
    pub(crate) fn open(
        wire: Wire<'c>,
        method: &str,
        params: &RecordBatch,
    ) -> Result<QueryStream<'c>> {
        let Wire { client, broken } = wire;
        let call = note(
            broken,
            client.stream(method, params, false).map_err(Error::from),
        )?;
        Ok(QueryStream {
            call: Some(call),
            broken,
            rows: 0,
            schema: None,
        })
    }

    /// The result's schema, once the first batch (or the end of an empty result) has been read.
    pub fn schema(&self) -> Option<SchemaRef> {
        let open = self.call.as_ref().and_then(|call| call.output_schema());
        open.or(self.schema.as_ref()).cloned()
    }

    /// Rows received so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Stops the query now: the server interrupts the statement and the connection stays usable.
    pub fn cancel(mut self) -> Result<()> {
        match self.call.take() {
            Some(call) => note(self.broken, call.cancel().map_err(Error::from)),
            None => Ok(()),
        }
    }
}

impl Iterator for QueryStream<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let call = self.call.as_mut()?;
        match call.tick() {
            Ok(Some(batch)) => {
                self.rows += batch.num_rows() as u64;
                Some(Ok(batch))
            }
            Ok(None) => {
                self.schema = call.output_schema().cloned();
                self.call = None;
                None
            }
            Err(error) => {
                // The stream call has ended (the server's error closes it in step, a broken
                // connection cannot be closed): nothing more to read.
                if let Some(call) = self.call.take() {
                    let _ = call.release();
                }
                Some(note(self.broken, Err(Error::from(error))))
            }
        }
    }
}

impl Drop for QueryStream<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            // An early drop: cancel, so the server stops producing and the connection is in step.
            let cancelled = call.cancel().map_err(Error::from);
            let _ = note(self.broken, cancelled);
        }
    }
}
