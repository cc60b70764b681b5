//! The server: reads requests from a connection, dispatches them, writes replies.
//!
//! One [`Session`] per connection handles requests one after another. Every reply
//! is gathered in one buffer and written with one call; a bad request is answered
//! with an error and the connection keeps serving, unless the bytes themselves
//! are broken (framing cannot be recovered), in which case the error is sent and
//! the connection closed. Reading a request is in `server/request.rs`, stream calls (header,
//! turns, cancel) in `server/stream.rs`.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::Connection;
use quiver_wire::{
    classify, empty_schema, keys, BatchMetadata, BatchRole, ErrorCode, ErrorReport, GatherBuffer,
    Limits, LogRecord, Nullability, StreamWriter, WireError,
};

use crate::conform;
use crate::context::CallContext;
use crate::errors;
use crate::link::{ConnectionError, Link};
use crate::method::{Body, Method};
use crate::params::Params;
use crate::reflection::reflection_service;
use crate::service::{major_minor, Service};
use crate::shm_route::ShmRoute;

mod request;
mod stream;

use request::{Request, RequestError};

/// Settings of a server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Decoding limits for requests and inputs.
    pub limits: Limits,
    /// Shared-memory policy (disable switch, threshold, debug logging).
    pub shm: ShmConfig,
    /// Identifies this server on logs and errors.
    pub server_id: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            limits: Limits::DEFAULT,
            shm: ShmConfig::default(),
            server_id: default_server_id(),
        }
    }
}

fn default_server_id() -> String {
    format!("quiver-{:x}", std::process::id())
}

/// Serves one [`Service`] on any number of connections.
pub struct Server {
    service: Arc<Service>,
    /// Further protocols served on the same connections, routed by the
    /// request's protocol name: secondary application protocols, then
    /// `vgi_rpc.Reflection.v1` describing them all.
    others: Vec<Arc<Service>>,
    config: ServerConfig,
    /// Process id in hex: generated request ids are this plus a per-connection count.
    request_id_prefix: String,
    /// Decides, before any method of any hosted protocol runs, whether this connection may call
    /// it (see [`Server::with_admission`]).
    admission: Option<Arc<Admission>>,
    /// Says whether the connection is admitted yet (see [`Server::with_guard`]).
    guard: Option<Arc<Guard>>,
}

/// An admission check: given the protocol and method a request names, `None` lets it run and
/// `Some(report)` answers with that error instead (the method never runs).
pub type Admission = dyn Fn(&str, &str) -> Option<ErrorReport> + Send + Sync;

/// A connection's guard: `Some(refusal)` while the connection is not admitted (before it
/// authenticated), `None` once it is.
pub type Guard = dyn Fn() -> Option<ErrorReport> + Send + Sync;

/// Largest request body read from a connection its guard does not admit yet: what a stranger
/// may make the server allocate is an authentication request's worth, not a data message's.
pub const UNADMITTED_BODY_BYTES_MAX: u64 = 64 * 1024;

/// Why a session stopped.
#[derive(Debug)]
pub enum SessionEnd {
    /// The client closed the connection between requests.
    Closed,
    /// The connection (or its segment) failed or carried bytes that cannot be
    /// resynchronised.
    Failed(ConnectionError),
}

impl Server {
    /// A server for `service`.
    pub fn new(service: Service, config: ServerConfig) -> Self {
        Self::hosting(service, Vec::new(), config)
    }

    /// A server for `primary` and `secondary` protocols on the same
    /// connections; reflection lists them in that order.
    pub fn hosting(primary: Service, secondary: Vec<Service>, config: ServerConfig) -> Self {
        let applications: Vec<&Service> = std::iter::once(&primary).chain(&secondary).collect();
        let reflection =
            reflection_service(&applications, &config.server_id, env!("CARGO_PKG_VERSION"));
        let mut others: Vec<Arc<Service>> = secondary.into_iter().map(Arc::new).collect();
        others.push(Arc::new(reflection));
        for (i, service) in others.iter().enumerate() {
            assert!(
                service.protocol_name != primary.protocol_name
                    && others[..i]
                        .iter()
                        .all(|o| o.protocol_name != service.protocol_name),
                "protocol names are unique on a server"
            );
        }
        Self {
            service: Arc::new(primary),
            others,
            config,
            request_id_prefix: format!("{:08x}", std::process::id()),
            admission: None,
            guard: None,
        }
    }

