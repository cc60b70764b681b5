//! The client: calls methods of a remote service over one connection.
//!
//! Calls are sequential on a connection (the wire is lockstep). Logs the server
//! sends arrive through [`Client::take_logs`]; an EXCEPTION record becomes
//! [`RpcError::Remote`] carrying the server's error report. Stream calls live in
//! [`crate::stream_call`].

use std::sync::Arc;

use arrow_array::RecordBatch;
use quiver_shm::{Segment, ShmConfig, ShmError};
use quiver_transport::Connection;
use quiver_wire::{
    classify, keys, BatchMetadata, BatchRole, ErrorReport, GatherBuffer, Limits, LogLevel,
    LogRecord, Nullability, StreamReader, StreamWriter, WireError,
};

use crate::http::feed::ReplyFeed;
use crate::http::{HttpOptions, HttpPeer};
use crate::link::{ConnectionError, Link};
use crate::output::OutputSpace;
use crate::shm_route::ShmRoute;
use crate::stream_call::{ClientStream, StreamCall};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The server answered with an error.
    #[error("remote error: {0}")]
    Remote(ErrorReport),
    /// The connection or its bytes failed.
    #[error("wire: {0}")]
    Wire(#[from] WireError),
    /// The shared-memory segment failed (creation, a bad pointer, a corrupt table).
    #[error("shm: {0}")]
    Shm(#[from] ShmError),
    /// The server's reply broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl RpcError {
    /// The server's error report, if the server raised one.
    pub fn remote(&self) -> Option<&ErrorReport> {
        match self {
            RpcError::Remote(report) => Some(report),
            _ => None,
        }
    }
}

impl From<std::io::Error> for RpcError {
    fn from(error: std::io::Error) -> Self {
        RpcError::Wire(WireError::Io(error))
    }
}

impl From<ConnectionError> for RpcError {
    fn from(error: ConnectionError) -> Self {
        match error {
            ConnectionError::Wire(error) => RpcError::Wire(error),
            ConnectionError::Shm(error) => RpcError::Shm(error),
        }
    }
}

/// A connection to a service.
pub struct Client {
    link: Link,
    protocol: Option<(String, String)>,
    shm: Option<ShmRoute>,
    limits: Limits,
    out: GatherBuffer,
    logs: Vec<LogRecord>,
    log_sink: Option<LogSink>,
    /// Over HTTP: the peer requests go to, and the feed its replies are read from.
    http: Option<(HttpPeer, ReplyFeed)>,
}

/// Where a client hands each log record a server sends, instead of keeping it for
/// [`Client::take_logs`].
pub type LogSink = Box<dyn FnMut(LogRecord) + Send>;

/// Most log records a client keeps between two [`Client::take_logs`] (the oldest go first).
pub const LOGS_KEPT_MAX: usize = 1024;

impl Client {
    /// A client of the HTTP worker at `url` (`http://host:port[/prefix]` or `https://...`);
    /// nothing is dialled until the first call. Name the protocol with
    /// [`Client::with_protocol`]: it is part of every URL.
    pub fn http(url: &str, options: HttpOptions) -> std::io::Result<Client> {
        let peer = HttpPeer::new(url, options)?;
        let (feed, connection) = ReplyFeed::connection(url);
        let mut client = Client::new(connection);
        client.http = Some((peer, feed));
        Ok(client)
    }

    /// Whether this client speaks HTTP.
    pub fn is_http(&self) -> bool {
        self.http.is_some()
    }

    /// Over HTTP: one request outside any call (`OPTIONS /health` reads the capability
    /// headers); `None` on a byte-stream client.
    pub fn http_request(
        &mut self,
        verb: &str,
        path: &str,
    ) -> Option<Result<crate::http::HttpReply, RpcError>> {
        let (peer, _) = self.http.as_mut()?;
        Some(peer.request(verb, path, Vec::new()).map_err(RpcError::from))
    }

    /// Over HTTP: posts what is gathered in the output buffer to `{protocol}/{method}{suffix}`
    /// and queues the reply's Arrow body for the reader; a reply without one is an error.
    pub(crate) fn post_gathered(
        &mut self,
        protocol: Option<&str>,
        method: &str,
        suffix: &str,
    ) -> Result<(), RpcError> {
        let mut body = Vec::with_capacity(self.out.len());
        self.out.write_to(&mut body)?;
        let (peer, feed) = self.http.as_mut().expect("an HTTP client");
        let path = match protocol {
            Some(protocol) => format!("/{protocol}/{method}{suffix}"),
            None => format!("/{method}{suffix}"),
        };
        let reply = peer.post(&path, body)?;
        if !reply.is_arrow() {
            let text =
                String::from_utf8_lossy(&reply.body[..reply.body.len().min(512)]).into_owned();
            return Err(RpcError::Protocol(format!(
                "HTTP {} from {}{path}: {}",
                reply.status,
                peer.describe(),
                text.trim()
            )));
        }
        feed.push(reply.body);
        Ok(())
    }

    /// The protocol a request with `metadata` is addressed to (the client's own wins).
    pub(crate) fn protocol_for(&self, metadata: &BatchMetadata) -> Option<String> {
        self.protocol
            .as_ref()
            .map(|(name, _)| name.clone())
            .or_else(|| metadata.get(keys::PROTOCOL).map(str::to_string))
    }

    /// A client on `connection`, with no protocol named (set one with
    /// [`Client::with_protocol`]; servers require it for non-dunder methods).
    pub fn new(connection: Connection) -> Self {
        Self {
            link: Link::new(connection),
            protocol: None,
            shm: None,
            limits: Limits::DEFAULT,
            out: GatherBuffer::new(),
            logs: Vec::new(),
            log_sink: None,
            http: None,
        }
    }

    /// Hands every log record the server sends to `sink` as it arrives (an engine shows its
    /// workers' logs this way) instead of keeping it for [`Client::take_logs`].
    pub fn with_log_sink(mut self, sink: LogSink) -> Self {
        self.log_sink = Some(sink);
        self
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
    pub fn with_shm_from_config(self, config: &ShmConfig) -> Result<Self, RpcError> {
        match config.segment_to_create_bytes() {
            Some(size_bytes) if self.link.kind().is_local() => {
                match Segment::create_within_budget(size_bytes, config.process_max_bytes) {
                    Ok(segment) => Ok(self.with_shm(segment, config)),
                    // Over the process budget: this connection runs inline, which is correct.
                    Err(error @ ShmError::BudgetExceeded { .. }) => {
                        if config.debug {
                            quiver_process::log_line!("[quiver-shm] inline connection: {error}");
                        }
                        Ok(self)
                    }
                    Err(e) => Err(e.into()),
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

    /// Where batches this client will send may be built (see [`OutputSpace`]); without a
    /// segment it lends nothing.
    pub fn output_space(&self) -> OutputSpace {
        self.shm
            .as_ref()
            .map(ShmRoute::output_space)
            .unwrap_or_default()
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
    ) -> Result<Option<RecordBatch>, RpcError> {
        let reply = self.call_with_metadata(method, params, BatchMetadata::new())?;
        Ok(reply.map(|(batch, _)| batch))
    }

    /// [`Client::call`] with `metadata` on the request (a relay passes a caller's whole
    /// map: protocol, version, its own keys), returning the reply's metadata too. The
    /// client's own keys (method, request version, a named protocol, the segment) win.
    pub fn call_with_metadata(
        &mut self,
        method: &str,
        params: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, RpcError> {
        let protocol = self.protocol_for(&metadata);
        self.write_request(method, params, metadata)?;
        if self.is_http() {
            self.post_gathered(protocol.as_deref(), method, "")?;
        } else {
            self.flush()?;
        }
        let mut reader = self.begin_reply()?;
        let mut result = None;
        let mut error = None;
        while let Some((batch, metadata)) = self.next_data(&mut reader, &mut error)? {
            if reader.schema().fields().is_empty() && batch.num_rows() == 0 {
                continue;
            }
            if result.is_some() {
                return Err(RpcError::Protocol(
                    "unary reply carries more than one result".into(),
                ));
            }
            result = Some(self.resolve(batch, metadata)?);
        }
        if let Some(report) = error {
            return Err(RpcError::Remote(report));
        }
        Ok(result)
    }

    /// Starts a stream call that borrows this client. `with_header` says whether
    /// the method sends a header first (the caller knows the method's signature).
    /// To keep the call and the client in one owner, use [`ClientStream::open`].
    pub fn stream(
        &mut self,
        method: &str,
        params: &RecordBatch,
        with_header: bool,
    ) -> Result<StreamCall<'_>, RpcError> {
        ClientStream::open(self, method, params, with_header).map_err(|(error, _)| error)
    }

    pub(crate) fn write_request(
        &mut self,
        method: &str,
        params: &RecordBatch,
        extra: BatchMetadata,
    ) -> Result<(), RpcError> {
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
        let (params, metadata) = self.route_output(params, metadata)?;
        let mut writer = StreamWriter::begin(params.schema_ref(), &mut self.out)?;
        writer.write(&params, &metadata, &mut self.out)?;
        writer.finish(&mut self.out);
        Ok(())
    }

    pub(crate) fn begin_reply(&mut self) -> Result<StreamReader, RpcError> {
        let limits = self.limits;
        // Replies are read the way the reference implementations read them, nulls in fields
        // declared non-nullable included (see quiver_wire::Nullability).
        let reader = self.link.wait_for_peer(self.shm.as_mut(), |input| {
            StreamReader::begin(input, limits)
                .map(|r| r.map(|r| r.with_nullability(Nullability::Tolerated)))
        });
        reader?.ok_or_else(|| {
            WireError::Truncated(format!("{} closed the connection", self.link.peer())).into()
        })
    }

    /// The next data batch of a reply stream, absorbing logs; an EXCEPTION record
    /// is stored in `error` and the stream read on to its end.
    pub(crate) fn next_data(
        &mut self,
        reader: &mut StreamReader,
        error: &mut Option<ErrorReport>,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, RpcError> {
        loop {
            let next = self
                .link
                .wait_for_peer(self.shm.as_mut(), |input| reader.next(input));
            let Some((batch, metadata)) = next? else {
                return Ok(None);
            };
            match classify(&batch, &metadata).map_err(RpcError::Protocol)? {
                BatchRole::Log(record) if record.level == LogLevel::Exception => {
                    *error = Some(ErrorReport::from_record(&record));
                }
                BatchRole::Log(record) => match self.log_sink.as_mut() {
                    Some(sink) => sink(record),
                    None => {
                        if self.logs.len() == LOGS_KEPT_MAX {
                            self.logs.remove(0);
                        }
                        self.logs.push(record);
                    }
                },
                _ => {
                    if let Some(route) = self.shm.as_mut() {
                        route.peer_has_attached();
                    }
                    return Ok(Some((batch, metadata)));
                }
            }
        }
    }

    pub(crate) fn resolve(
        &mut self,
        batch: RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(RecordBatch, BatchMetadata), RpcError> {
        let role = classify(&batch, &metadata).map_err(RpcError::Protocol)?;
        if let Some(route) = self.shm.as_mut() {
            route.stats.inbound_total += 1;
        }
        match role {
            BatchRole::ShmPointer { offset, length } => {
                let limits = self.limits;
                let route = self.shm.as_mut().ok_or_else(|| {
                    RpcError::Protocol("shm pointer reply but this client has no segment".into())
                })?;
                Ok(route.resolve(
                    &batch,
                    &metadata,
                    offset,
                    length,
                    limits,
                    Nullability::Tolerated,
                )?)
            }
            BatchRole::External => Err(RpcError::Protocol(
                "external-location replies are not supported".into(),
            )),
            _ => Ok((batch, metadata)),
        }
    }

    /// Routes an outgoing data batch through the segment when it qualifies.
    pub(crate) fn route_output(
        &mut self,
        batch: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(RecordBatch, BatchMetadata), RpcError> {
        Ok(match self.shm.as_mut() {
            Some(route) => route
                .try_write(batch, &metadata)?
                .unwrap_or_else(|| (batch.clone(), metadata)),
            None => (batch.clone(), metadata),
        })
    }

    /// The buffer outgoing messages are gathered in until [`Client::flush`].
    pub(crate) fn out(&mut self) -> &mut GatherBuffer {
        &mut self.out
    }

    pub(crate) fn flush(&mut self) -> Result<(), RpcError> {
        if !self.out.is_empty() {
            self.out.write_to(self.link.writer())?;
        }
        Ok(())
    }
}

/// Lets a stream call hold its client by value or by reference alike.
impl AsMut<Client> for Client {
    fn as_mut(&mut self) -> &mut Client {
        self
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(route) = &self.shm {
            if route.debug() {
                quiver_process::log_line!("{}", route.stats.summary(self.link.peer(), "client"));
            }
        }
    }
}
