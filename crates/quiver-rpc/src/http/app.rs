//! One HTTP request in, one response out: vgi-rpc's routes over a [`Server`]'s protocols.
//!
//! | route | what |
//! |---|---|
//! | `POST {prefix}/{protocol}/{method}` | unary call; body = the request stream |
//! | `POST {prefix}/{protocol}/{method}/init` | opens a stream call (runs a producer's first turn) |
//! | `POST {prefix}/{protocol}/{method}/exchange` | one more turn, or a cancel |
//! | `GET / HEAD / OPTIONS {prefix}/health` | health JSON / the capability headers |
//!
//! Status codes follow vgi-rpc: 400 malformed, 404 unknown protocol or method, 413 too large,
//! 415 wrong content type or coding, and a method's own error as 200 with `X-VGI-RPC-Error:
//! true`; every refusal still carries an Arrow error body. A stream's output ends each response
//! with its sealed cursor (see [`super::streams`]): on an exchange's data batch, or as a zero-row
//! batch after a producer's.
//!
//! A turn is one step, as vgi-rpc 0.52's lockstep wants it (its client refuses a producer
//! response of two data batches): one tick or input batch, one answer. A client that sends
//! [`TURN_BATCHES`] with the value `many` (quiver's) gets producer turns of many batches, as
//! vgi-rpc 0.42's server made them: the producer steps into the one response stream until it
//! finishes, or the body reaches the turn's budget ([`HttpConfig::turn_bytes`], lowered by the
//! response caps), or the turn has run [`TURN_TIME_MAX`]; then the cursor follows and the client
//! resumes with `/exchange`. Such a turn's cap is soft (passed by its last batch at most); any
//! other answer over the cap (the server's, or the client's `VGI-Accept-Max-Response-Bytes`) is
//! replaced by a `ResponseTooLargeError` and ends the stream.
//! Transport-independent and synchronous: `server.rs` runs it on a blocking thread per request.

use std::sync::Arc;
use std::time::Duration;

use quiver_wire::{empty_schema, keys, BatchMetadata, ErrorCode, ErrorReport};

use super::codec;
use super::output::{write_stream, Stamp};
use super::streams::StreamTable;
use super::HttpConfig;
use crate::conform;
use crate::context::CallContext;
use crate::errors;
use crate::method::{Body, Method};
use crate::params::Params;
use crate::server::{is_reserved, origin, Server};
use crate::service::Service;

mod request;
mod stream_calls;

/// The media type of every Arrow body.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";
/// Marks a response whose body is a method's error.
pub const RPC_ERROR_HEADER: &str = "X-VGI-RPC-Error";
/// The client's cap on one response's bytes.
pub const ACCEPT_MAX_RESPONSE_BYTES: &str = "VGI-Accept-Max-Response-Bytes";
/// A client that reads producer turns of many batches sends this header with the value `many`;
/// a server that makes them advertises it with the same value.
pub const TURN_BATCHES: &str = "Quiver-Turn-Batches";
/// The smallest response cap a server or client may set (vgi-rpc's rule).
pub const RESPONSE_BYTES_MIN: u64 = 65_536;
const BUDGET_BYTES_MAX: u64 = (1 << 53) - 1;
/// The default of [`HttpConfig::turn_bytes`], a producer turn's body budget. Large enough to
/// spread a request's fixed cost (the round trip, the token seal, the state snapshot) over
/// hundreds of typical batches, small enough that the body buffered on either end (this server
/// builds a turn in memory; the client reads it whole) and a turn replayed after a replica's
/// failure stay small.
pub const TURN_BYTES_DEFAULT: u64 = 8 << 20;
/// Longest a producer turn keeps stepping: a slow producer still hands the client its rows
/// about once a second, and a client that wants to stop (an interrupted query) waits no longer.
pub const TURN_TIME_MAX: Duration = Duration::from_secs(1);
const REQUEST_ID_CHARS_MAX: usize = 1024;
const TEXT: &str = "text/plain; charset=utf-8";