    /// Checks every request for a hosted protocol's method — the primary's, secondary ones' and
    /// reflection's — with `admit` before it runs. Framework-reserved methods (transport options)
    /// are not checked: a connection negotiates its transport before it can identify itself.
    pub fn with_admission(
        mut self,
        admit: impl Fn(&str, &str) -> Option<ErrorReport> + Send + Sync + 'static,
    ) -> Self {
        self.admission = Some(Arc::new(admit));
        self
    }

    /// Guards the connection with `guard` (`Some(refusal)` until the connection is admitted,
    /// typically by an authenticating method of the primary protocol). Until then a peer learns
    /// nothing from the framework: every request the framework itself would refuse (unreadable
    /// bytes, an unknown protocol or method, parameters that do not conform) is answered with the
    /// refusal alone and the connection ends; no reply names the server; requests are read
    /// within [`UNADMITTED_BODY_BYTES_MAX`]. Methods still answer for themselves.
    pub fn with_guard(
        mut self,
        guard: impl Fn() -> Option<ErrorReport> + Send + Sync + 'static,
    ) -> Self {
        self.guard = Some(Arc::new(guard));
        self
    }

    /// The service a request names, or the primary (which then refuses it).
    fn route(&self, protocol: Option<&str>) -> Arc<Service> {
        let named = self
            .others
            .iter()
            .find(|service| Some(service.protocol_name.as_str()) == protocol);
        Arc::clone(named.unwrap_or(&self.service))
    }

    /// The hosted protocol called `name` (primary, secondary or reflection), exactly.
    pub(crate) fn hosted(&self, name: &str) -> Option<&Arc<Service>> {
        std::iter::once(&self.service)
            .chain(&self.others)
            .find(|service| service.protocol_name == name)
    }

    /// Every hosted protocol's name, the primary first.
    pub(crate) fn protocol_names(&self) -> Vec<&str> {
        std::iter::once(&self.service)
            .chain(&self.others)
            .map(|service| service.protocol_name.as_str())
            .collect()
    }

    /// The admission check, if one is set.
    pub(crate) fn admission(&self) -> Option<&Arc<Admission>> {
        self.admission.as_ref()
    }

    /// The service served.
    pub fn service(&self) -> &Service {
        &self.service
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Serves requests on `connection` until the client closes it.
    pub fn serve(&self, connection: Connection) -> SessionEnd {
        let mut session = Session::new(self, connection);
        let end = loop {
            match session.serve_one() {
                Ok(true) => continue,
                Ok(false) => break SessionEnd::Closed,
                Err(error) if error.is_disconnect() => {
                    // A peer gone between requests reads as a clean end; one gone
                    // inside a message leaves a line saying where it stopped.
                    if matches!(error, ConnectionError::Wire(WireError::Truncated(_))) {
                        quiver_process::log_line!(
                            "quiver: connection {} ended inside a message: {error}",
                            session.link.peer()
                        );
                    }
                    break SessionEnd::Closed;
                }
                Err(error) => break SessionEnd::Failed(error),
            }
        };
        session.close();
        end
    }
}

/// Per-connection state.
struct Session<'s> {
    server: &'s Server,
    link: Link,
    out: GatherBuffer,
    shm: Option<ShmRoute>,
    /// Requests served on this connection; numbers generated request ids.
    requests_served: u64,
    /// Id of the request being served: the client's `vgi_rpc.request_id`, or one
    /// generated here, stamped on every log and error of the call.
    request_id: String,
    /// Set when the guard refused a request: the connection ends after the answer.
    refused: bool,
}

impl<'s> Session<'s> {
    fn new(server: &'s Server, connection: Connection) -> Self {
        Self {
            server,
            link: Link::new(connection),
            out: GatherBuffer::new(),
            shm: None,
            requests_served: 0,
            request_id: String::new(),
            refused: false,
        }
    }

    fn limits(&self) -> Limits {
        let limits = self.server.config.limits;
        if self.refusal().is_none() {
            return limits;
        }
        // A stranger's oversized body is not read past: its answer is the guard's, at once.
        Limits {
            body_bytes_max: limits.body_bytes_max.min(UNADMITTED_BODY_BYTES_MAX),
            skip_body_bytes_max: 0,
            ..limits
        }
    }

