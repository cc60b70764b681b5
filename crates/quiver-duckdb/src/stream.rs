//! One `init` stream on one pooled connection: the header, then ticks (table, FINALIZE) or
//! exchanges (scalar, table-in-out INPUT), then the end.
//!
//! A stream owns its connection while open. It goes back to the pool when the stream ends in
//! step (the worker finished, we closed it, or a cancel completed); it is closed (and a stdio
//! worker process ended) when it is out of step: interrupted, timed out, or the worker failed.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use quiver_rpc::{ClientError, ClientStream};
use quiver_vgi_contract::GlobalInitResponse;
use quiver_wire::BatchMetadata;

use crate::ffi::{Failure, FailureCode, Outcome};
use crate::worker::{Conn, Worker};
use quiver_transport::fd_io;

/// How long dropping an unfinished stream waits for the worker to acknowledge a cancel.
pub const CANCEL_DEADLINE: Duration = Duration::from_secs(2);

/// An open `init` stream.
pub struct Stream {
    worker: Arc<Worker>,
    /// The call, holding its pooled connection; `None` once it failed or was closed (its
    /// connection then went back to the pool or was closed).
    call: Option<ClientStream<Conn>>,
    /// The header the worker sent.
    pub header: GlobalInitResponse,
    /// "numbers() scan", for messages.
    pub during: String,
    /// The columns every answer must have, as the bind declared them (projected for a scan):
    /// DuckDB reads each column by its declared type, so a batch of another shape is refused.
    output: Option<SchemaRef>,
}

/// The `request: binary` parameter batch of `init`.
pub fn request_batch(bytes: &[u8]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "request",
        DataType::Binary,
        false,
    )]));
    let column: ArrayRef = Arc::new(BinaryArray::from(vec![bytes]));
    RecordBatch::try_new(schema, vec![column]).expect("one binary column")
}

impl Stream {
    /// Sends `init` (an encoded `InitRequest`) on a pooled connection and reads the header.
    pub fn open(worker: &Arc<Worker>, request: &[u8], during: String) -> Outcome<Stream> {
        let conn = worker.checkout()?;
        Stream::open_on(worker, conn, request, during)
    }

    /// Like [`Stream::open`], on a given connection (FINALIZE must reach the INPUT's process).
    pub fn open_on(
        worker: &Arc<Worker>,
        conn: Conn,
        request: &[u8],
        during: String,
    ) -> Outcome<Stream> {
        let call = match ClientStream::open(conn, "init", &request_batch(request), true) {
            Ok(call) => call,
            Err((error, conn)) => return Err(worker.failure(conn, &error, &during)),
        };
        let header = match call.header().map(GlobalInitResponse::parse) {
            Some(Ok(header)) => header,
            other => {
                let why = match other {
                    Some(Err(why)) => why.message,
                    _ => "no header".to_string(),
                };
                // Mid-call: the connection is out of step and is closed.
                drop(call.release());
                return Err(Failure::worker(format!(
                    "{}: bad init header during {during}: {why}",
                    worker.label()
                )));
            }
        };
        Ok(Stream {
            worker: worker.clone(),
            call: Some(call),
            header,
            during,
            output: None,
        })
    }

    /// Holds every answer of this stream to `output`'s column types.
    pub fn expecting(mut self, output: SchemaRef) -> Stream {
        self.output = Some(output);
        self
    }

    /// The columns this stream's answers are held to.
    pub fn output(&self) -> Option<&SchemaRef> {
        self.output.as_ref()
    }

    /// Refuses an answer whose columns are not the declared ones (count and types; names and
    /// nullability aside, which DuckDB does not read).
    fn check_answer(&self, batch: &RecordBatch) -> Outcome<()> {
        let Some(expected) = &self.output else {
            return Ok(());
        };
        let refuse = |what: String| {
            Err(Failure::new(
                FailureCode::Worker,
                format!(
                    "{} answered {what} during {}",
                    self.worker.label(),
                    self.during
                ),
            ))
        };
        let got = batch.schema_ref().fields();
        if got.len() != expected.fields().len() {
            return refuse(format!(
                "{} column(s) where its bind declared {}",
                got.len(),
                expected.fields().len()
            ));
        }
        for (got, want) in got.iter().zip(expected.fields()) {
            if !same_layout(got.data_type(), want.data_type()) {
                return refuse(format!(
                    "column '{}' as {} where its bind declared {}",
                    want.name(),
                    got.data_type(),
                    want.data_type()
                ));
            }
        }
        Ok(())
    }