/// A request as the app reads it (header names lower-case).
pub(crate) struct AppRequest {
    pub verb: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl AppRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response: status, content type, further headers, body.
pub(crate) struct AppResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A request refused before any method ran.
struct Refused(u16, ErrorReport);

/// What one call or turn produced, before the cap is applied.
pub(super) struct Reply {
    pub(super) body: Vec<u8>,
    pub(super) failed: bool,
    /// The call this reply continues; its held state is dropped if the reply breaks the cap.
    pub(super) parked: Option<[u8; 16]>,
    /// A many-batch producer turn: its budget ended it, so a body past the cap by its last batch
    /// stands.
    pub(super) soft_cap: bool,
    pub(super) request_id: String,
}

/// The app: a server's protocols behind vgi-rpc's routes.
pub(crate) struct App {
    server: Arc<Server>,
    config: HttpConfig,
    streams: Arc<StreamTable>,
    capability_headers: Vec<(String, String)>,
    health: Vec<u8>,
}

impl App {
    pub fn new(server: Arc<Server>, config: HttpConfig) -> App {
        let streams = StreamTable::new(
            config.token_key.clone(),
            config.stream_ttl,
            config.held_streams_max,
        );
        let mut capability_headers = vec![
            (
                "VGI-Accept-Max-Response-Bytes-Support".into(),
                "true".into(),
            ),
            ("VGI-Externalization-Enabled".into(), "false".into()),
            (TURN_BATCHES.into(), "many".into()),
            (
                "VGI-Supported-Encodings".into(),
                config.response_codings.join(", "),
            ),
        ];
        if let Some(max) = config.max_response_bytes {
            capability_headers.push(("VGI-Max-Response-Bytes".into(), max.to_string()));
        }
        capability_headers.push((
            "VGI-Max-Request-Bytes".into(),
            config.max_request_bytes.to_string(),
        ));
        let health = serde_json::json!({
            "status": "ok",
            "server_id": server.config().server_id,
            "protocol": server.service().protocol_name,
        })
        .to_string()
        .into_bytes();
        App {
            server,
            config,
            streams,
            capability_headers,
            health,
        }
    }

    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// Answers one request: routing, the call, the cap, the coding, the common headers.
    pub fn handle(&self, request: AppRequest) -> AppResponse {
        let inbound = request
            .header("x-request-id")
            .map(str::trim)
            .filter(|id| !id.is_empty() && id.len() <= REQUEST_ID_CHARS_MAX)
            .map(str::to_string);
        let mut response = self.route(&request, inbound.as_deref());
        let ran_under = take_header(&mut response.headers, "x-request-id");
        let request_id = inbound.or(ran_under).unwrap_or_else(mint_request_id);
        response
            .headers
            .extend(self.capability_headers.iter().cloned());
        response.headers.push(("X-Request-ID".into(), request_id));
        if response.content_type == ARROW_STREAM && !response.body.is_empty() {
            let chosen = codec::negotiate(
                request.header("accept-encoding"),
                request.header("x-vgi-accept-encoding"),
                &self.config.response_codings,
            );
            if let Some((coding, header)) = chosen {
                response.body = codec::encode(&response.body, coding);
                response.headers.push((header.into(), coding.into()));
            }
        }
        response
    }

    fn route(&self, request: &AppRequest, inbound_id: Option<&str>) -> AppResponse {
        let Some(rest) = request.path.strip_prefix(&self.config.prefix) else {
            return text(404, "not found");
        };
        let verb = request.verb.as_str();
        if rest == "/health" {
            return self.health(verb);
        }
        if rest.is_empty() || rest == "/" {
            let names = self.server.protocol_names().join(", ");
            return text(200, &format!("quiver HTTP endpoint serving {names}\n"));
        }
        let parts: Vec<&str> = rest[1..].split('/').collect();
        if verb == "OPTIONS" {
            return with_allow(bodiless(204), "POST, OPTIONS");
        }
        if parts.len() == 1 && is_reserved(parts[0]) && verb == "POST" {
            return self.refusal(
                Refused(404, errors::reserved_not_implemented(parts[0])),
                inbound_id,
            );
        }
        let kind = match parts.as_slice() {
            [_, _] => "unary",
            [_, _, kind @ ("init" | "exchange")] => kind,
            _ => return text(404, "not found"),
        };
        if verb != "POST" {
            return if self.server.hosted(parts[0]).is_some() {
                with_allow(text(405, "RPC endpoints answer POST"), "POST")
            } else {
                text(404, "not found")
            };
        }
        let budget = match self.budget(request) {
            Ok(budget) => budget,
            Err(refused) => return self.refusal(refused, inbound_id),
        };
        let many = request.header(&TURN_BATCHES.to_ascii_lowercase()) == Some("many");
        let turn_bytes = self.config.turn_bytes;
        let turn = many.then(|| budget.map_or(turn_bytes, |cap| cap.min(turn_bytes)));
        let outcome = self.post(request, parts[0], parts[1], kind, inbound_id, turn);
        match outcome {
            Ok((method, reply)) => self.capped(reply, budget, &method),
            Err(refused) => self.refusal(refused, inbound_id),
        }
    }

