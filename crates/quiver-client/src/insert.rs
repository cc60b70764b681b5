//! The Arrow inserter: a stream of batches appended to one table, all or nothing. Each batch is
//! acknowledged with the rows appended so far (the exchange's lockstep, which is also its
//! backpressure); [`ArrowInserter::finish`] sends the commit marker
//! (`quiver-server-protocol/src/insert.rs`). Dropping an inserter without finishing cancels the
//! call, and the server rolls back every row it appended.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use quiver_rpc::StreamCall;
use quiver_server_protocol::{insert, limits, methods, parameters, InsertMode};
use quiver_wire::BatchMetadata;

use crate::catalog::check_identifier;
use crate::connection::{note, Connection, Wire};
use crate::error::{Error, Result};
use crate::request::{request, Value};

/// An open insert into one table.
pub struct ArrowInserter<'c> {
    /// `None` once finished or failed.
    call: Option<StreamCall<'c>>,
    broken: &'c mut bool,
    schema: SchemaRef,
    rows_sent: u64,
}

impl Connection {
    /// Opens an insert of batches of `schema` into `table` (unquoted; the server quotes it).
    pub fn arrow_inserter(
        &mut self,
        table: &str,
        schema: &Schema,
        mode: InsertMode,
    ) -> Result<ArrowInserter<'_>> {
        check_identifier(table)?;
        if schema.fields().is_empty() || schema.fields().len() > limits::SCHEMA_FIELDS_MAX {
            return Err(Error::InvalidInput(format!(
                "an insert schema has 1..={} columns, not {}",
                limits::SCHEMA_FIELDS_MAX,
                schema.fields().len()
            )));
        }
        let encoded = parameters::encode_schema(schema);
        let params = request(
            methods::insert_params(),
            &[
                Value::Text(Some(table)),
                Value::Text(None),
                Value::Text(None),
                Value::Bytes(Some(&encoded)),
                Value::Text(Some(mode.as_str())),
            ],
        );
        let Wire { client, broken } = self.wire();
        let call = note(
            broken,
            client
                .stream(methods::INSERT, &params, false)
                .map_err(Error::from),
        )?;
        Ok(ArrowInserter {
            call: Some(call),
            broken,
            schema: Arc::new(schema.clone()),
            rows_sent: 0,
        })
    }

    /// Inserts `batches` in one call (all or nothing) and returns the rows inserted.
    pub fn insert_batches(
        &mut self,
        table: &str,
        mode: InsertMode,
        batches: &[RecordBatch],
    ) -> Result<u64> {
        let first = batches
            .first()
            .ok_or_else(|| Error::InvalidInput("no batch to insert".into()))?;
        let mut inserter = self.arrow_inserter(table, &first.schema(), mode)?;
        for batch in batches {
            inserter.write(batch)?;
        }
        inserter.finish()
    }
}

impl ArrowInserter<'_> {
    /// The schema every batch must have (column types; names may differ).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows written so far (acknowledged by the server, not yet committed).
    pub fn rows(&self) -> u64 {
        self.rows_sent
    }

    /// Appends one batch; returns once the server has appended it. A batch larger than
    /// [`limits::INSERT_BATCH_BYTES_MAX`] goes as slices of about that size (no copy).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let batch = self.conform(batch)?;
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(());
        }
        let bytes = batch.get_array_memory_size().max(1);
        if bytes <= limits::INSERT_BATCH_BYTES_MAX {
            // Whole and unshared: a batch built in the segment (`OutputSpace`) crosses in place.
            self.rows_sent += rows as u64;
            return self.send(&batch, BatchMetadata::new());
        }
        let rows_per_slice = (rows * limits::INSERT_BATCH_BYTES_MAX / bytes).max(1);
        for start in (0..rows).step_by(rows_per_slice) {
            let slice = batch.slice(start, rows_per_slice.min(rows - start));
            self.rows_sent += slice.num_rows() as u64;
            self.send(&slice, BatchMetadata::new())?;
        }
        Ok(())
    }

    /// Commits: the rows become visible at once (or with the session's open transaction).
    /// Returns the rows this insert appended.
    pub fn finish(mut self) -> Result<u64> {
        let marker = BatchMetadata::from_pairs([(insert::COMMIT_KEY, insert::COMMIT_VALUE)]);
        self.send(&RecordBatch::new_empty(self.schema.clone()), marker)?;
        let call = self
            .call
            .take()
            .expect("an inserter holds its call until it ends");
        note(self.broken, call.close().map_err(Error::from))?;
        Ok(self.rows_sent)
    }

    /// Gives up: the server rolls back every row of this insert.
    pub fn abort(mut self) -> Result<()> {
        match self.call.take() {
            Some(call) => note(self.broken, call.cancel().map_err(Error::from)),
            None => Ok(()),
        }
    }

    /// Sends one batch and checks its acknowledgement.
    fn send(&mut self, batch: &RecordBatch, metadata: BatchMetadata) -> Result<()> {
        let call = self
            .call
            .as_mut()
            .ok_or_else(|| Error::InvalidInput("the insert has already failed".into()))?;
        let ack = match call.exchange_with_metadata(batch, metadata) {
            Ok(Some((ack, _))) => ack,
            Ok(None) => {
                self.call = None;
                return Err(Error::Protocol("the server ended the insert early".into()));
            }
            Err(error) => {
                if let Some(call) = self.call.take() {
                    let _ = call.release();
                }
                return note(self.broken, Err(error.into()));
            }
        };
        let acknowledged = ack
            .column_by_name(insert::ROWS_FIELD)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .filter(|rows| rows.len() == 1 && !rows.is_null(0))
            .ok_or_else(|| Error::Protocol("insert acknowledgement without rows".into()))?
            .value(0);
        if u64::try_from(acknowledged) != Ok(self.rows_sent) {
            return Err(Error::Protocol(format!(
                "the server acknowledged {acknowledged} rows, {} were sent",
                self.rows_sent
            )));
        }
        Ok(())
    }

    /// The batch under the inserter's schema: same column types, in order.
    fn conform<'b>(&self, batch: &'b RecordBatch) -> Result<Cow<'b, RecordBatch>> {
        if batch.schema_ref() == &self.schema {
            return Ok(Cow::Borrowed(batch));
        }
        let expected = self.schema.fields();
        let given = batch.schema_ref().fields();
        if expected.len() != given.len() {
            return Err(Error::InvalidInput(format!(
                "the batch has {} columns, the insert {}",
                given.len(),
                expected.len()
            )));
        }
        for (want, got) in expected.iter().zip(given.iter()) {
            if want.data_type() != got.data_type() {
                return Err(Error::InvalidInput(format!(
                    "column '{}' is {}, the insert expects {}",
                    want.name(),
                    got.data_type(),
                    want.data_type()
                )));
            }
        }
        RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec())
            .map(Cow::Owned)
            .map_err(|error| Error::InvalidInput(error.to_string()))
    }
}

impl Drop for ArrowInserter<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            let cancelled = call.cancel().map_err(Error::from);
            let _ = note(self.broken, cancelled);
        }
    }
}