    /// The guard's refusal while the connection is not admitted.
    fn refusal(&self) -> Option<ErrorReport> {
        self.server.guard.as_ref().and_then(|guard| guard())
    }

    /// `report`, or the guard's refusal in its place (and the connection then ends).
    fn framework_error(&mut self, report: ErrorReport) -> ErrorReport {
        match self.refusal() {
            Some(refusal) => {
                self.refused = true;
                refusal
            }
            None => report,
        }
    }

    /// Serves one request; `Ok(false)` when the client closed the connection.
    fn serve_one(&mut self) -> Result<bool, ConnectionError> {
        let request = match self.read_request() {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(false),
            Err(RequestError::Fatal(error)) => {
                if !error.is_disconnect() {
                    let report =
                        ErrorReport::new("RpcError", format!("unreadable request: {error}"))
                            .with_code(ErrorCode::InvalidArgument)
                            .with_kind("malformed_request");
                    let report = self.framework_error(report);
                    let _ = self.write_error_stream(&empty_schema(), &report);
                    let _ = self.flush();
                }
                return Err(error);
            }
            Err(RequestError::Rejected(report)) => {
                let report = self.framework_error(report);
                self.write_error_stream(&empty_schema(), &report)?;
                self.flush()?;
                return Ok(!self.refused);
            }
        };
        self.dispatch(request)?;
        self.flush()?;
        Ok(!self.refused)
    }

