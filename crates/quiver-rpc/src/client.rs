//! The client: calls methods of a remote service over one connection.
//!
//! Calls are sequential on a connection (the wire is lockstep). Logs the server
//! sends arrive through [`Client::take_logs`]; an EXCEPTION record becomes
//! [`ClientError::Remote`] carrying the server's error report.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_shm::{Segment, ShmConfig, ShmError};
use quiver_transport::Connection;
use quiver_wire::{
    classify, empty_schema, keys, BatchMetadata, BatchRole, ErrorReport, GatherBuf, Limits,
    LogLevel, LogRecord, StreamReader, StreamWriter, WireError,
};

use crate::shm_route::ShmRoute;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error.
    #[error("remote error: {0}")]
    Remote(ErrorReport),
    /// The connection or its bytes failed.
    #[error("wire: {0}")]
    Wire(#[from] WireError),
    /// The server's reply broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl ClientError {
    /// The server's error report, if the server raised one.
    pub fn remote(&self) -> Option<&ErrorReport> {
        match self {
            ClientError::Remote(report) => Some(report),
            _ => None,
        }
    }
}

impl From<std::io::Error> for ClientError {
    fn from(error: std::io::Error) -> Self {
        ClientError::Wire(WireError::Io(error))
    }
}

/// A connection to a service.
pub struct Client {
    connection: Connection,
    protocol: Option<(String, String)>,
    shm: Option<ShmRoute>,
    limits: Limits,
    out: GatherBuf,
    logs: Vec<LogRecord>,
}

impl Client {
    /// A client on `connection`, with no protocol named (set one with
    /// [`Client::with_protocol`]; servers require it for non-dunder methods).
    pub fn new(connection: Connection) -> Self {
        Self {
            connection,
            protocol: None,
            shm: None,
            limits: Limits::DEFAULT,
            out: GatherBuf::new(),
            logs: Vec::new(),
        }
    }

    /// Names the protocol and version every request is addressed to.
    pub fn with_protocol(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.protocol = Some((name.into(), version.into()));
        self
    }

    /// Routes large batches through `segment` (which this client should own) and
    /// advertises it on every request. The segment serves this connection only: its name is
    /// removed once the peer has replied with data.
    pub fn with_shm(mut self, segment: Arc<Segment>, config: &ShmConfig) -> Self {
        self.shm = Some(ShmRoute::new(segment, config));
        self
    }

    /// Creates and uses a segment when `config` asks for one
    /// (`VGI_RPC_SHM_SIZE_BYTES` set and shm not disabled), unless it would exceed the
    /// process budget (`VGI_RPC_SHM_PROCESS_MAX_BYTES`): then the connection runs inline.
    pub fn with_shm_from_config(self, config: &ShmConfig) -> Result<Self, ClientError> {
        match config.segment_to_create_bytes() {
            Some(size_bytes) if self.connection.kind.is_local() => {
                match Segment::create_within_budget(size_bytes, config.process_max_bytes) {
                    Ok(segment) => Ok(self.with_shm(segment, config)),
                    // Over the process budget: this connection runs inline, which is correct.
                    Err(error @ ShmError::BudgetExceeded { .. }) => {
                        if config.debug {
                            eprintln!("[quiver-shm] inline connection: {error}");
                        }
                        Ok(self)
                    }
                    Err(e) => Err(ClientError::Protocol(format!(
                        "cannot create shm segment: {e}"
                    ))),
                }
            }
            _ => Ok(self),
        }
    }

    /// Sets decoding limits for replies.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The segment in use, if any.
    pub fn shm_route(&self) -> Option<&ShmRoute> {
        self.shm.as_ref()
    }

    /// Logs received since the last call to this.
    pub fn take_logs(&mut self) -> Vec<LogRecord> {
        std::mem::take(&mut self.logs)
    }

    /// Calls a unary method. `Ok(None)` for a void reply.
    pub fn call(
        &mut self,
        method: &str,
        params: &RecordBatch,
    ) -> Result<Option<RecordBatch>, ClientError> {
        self.write_request(method, params, BatchMetadata::new())?;
        self.flush()?;
        let mut reader = self.begin_reply()?;
        let mut result = None;
        let mut error = None;
        while let Some((batch, metadata)) = self.next_data(&mut reader, &mut error)? {
            if reader.schema().fields().is_empty() && batch.num_rows() == 0 {
                continue;
            }
            if result.is_some() {
                return Err(ClientError::Protocol(
                    "unary reply carries more than one result".into(),
                ));
            }
            result = Some(self.resolve(batch, metadata)?.0);
        }
        if let Some(report) = error {
            return Err(ClientError::Remote(report));
        }
        Ok(result)
    }