    /// `/health`: the health document to GET and HEAD, an empty answer to OPTIONS.
    fn health(&self, verb: &str) -> AppResponse {
        match verb {
            "GET" | "HEAD" => AppResponse {
                status: 200,
                content_type: "application/json",
                headers: Vec::new(),
                body: self.health.clone(),
            },
            "OPTIONS" => bodiless(200),
            _ => with_allow(
                text(405, "health answers GET, HEAD and OPTIONS"),
                "GET, HEAD, OPTIONS",
            ),
        }
    }

    fn post(
        &self,
        request: &AppRequest,
        protocol: &str,
        method_name: &str,
        kind: &str,
        inbound_id: Option<&str>,
        turn_bytes: Option<u64>,
    ) -> Result<(String, Reply), Refused> {
        let service = self.server.hosted(protocol).ok_or_else(|| {
            let hosted: Vec<String> = self
                .server
                .protocol_names()
                .iter()
                .map(|n| format!("'{n}'"))
                .collect();
            Refused(
                404,
                ErrorReport::new(
                    "ProtocolNotSupportedError",
                    format!(
                        "This server does not host protocol '{protocol}'. Hosted: [{}].",
                        hosted.join(", ")
                    ),
                )
                .with_code(ErrorCode::Unimplemented)
                .with_kind("protocol_not_supported"),
            )
        })?;
        if let Some(admit) = self.server.admission() {
            if let Some(report) = admit(&service.protocol_name, method_name) {
                return Err(Refused(403, report));
            }
        }
        let method = service
            .method(method_name)
            .ok_or_else(|| Refused(404, errors::method_not_found(method_name, protocol)))?;
        let content_type = request.header("content-type");
        if content_type.map(|t| t.split(';').next().unwrap_or("").trim()) != Some(ARROW_STREAM) {
            let got = content_type.map_or("None".to_string(), |t| format!("'{t}'"));
            return Err(Refused(
                415,
                ErrorReport::new(
                    "TypeError",
                    format!("Expected Content-Type: '{ARROW_STREAM}', got {got}"),
                ),
            ));
        }
        let body = self.body(request)?;
        let binding = format!("{protocol}/{method_name}");
        let reply = if kind == "exchange" {
            if method.is_unary() {
                return Err(Refused(400, misrouted(method_name, false)));
            }
            self.exchange(&binding, method, body, turn_bytes)?
        } else {
            if method.is_unary() == (kind == "init") {
                return Err(Refused(400, misrouted(method_name, !method.is_unary())));
            }
            self.call(service, &binding, method, body, inbound_id, turn_bytes)?
        };
        Ok((method_name.to_string(), reply))
    }

    fn call(
        &self,
        service: &Service,
        binding: &str,
        method: &Method,
        body: Vec<u8>,
        inbound_id: Option<&str>,
        turn_bytes: Option<u64>,
    ) -> Result<Reply, Refused> {
        let (batch, metadata) = self.call_batch(service, method, body)?;
        let params = conform::conform_params(method, batch)
            .map(Params::new)
            .map_err(|report| Refused(400, report))?;
        let request_id = inbound_id
            .map(str::to_string)
            .or_else(|| metadata.get(keys::REQUEST_ID).map(str::to_string))
            .unwrap_or_else(mint_request_id);
        let mut metadata = metadata;
        metadata.insert(keys::PROTOCOL, service.protocol_name.as_str());
        let stamp = Stamp::new(&self.server, &request_id);
        match &method.body {
            Body::Unary(body) => Ok(self.unary(method, body, &params, &metadata, stamp)),
            Body::Stream(body) => {
                Ok(self.open(binding, method, body, &params, &metadata, stamp, turn_bytes))
            }
        }
    }