    /// Attaches (or re-attaches) the segment a request advertises.
    fn refresh_shm(&mut self, metadata: &BatchMetadata) -> Result<(), ErrorReport> {
        let config = &self.server.config.shm;
        let Some(name) = metadata.get(keys::SHM_SEGMENT_NAME) else {
            return Ok(());
        };
        if config.disabled || !self.link.kind().is_local() {
            return Ok(());
        }
        if self
            .shm
            .as_ref()
            .is_some_and(|route| route.segment().name() == name)
        {
            return Ok(());
        }
        let size_bytes: u64 = metadata
            .get(keys::SHM_SEGMENT_SIZE)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                errors::rpc_error(
                    "shm segment advertised without a valid size",
                    ErrorCode::InvalidArgument,
                )
            })?;
        let segment = Segment::attach(name, size_bytes).map_err(|e| {
            errors::rpc_error(
                &format!("cannot attach shm segment {name}: {e}"),
                ErrorCode::FailedPrecondition,
            )
        })?;
        if config.debug {
            quiver_process::log_line!(
                "[quiver-shm] attached {} size={} data_size={}",
                segment.name(),
                segment.size_bytes(),
                segment.data_size_bytes()
            );
        }
        self.close_shm();
        self.shm = Some(ShmRoute::new(segment, config));
        Ok(())
    }

    /// Resolves a shm pointer batch; counts inbound batches.
    fn resolve_input(
        &mut self,
        batch: RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(RecordBatch, BatchMetadata), ConnectionError> {
        let role = classify(&batch, &metadata).map_err(WireError::Malformed)?;
        if let Some(route) = self.shm.as_mut() {
            route.stats.inbound_total += 1;
        }
        match role {
            BatchRole::ShmPointer { offset, length } => {
                let limits = self.limits();
                let Some(route) = self.shm.as_mut() else {
                    return Err(WireError::Malformed(
                        "shm pointer batch but no segment is attached".into(),
                    )
                    .into());
                };
                route.resolve(
                    &batch,
                    &metadata,
                    offset,
                    length,
                    limits,
                    Nullability::Enforced,
                )
            }
            BatchRole::External => Err(WireError::Malformed(
                "external-location batches are not supported".into(),
            )
            .into()),
            _ => Ok((batch, metadata)),
        }
    }

    fn dispatch(&mut self, request: Request) -> Result<(), ConnectionError> {
        self.requests_served += 1;
        self.request_id = match request.metadata.get(keys::REQUEST_ID) {
            Some(id) => id.to_string(),
            None => format!(
                "{}{:08x}",
                self.server.request_id_prefix, self.requests_served
            ),
        };
        let service = self.server.route(request.metadata.get(keys::PROTOCOL));
        if let Some(report) = self.check_protocol(&service, &request) {
            let report = self.framework_error(report);
            return self.write_error_stream(&empty_schema(), &report);
        }
        if is_reserved(&request.method) {
            return self.serve_reserved(&request);
        }
        if let Some(admit) = &self.server.admission {
            if let Some(report) = admit(&service.protocol_name, &request.method) {
                return self.write_error_stream(&empty_schema(), &report);
            }
        }
        let Some(method) = service.method(&request.method) else {
            let report = errors::method_not_found(&request.method, &service.protocol_name);
            let report = self.framework_error(report);
            return self.write_error_stream(&empty_schema(), &report);
        };
        let reply_schema = if method.is_unary() {
            method.result_schema.clone()
        } else {
            empty_schema()
        };
        let params = match conform::conform_params(method, request.batch) {
            Ok(batch) => Params::new(batch),
            Err(report) => {
                let report = self.framework_error(report);
                return self.write_error_stream(&reply_schema, &report);
            }
        };
        match &method.body {
            Body::Unary(body) => {
                let body = Arc::clone(body);
                self.serve_unary(method, &*body, &params, &request.metadata)
            }
            Body::Stream(body) => {
                let body = Arc::clone(body);
                self.serve_stream(method, &*body, &params, &request.metadata)
            }
        }
    }

    /// Reserved methods answered by the framework itself. `__transport_options__`
    /// tells a client this worker can use shared memory; its reply is a zero-row
    /// batch whose metadata carries the capabilities.
    fn serve_reserved(&mut self, request: &Request) -> Result<(), ConnectionError> {
        if request.method != TRANSPORT_OPTIONS {
            let report = errors::reserved_not_implemented(&request.method);
            let report = self.framework_error(report);
            return self.write_error_stream(&empty_schema(), &report);
        }
        let shm_usable = !self.server.config.shm.disabled && self.link.kind().is_local();
        let mut metadata = BatchMetadata::from_pairs([
            (
                keys::TRANSPORT_SHM,
                if shm_usable { "true" } else { "false" },
            ),
            (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        ]);
        if self.refusal().is_none() {
            metadata.insert(keys::SERVER_ID, self.server.config.server_id.as_str());
        }
        let schema = empty_schema();
        let mut writer = StreamWriter::begin(&schema, &mut self.out)?;
        writer.write(
            &RecordBatch::new_empty(schema.clone()),
            &metadata,
            &mut self.out,
        )?;
        writer.finish(&mut self.out);
        Ok(())
    }

    /// Returns the error for a request addressed to another protocol or version.
    fn check_protocol(&self, service: &Service, request: &Request) -> Option<ErrorReport> {
        if is_reserved(&request.method) {
            return None;
        }
        let Some(protocol) = request.metadata.get(keys::PROTOCOL) else {
            return Some(errors::protocol_not_specified(&request.method));
        };
        if protocol != service.protocol_name {
            return Some(errors::protocol_not_supported(
                protocol,
                &service.protocol_name,
            ));
        }
        version_gate(service, &request.metadata)
    }

    fn serve_unary(
        &mut self,
        method: &Method,
        body: &crate::method::UnaryBody,
        params: &Params,
        request_metadata: &BatchMetadata,
    ) -> Result<(), ConnectionError> {
        let mut ctx = CallContext::new(&method.name, request_metadata);
        let started = Instant::now();
        let outcome = body(params, &mut ctx);
        self.add_process_time(started);
        let logs = ctx.take_logs();
        let schema = method.result_schema.clone();
        let result = outcome.and_then(|value| conform::result_batch(&schema, value));
        let mut writer = StreamWriter::begin(&schema, &mut self.out)?;
        for record in &logs {
            self.write_record(&mut writer, record)?;
        }
        match result {
            Ok(batch) => {
                let (batch, metadata) = self.route_output(batch, BatchMetadata::new())?;
                writer.write(&batch, &metadata, &mut self.out)?;
            }
            Err(report) => {
                let report = report.with_synthesized_traceback(&origin(method, request_metadata));
                self.write_record(&mut writer, &report.to_record())?;
            }
        }
        writer.finish(&mut self.out);
        Ok(())
    }

    /// Writes a complete stream on `schema`: logs, then a batch or an error.
    fn write_stream_with_logs(
        &mut self,
        schema: &SchemaRef,
        logs: &[LogRecord],
        batch: Option<RecordBatch>,
        error: Option<&ErrorReport>,
    ) -> Result<(), ConnectionError> {
        let mut writer = StreamWriter::begin(schema, &mut self.out)?;
        for record in logs {
            self.write_record(&mut writer, record)?;
        }
        if let Some(batch) = batch {
            writer.write(&batch, &BatchMetadata::new(), &mut self.out)?;
        }
        if let Some(report) = error {
            self.write_record(&mut writer, &report.to_record())?;
        }
        writer.finish(&mut self.out);
        Ok(())
    }

    fn write_error_stream(
        &mut self,
        schema: &SchemaRef,
        report: &ErrorReport,
    ) -> Result<(), ConnectionError> {
        self.write_stream_with_logs(schema, &[], None, Some(report))
    }

    /// Writes a log or error record as a zero-row batch of the stream's schema.
    fn write_record(
        &mut self,
        writer: &mut StreamWriter,
        record: &LogRecord,
    ) -> Result<(), WireError> {
        let metadata = self.stamp(record.to_metadata());
        let empty = RecordBatch::new_empty(writer.schema().clone());
        writer.write(&empty, &metadata, &mut self.out)
    }

    /// Adds the server id and the request id to a log or error record's metadata (once admitted).
    fn stamp(&self, mut metadata: BatchMetadata) -> BatchMetadata {
        // Before admission nothing names the server (its id, or the pid in generated request ids).
        if self.refusal().is_some() {
            return metadata;
        }
        metadata.insert(keys::SERVER_ID, self.server.config.server_id.as_str());
        if !self.request_id.is_empty() {
            metadata.insert(keys::REQUEST_ID, self.request_id.as_str());
        }
        metadata
    }

    /// Sends a data batch through shm when the request advertised a segment and
    /// the batch qualifies.
    fn route_output(
        &mut self,
        batch: RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(RecordBatch, BatchMetadata), ConnectionError> {
        if let Some(route) = self.shm.as_mut() {
            if let Some(pointer) = route.try_write(&batch, &metadata)? {
                return Ok(pointer);
            }
        }
        Ok((batch, metadata))
    }

    fn add_process_time(&mut self, started: Instant) {
        if let Some(route) = self.shm.as_mut() {
            route.add_process_time(started.elapsed());
        }
    }

    /// Writes everything gathered so far in one call.
    fn flush(&mut self) -> Result<(), WireError> {
        if !self.out.is_empty() {
            self.out.write_to(self.link.writer())?;
        }
        Ok(())
    }

    fn close_shm(&mut self) {
        if let Some(route) = self.shm.take() {
            if route.debug() {
                quiver_process::log_line!("{}", route.stats.summary(self.link.peer(), "worker"));
            }
        }
    }

    fn close(&mut self) {
        let _ = self.flush();
        self.close_shm();
    }
}

/// The error for a request whose protocol version differs from `service`'s in major.minor.
pub(crate) fn version_gate(service: &Service, metadata: &BatchMetadata) -> Option<ErrorReport> {
    // An unversioned protocol is not gated; reflection is one, since a
    // client whose version mismatches calls it to learn what mismatched.
    let gated = !service.protocol_version.is_empty();
    let version = metadata.get(keys::PROTOCOL_VERSION).filter(|_| gated)?;
    if major_minor(version) != major_minor(&service.protocol_version) {
        return Some(errors::protocol_version_mismatch(
            &service.protocol_name,
            version,
            &service.protocol_version,
        ));
    }
    None
}

/// The capability handshake method, answered before routing.
const TRANSPORT_OPTIONS: &str = "__transport_options__";

/// `<protocol>/<method>`: where a method's error was raised, for its traceback.
pub(crate) fn origin(method: &Method, request_metadata: &BatchMetadata) -> String {
    let protocol = request_metadata.get(keys::PROTOCOL).unwrap_or("");
    format!("{protocol}/{}", method.name)
}

/// `__name__` methods belong to the framework, not to the service.
pub(crate) fn is_reserved(method: &str) -> bool {
    method.len() > 4 && method.starts_with("__") && method.ends_with("__")
}