    /// Starts a stream call. `with_header` says whether the method sends a header
    /// first (the caller knows the method's signature).
    pub fn stream(
        &mut self,
        method: &str,
        params: &RecordBatch,
        with_header: bool,
    ) -> Result<StreamCall<'_>, ClientError> {
        self.write_request(method, params, BatchMetadata::new())?;
        self.flush()?;
        let mut call = StreamCall {
            client: self,
            header: None,
            input: None,
            output: None,
            input_ended: false,
            done: false,
        };
        if with_header {
            match call.read_header() {
                Ok(header) => call.header = header,
                Err(error) => {
                    call.abandon_after_error();
                    return Err(error);
                }
            }
        }
        Ok(call)
    }

    fn write_request(
        &mut self,
        method: &str,
        params: &RecordBatch,
        extra: BatchMetadata,
    ) -> Result<(), ClientError> {
        let mut metadata = extra;
        metadata.insert(keys::METHOD, method);
        metadata.insert(keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION);
        if let Some((name, version)) = &self.protocol {
            metadata.insert(keys::PROTOCOL, name.as_str());
            metadata.insert(keys::PROTOCOL_VERSION, version.as_str());
        }
        if let Some(route) = &self.shm {
            metadata.insert(keys::SHM_SEGMENT_NAME, route.segment().name());
            metadata.insert(
                keys::SHM_SEGMENT_SIZE,
                route.segment().size_bytes().to_string(),
            );
        }
        // A large request goes through the segment as a pointer batch, as stream
        // inputs do; servers resolve request pointers like any other.
        let (params, metadata) = match self.shm.as_mut() {
            Some(route) => route
                .try_write(params, &metadata)?
                .unwrap_or_else(|| (params.clone(), metadata)),
            None => (params.clone(), metadata),
        };
        let mut writer = StreamWriter::begin(params.schema_ref(), &mut self.out)?;
        writer.write(&params, &metadata, &mut self.out)?;
        writer.finish(&mut self.out);
        Ok(())
    }

    fn begin_reply(&mut self) -> Result<StreamReader, ClientError> {
        self.begin_peer_turn();
        let reader = StreamReader::begin(&mut self.connection.reader, self.limits);
        self.end_peer_turn();
        reader?.ok_or_else(|| {
            WireError::Truncated(format!("{} closed the connection", self.connection.peer)).into()
        })
    }

    /// The next data batch of a reply stream, absorbing logs; an EXCEPTION record
    /// is stored in `error` and the stream read on to its end.
    fn next_data(
        &mut self,
        reader: &mut StreamReader,
        error: &mut Option<ErrorReport>,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, ClientError> {
        loop {
            self.begin_peer_turn();
            let next = reader.next(&mut self.connection.reader);
            self.end_peer_turn();
            let Some((batch, metadata)) = next? else {
                return Ok(None);
            };
            match classify(&batch, &metadata).map_err(ClientError::Protocol)? {
                BatchRole::Log(record) if record.level == LogLevel::Exception => {
                    *error = Some(ErrorReport::from_record(&record));
                }
                BatchRole::Log(record) => self.logs.push(record),
                _ => {
                    if let Some(route) = self.shm.as_mut() {
                        route.peer_has_attached();
                    }
                    return Ok(Some((batch, metadata)));
                }
            }
        }
    }

    fn resolve(
        &mut self,
        batch: RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(RecordBatch, BatchMetadata), ClientError> {
        let role = classify(&batch, &metadata).map_err(ClientError::Protocol)?;
        if let Some(route) = self.shm.as_mut() {
            route.stats.inbound_total += 1;
        }
        match role {
            BatchRole::ShmPointer { offset, length } => {
                let limits = self.limits;
                let route = self.shm.as_mut().ok_or_else(|| {
                    ClientError::Protocol("shm pointer reply but this client has no segment".into())
                })?;
                Ok(route.resolve(&batch, &metadata, offset, length, limits)?)
            }
            BatchRole::External => Err(ClientError::Protocol(
                "external-location replies are not supported".into(),
            )),
            _ => Ok((batch, metadata)),
        }
    }

    fn flush(&mut self) -> Result<(), ClientError> {
        if !self.out.is_empty() {
            self.out.write_to(&mut *self.connection.writer)?;
        }
        Ok(())
    }

    /// While we block on the peer, the segment's table is the peer's.
    fn begin_peer_turn(&mut self) {
        if let Some(route) = self.shm.as_mut() {
            route.begin_peer_turn();
        }
    }

    fn end_peer_turn(&mut self) {
        if let Some(route) = self.shm.as_mut() {
            route.end_peer_turn();
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.end_peer_turn();
        if let Some(route) = &self.shm {
            if route.debug() {
                eprintln!("{}", route.stats.summary(&self.connection.peer, "client"));
            }
        }
    }
}

/// An open stream call: tick a producer or exchange batches, then close or cancel.
pub struct StreamCall<'c> {
    client: &'c mut Client,
    header: Option<RecordBatch>,
    input: Option<StreamWriter>,
    output: Option<StreamReader>,
    input_ended: bool,
    done: bool,
}

impl StreamCall<'_> {
    /// The header batch, for methods that send one.
    pub fn header(&self) -> Option<&RecordBatch> {
        self.header.as_ref()
    }

    /// Whether the server ended the stream.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Logs received so far.
    pub fn take_logs(&mut self) -> Vec<LogRecord> {
        self.client.take_logs()
    }

    /// Asks a producer for its next batch; `Ok(None)` when it has finished.
    pub fn tick(&mut self) -> Result<Option<RecordBatch>, ClientError> {
        let schema = empty_schema();
        self.send(&RecordBatch::new_empty(schema), BatchMetadata::new())?;
        self.receive().map(|o| o.map(|(batch, _)| batch))
    }

    /// Sends one input batch and returns the output batch it produced (`None` if
    /// the server ended the stream instead).
    pub fn exchange(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>, ClientError> {
        self.exchange_with_metadata(batch, BatchMetadata::new())
            .map(|o| o.map(|(batch, _)| batch))
    }

    /// Like [`StreamCall::exchange`], with custom metadata both ways.
    pub fn exchange_with_metadata(
        &mut self,
        batch: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, ClientError> {
        self.send(batch, metadata)?;
        self.receive()
    }

    /// Cancels the stream: the server stops, and the connection is ready for the
    /// next call.
    pub fn cancel(mut self) -> Result<(), ClientError> {
        if self.done {
            return Ok(());
        }
        let schema = self
            .input
            .as_ref()
            .map(|w| w.schema().clone())
            .unwrap_or_else(empty_schema);
        let cancel = BatchMetadata::from_pairs([(keys::CANCEL, "1")]);
        self.send_raw(&RecordBatch::new_empty(schema), &cancel)?;
        match self.finish() {
            Err(ClientError::Remote(_)) | Ok(()) => Ok(()),
            Err(other) => Err(other),
        }
    }

    /// Ends the stream from the client side and reads the server's end.
    pub fn close(mut self) -> Result<(), ClientError> {
        self.finish()
    }

    fn send(&mut self, batch: &RecordBatch, metadata: BatchMetadata) -> Result<(), ClientError> {
        if self.done {
            return Err(ClientError::Protocol("the stream has ended".into()));
        }
        let (batch, metadata) = match self.client.shm.as_mut() {
            Some(route) => route
                .try_write(batch, &metadata)?
                .unwrap_or_else(|| (batch.clone(), metadata)),
            None => (batch.clone(), metadata),
        };
        self.send_raw(&batch, &metadata)
    }

    fn send_raw(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
    ) -> Result<(), ClientError> {
        let client = &mut *self.client;
        if self.input.is_none() {
            self.input = Some(StreamWriter::begin(batch.schema_ref(), &mut client.out)?);
        }
        let input = self.input.as_mut().expect("input stream open");
        input.write(batch, metadata, &mut client.out)?;
        client.flush()
    }

    /// Reads one output batch; at the server's end marker closes the input and
    /// reports `None`; an error ends the stream and is returned.
    fn receive(&mut self) -> Result<Option<(RecordBatch, BatchMetadata)>, ClientError> {
        if self.output.is_none() {
            self.output = Some(self.client.begin_reply()?);
        }
        let mut error = None;
        let mut output = self.output.take().expect("output stream open");
        let next = self.client.next_data(&mut output, &mut error);
        let finished = output.is_finished();
        self.output = Some(output);
        let next = match next {
            Ok(next) => next,
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        };
        if let Some(report) = error {
            if !finished {
                self.drain_output()?;
            }
            self.end_input()?;
            return Err(ClientError::Remote(report));
        }
        match next {
            Some((batch, metadata)) => Ok(Some(self.client.resolve(batch, metadata)?)),
            None => {
                self.end_input()?;
                Ok(None)
            }
        }
    }

    fn read_header(&mut self) -> Result<Option<RecordBatch>, ClientError> {
        let mut reader = self.client.begin_reply()?;
        let mut error = None;
        let mut header = None;
        while let Some((batch, metadata)) = self.client.next_data(&mut reader, &mut error)? {
            header = Some(self.client.resolve(batch, metadata)?.0);
        }
        match error {
            Some(report) => Err(ClientError::Remote(report)),
            None => Ok(header),
        }
    }

    /// After a failed start the server drains one input stream: send an empty one.
    fn abandon_after_error(&mut self) {
        let _ = self.end_input();
    }

    fn drain_output(&mut self) -> Result<(), ClientError> {
        if let Some(mut output) = self.output.take() {
            let mut error = None;
            while self.client.next_data(&mut output, &mut error)?.is_some() {}
        }
        Ok(())
    }

    /// Sends the input's end marker (opening an empty input first if nothing was sent).
    fn end_input(&mut self) -> Result<(), ClientError> {
        if self.input_ended {
            return Ok(());
        }
        self.input_ended = true;
        self.done = true;
        let client = &mut *self.client;
        let input = match self.input.take() {
            Some(input) => input,
            None => StreamWriter::begin(&empty_schema(), &mut client.out)?,
        };
        input.finish(&mut client.out);
        client.flush()
    }

    /// Closes the input, then reads the output to its end.
    fn finish(&mut self) -> Result<(), ClientError> {
        if self.done {
            return Ok(());
        }
        self.end_input()?;
        let mut output = match self.output.take() {
            Some(output) => output,
            None => self.client.begin_reply()?,
        };
        let mut error = None;
        while self.client.next_data(&mut output, &mut error)?.is_some() {}
        match error {
            Some(report) => Err(ClientError::Remote(report)),
            None => Ok(()),
        }
    }
}

/// A stream call set aside without its client: what an engine keeps between
/// calls when the client and the call must live in one owner (a scan's state
/// across FFI calls). Resume it with the same client it was started on.
///
/// Dropping a suspended stream does nothing on the wire; the connection is then
/// mid-call and should be closed, or the stream resumed and closed or cancelled.
#[derive(Default)]
pub struct SuspendedStream {
    header: Option<RecordBatch>,
    input: Option<StreamWriter>,
    output: Option<StreamReader>,
    input_ended: bool,
    done: bool,
}

impl SuspendedStream {
    /// Whether the server ended the stream.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The header batch, for methods that send one.
    pub fn header(&self) -> Option<&RecordBatch> {
        self.header.as_ref()
    }

    /// Continues the call on `client`, which must be the client that started it.
    pub fn resume(self, client: &mut Client) -> StreamCall<'_> {
        StreamCall {
            client,
            header: self.header,
            input: self.input,
            output: self.output,
            input_ended: self.input_ended,
            done: self.done,
        }
    }
}

impl StreamCall<'_> {
    /// Sets the call aside, releasing the borrow of its client; nothing is sent.
    pub fn suspend(mut self) -> SuspendedStream {
        let suspended = SuspendedStream {
            header: self.header.take(),
            input: self.input.take(),
            output: self.output.take(),
            input_ended: self.input_ended,
            done: self.done,
        };
        // Drop must not finish a call that only changes hands.
        self.done = true;
        suspended
    }
}

impl Drop for StreamCall<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.finish();
        }
    }
}

/// The schema of a batch, for callers building inputs.
pub fn schema_of(batch: &RecordBatch) -> SchemaRef {
    batch.schema()
}
