//! One `init` stream on one pooled connection: the header, then ticks (table, FINALIZE) or
//! exchanges (scalar, table-in-out INPUT), then the end.
//!
//! A stream owns its connection while open. It goes back to the pool when the stream ends in
//! step (the worker finished, we closed it, or a cancel completed); it is closed (and a stdio
//! worker process ended) when it is out of step: interrupted, timed out, or the worker failed.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{ClientError, StreamCall, SuspendedStream};
use quiver_vgi_contract::GlobalInitResponse;
use quiver_wire::BatchMetadata;

use crate::ffi::{Failure, Outcome, QUIVER_ERR_WORKER};
use crate::io;
use crate::worker::{Conn, Worker};

/// How long dropping an unfinished stream waits for the worker to acknowledge a cancel.
pub const CANCEL_DEADLINE: Duration = Duration::from_secs(2);

/// An open `init` stream.
pub struct Stream {
    worker: Arc<Worker>,
    conn: Option<Conn>,
    call: SuspendedStream,
    /// The header the worker sent.
    pub header: GlobalInitResponse,
    /// "numbers() scan", for messages.
    pub during: String,
    ended: bool,
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
        mut conn: Conn,
        request: &[u8],
        during: String,
    ) -> Outcome<Stream> {
        let opened = conn
            .client
            .stream("init", &request_batch(request), true)
            .map(StreamCall::suspend);
        let call = match opened {
            Ok(call) => call,
            Err(error) => return Err(worker.failure(conn, &error, &during)),
        };
        let header = match call.header().map(GlobalInitResponse::parse) {
            Some(Ok(header)) => header,
            other => {
                let why = match other {
                    Some(Err(why)) => why.message,
                    _ => "no header".to_string(),
                };
                drop(conn);
                return Err(Failure::new(
                    QUIVER_ERR_WORKER,
                    format!("{}: bad init header during {during}: {why}", worker.label()),
                ));
            }
        };
        Ok(Stream {
            worker: worker.clone(),
            conn: Some(conn),
            call,
            header,
            during,
            ended: false,
        })
    }

    /// Whether the worker ended the output.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The worker of this stream.
    pub fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    fn with_call<T>(
        &mut self,
        body: impl FnOnce(&mut StreamCall<'_>) -> Result<T, ClientError>,
    ) -> Outcome<T> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(Failure::new(
                QUIVER_ERR_WORKER,
                format!(
                    "{}: the stream of {} is closed",
                    self.worker.label(),
                    self.during
                ),
            ));
        };
        let mut call = std::mem::take(&mut self.call).resume(&mut conn.client);
        let result = body(&mut call);
        self.call = call.suspend();
        self.ended |= self.call.is_done();
        result.map_err(|error| {
            let conn = self.conn.take().expect("checked above");
            self.ended = true;
            self.worker.failure(conn, &error, &self.during)
        })
    }

    /// The next batch of a producer (table scan, FINALIZE), skipping empty ones; `None` at the end.
    pub fn next_batch(&mut self) -> Outcome<Option<RecordBatch>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            match self.with_call(|call| call.tick())? {
                Some(batch) if batch.num_rows() == 0 => continue,
                other => return Ok(other),
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
        self.with_call(|call| call.exchange_with_metadata(batch, metadata))
    }

    /// Ends the stream in step (our input's end, then the worker's) and returns the connection.
    pub fn close(mut self) -> Outcome<()> {
        self.end_in_step()?;
        if let Some(conn) = self.conn.take() {
            self.worker.checkin(conn);
        }
        Ok(())
    }

    /// Ends the stream in step and hands over its connection (FINALIZE reuses it).
    pub fn close_keeping_connection(mut self) -> Outcome<Conn> {
        self.end_in_step()?;
        self.conn.take().ok_or_else(|| {
            Failure::new(
                QUIVER_ERR_WORKER,
                format!(
                    "{}: the stream of {} is closed",
                    self.worker.label(),
                    self.during
                ),
            )
        })
    }

    fn end_in_step(&mut self) -> Outcome<()> {
        if self.ended {
            return Ok(());
        }
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        let call = std::mem::take(&mut self.call).resume(&mut conn.client);
        let closed = call.close();
        self.ended = true;
        closed.map_err(|error| {
            let conn = self.conn.take().expect("checked above");
            self.worker.failure(conn, &error, &self.during)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if self.ended {
            self.worker.checkin(conn);
            return;
        }
        // Abandoned mid-stream (LIMIT, an error elsewhere in the query): cancel, within a
        // deadline so that a hung worker cannot hang us; a connection that does not come back in
        // step is closed.
        let call = std::mem::take(&mut self.call).resume(&mut conn.client);
        let cancelled = io::with_deadline(CANCEL_DEADLINE, || call.cancel());
        if cancelled.is_ok() {
            self.worker.checkin(conn);
        }
    }
}