    /// Whether the worker ended the output (or the stream failed).
    pub fn ended(&self) -> bool {
        self.call.as_ref().is_none_or(ClientStream::is_done)
    }

    /// The worker of this stream.
    pub fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    /// Runs one step of the call; a failure is described and the connection released (back to
    /// the pool when still in step, closed otherwise).
    fn with_call<T>(
        &mut self,
        step: impl FnOnce(&mut ClientStream<Conn>) -> Result<T, ClientError>,
    ) -> Outcome<T> {
        if self.call.is_none() {
            return Err(self.closed());
        }
        let call = self.call.as_mut().expect("checked above");
        step(call).map_err(|error| {
            let conn = self.call.take().expect("checked above").release();
            self.worker.failure(conn, &error, &self.during)
        })
    }

    fn closed(&self) -> Failure {
        Failure::worker(format!(
            "{}: the stream of {} is closed",
            self.worker.label(),
            self.during
        ))
    }

    /// The next batch of a producer (table scan, FINALIZE), skipping empty ones; `None` at the end.
    pub fn next_batch(&mut self) -> Outcome<Option<RecordBatch>> {
        loop {
            if self.ended() {
                return Ok(None);
            }
            match self.with_call(|call| call.tick())? {
                Some(batch) if batch.num_rows() == 0 => continue,
                Some(batch) => {
                    self.check_answer(&batch)?;
                    return Ok(Some(batch));
                }
                None => return Ok(None),
            }
        }
    }

    /// Sends one input batch (with `metadata`) and returns the output batch it produced, with its
    /// metadata; `None` if the worker ended the stream instead.
    pub fn exchange(
        &mut self,
        batch: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Outcome<Option<(RecordBatch, BatchMetadata)>> {
        let answer = self.with_call(|call| call.exchange_with_metadata(batch, metadata))?;
        if let Some((output, _)) = &answer {
            self.check_answer(output)?;
        }
        Ok(answer)
    }

    /// Ends the stream in step (our input's end, then the worker's) and returns the connection.
    pub fn close(mut self) -> Outcome<()> {
        if let Some(conn) = self.end_in_step()? {
            self.worker.checkin(conn);
        }
        Ok(())
    }

    /// Ends the stream in step and hands over its connection (FINALIZE reuses it).
    pub fn close_keeping_connection(mut self) -> Outcome<Conn> {
        self.end_in_step()?.ok_or_else(|| self.closed())
    }

    /// Ends the call in step; its connection, or `None` when the call had already failed.
    fn end_in_step(&mut self) -> Outcome<Option<Conn>> {
        let Some(call) = self.call.take() else {
            return Ok(None);
        };
        match call.close_and_release() {
            (conn, Ok(())) => Ok(Some(conn)),
            (conn, Err(error)) => Err(self.worker.failure(conn, &error, &self.during)),
        }
    }
}

/// Whether two types are laid out alike: equal once nested fields' names, nullability and
/// metadata are set aside (a worker may name a list's item differently, or mark it nullable).
pub(crate) fn same_layout(got: &DataType, want: &DataType) -> bool {
    got == want || plain(got) == plain(want)
}

/// `data_type` with every nested field renamed "", nullable and without metadata.
fn plain(data_type: &DataType) -> DataType {
    let field = |f: &FieldRef| Arc::new(Field::new("", plain(f.data_type()), true));
    match data_type {
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::ListView(f) => DataType::ListView(field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect()),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Dictionary(key, value) => {
            DataType::Dictionary(Box::new(plain(key)), Box::new(plain(value)))
        }
        other => other.clone(),
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        if call.is_done() {
            self.worker.checkin(call.release());
            return;
        }
        // Abandoned mid-stream (LIMIT, an error elsewhere in the query): cancel, within a
        // deadline so that a hung worker cannot hang us; a connection that does not come back in
        // step is closed.
        let (conn, cancelled) = fd_io::with_deadline(CANCEL_DEADLINE, || call.cancel_and_release());
        if cancelled.is_ok() {
            self.worker.checkin(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_compare_without_nested_names_or_nullability() {
        let list = |name: &str, nullable: bool| {
            DataType::List(Arc::new(Field::new(name, DataType::Int64, nullable)))
        };
        assert!(same_layout(&list("item", true), &list("element", false)));
        assert!(!same_layout(
            &list("item", true),
            &DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
        ));
        assert!(!same_layout(&DataType::Utf8, &DataType::Int64));
        assert!(same_layout(&DataType::Int64, &DataType::Int64));
    }
}