    fn unary(
        &self,
        method: &Method,
        body: &Arc<crate::method::UnaryBody>,
        params: &Params,
        metadata: &BatchMetadata,
        stamp: Stamp,
    ) -> Reply {
        let mut ctx = CallContext::new(&method.name, metadata);
        let outcome = body(params, &mut ctx);
        let logs = ctx.take_logs();
        let schema = method.result_schema.clone();
        let result = outcome
            .and_then(|value| conform::result_batch(&schema, value))
            .map_err(|report| report.with_synthesized_traceback(&origin(method, metadata)));
        let mut out = Vec::new();
        let failed = result.is_err();
        write_stream(
            &mut out,
            &schema,
            &stamp,
            &logs,
            |writer, out| match result {
                Ok(batch) => writer.write(&batch, &BatchMetadata::new(), out),
                Err(report) => stamp.record(writer, out, &report.to_record()),
            },
        );
        stamp.reply(out, failed, None)
    }

    // -- answers ----------------------------------------------------------------------------

    /// The reply, unless it breaks the response cap: then a `ResponseTooLargeError`, and the
    /// stream it continued ends.
    fn capped(&self, reply: Reply, budget: Option<u64>, method: &str) -> AppResponse {
        let size = reply.body.len() as u64;
        let mut headers = vec![("x-request-id".to_string(), reply.request_id.clone())];
        let over = |budget: &u64| size > *budget && !reply.failed && !reply.soft_cap;
        if let Some(budget) = budget.filter(over) {
            if let Some(call_id) = reply.parked {
                self.streams.discard(&call_id);
            }
            let report = ErrorReport::new(
                "ResponseTooLargeError",
                format!("HTTP body exceeds max_response_bytes ({size} > {budget}) for method '{method}'"),
            )
            .with_code(ErrorCode::ResourceExhausted);
            let stamp = Stamp::new(&self.server, &reply.request_id);
            let mut out = Vec::new();
            write_stream(&mut out, &empty_schema(), &stamp, &[], |writer, out| {
                stamp.record(writer, out, &report.to_record())
            });
            headers.push((RPC_ERROR_HEADER.into(), "true".into()));
            return arrow(200, headers, out);
        }
        if reply.failed {
            headers.push((RPC_ERROR_HEADER.into(), "true".into()));
        }
        arrow(200, headers, reply.body)
    }

    /// An error body for a request no method ran for.
    fn refusal(&self, refused: Refused, inbound_id: Option<&str>) -> AppResponse {
        let request_id = inbound_id.map_or_else(mint_request_id, str::to_string);
        let stamp = Stamp::new(&self.server, &request_id);
        let mut out = Vec::new();
        write_stream(&mut out, &empty_schema(), &stamp, &[], |writer, out| {
            stamp.record(writer, out, &refused.1.to_record())
        });
        let mut headers = vec![("x-request-id".to_string(), request_id)];
        if refused.0 >= 500 {
            headers.push((RPC_ERROR_HEADER.into(), "true".into()));
        }
        arrow(refused.0, headers, out)
    }
}

fn misrouted(method: &str, is_stream: bool) -> ErrorReport {
    if is_stream {
        ErrorReport::new(
            "TypeError",
            format!("Stream method '{method}' requires /init and /exchange endpoints"),
        )
    } else {
        ErrorReport::new("TypeError", format!("Method '{method}' is not a stream"))
    }
}

fn malformed(detail: String) -> ErrorReport {
    ErrorReport::new("ArrowInvalid", detail).with_code(ErrorCode::InvalidArgument)
}

fn too_large(size: usize, limit: usize) -> ErrorReport {
    ErrorReport::new(
        "RequestTooLarge",
        format!("request body of {size} bytes exceeds max_request_bytes={limit}"),
    )
    .with_code(ErrorCode::ResourceExhausted)
}

fn mint_request_id() -> String {
    quiver_secret::random::hex(8)
}

fn take_header(headers: &mut Vec<(String, String)>, name: &str) -> Option<String> {
    let at = headers.iter().position(|(n, _)| n == name)?;
    Some(headers.remove(at).1)
}

fn text(status: u16, body: &str) -> AppResponse {
    AppResponse {
        status,
        content_type: TEXT,
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
    }
}

/// An answer with no body (to OPTIONS).
fn bodiless(status: u16) -> AppResponse {
    AppResponse {
        status,
        content_type: "text/plain",
        headers: Vec::new(),
        body: Vec::new(),
    }
}

fn with_allow(mut response: AppResponse, allow: &str) -> AppResponse {
    response.headers.push(("Allow".into(), allow.into()));
    response
}

fn arrow(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> AppResponse {
    AppResponse {
        status,
        content_type: ARROW_STREAM,
        headers,
        body,
    }
}
