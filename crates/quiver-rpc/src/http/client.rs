//! The client's HTTP connection: one kept-alive HTTP/1.1 connection to a worker's base URL
//! (`http://host:port/prefix` or `https://...`), one request at a time, as a client's calls are.
//!
//! hyper's client connection runs on a current-thread tokio runtime this peer owns, driven by
//! the calling thread, so the caller's interrupt check and deadline (`quiver_transport::fd_io`)
//! stop a request the way they stop a read on a pipe. A connection the server closed while idle
//! is reopened once, transparently, when the failure shows before the request was sent.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use quiver_transport::fd_io::{stop_reason, Stopped};
use tokio_rustls::rustls;
use tokio_rustls::TlsConnector;

use super::app::{ACCEPT_MAX_RESPONSE_BYTES, ARROW_STREAM, TURN_BATCHES};
use super::codec;

/// How often a waiting request looks at the caller's interrupt check and deadline.
const CHECK_SLICE: Duration = Duration::from_millis(50);
/// A connection idle longer than this is not reused: servers close idle keep-alive connections
/// (quiver's after its 60 s head timeout, nginx after 75 s, waitress after 120 s), and a request
/// racing that close could have reached the server or not, so it cannot be sent again.
const IDLE_REUSE_MAX: Duration = Duration::from_secs(20);
/// The default hard limit on one response body.
pub const MAX_RESPONSE_BYTES_DEFAULT: usize = 1 << 30;
/// The default cap asked of the server: half the hard limit, so that a producer's turn cut at
/// the cap plus the one batch that passed it still fits, and a server without a cap of its own
/// answers a too large result with a named error rather than a body this client must refuse
/// mid-read. It does not size a producer's turns: a quiver server keeps those far smaller
/// (`TURN_BYTES_DEFAULT`) unless its operator sets a cap.
pub const ACCEPT_MAX_RESPONSE_BYTES_DEFAULT: u64 = (MAX_RESPONSE_BYTES_DEFAULT / 2) as u64;

/// How a client reaches an HTTP worker.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Sent as `Authorization: Bearer <token>` on every request.
    pub bearer: Option<String>,
    /// PEM file of the certificate authorities an `https://` server must chain to; the system's
    /// roots when `None`.
    pub ca_file: Option<PathBuf>,
    /// Longest wait for the TCP connection and TLS handshake.
    pub connect_timeout: Duration,
    /// Longest wait for one response, head and body (the caller's own deadline may be shorter).
    pub response_timeout: Duration,
    /// Largest response accepted, compressed and decoded alike.
    pub max_response_bytes: usize,
    /// Asks the server to keep each response under this many bytes
    /// (`VGI-Accept-Max-Response-Bytes`): a larger answer comes back as a
    /// `ResponseTooLargeError`, and a producer's turn ends there (passing it by its last batch at
    /// most); `None`: the server's own cap alone.
    pub accept_max_response_bytes: Option<u64>,
    /// Whether a producer's turn may answer many batches in one response (sends
    /// [`TURN_BATCHES`] with the value `many`; a quiver server then fills each turn up to its budget, and a
    /// server that does not know the header answers one batch a turn). A tick answered by a
    /// batch already received sends nothing, so its metadata reaches no step.
    pub many_batch_turns: bool,
    /// Whether responses may come compressed (`Accept-Encoding: zstd, gzip`); off by default,
    /// the fastest choice on a local network.
    pub compression: bool,
    /// Further headers sent on every request.
    pub headers: Vec<(String, String)>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bearer: None,
            ca_file: None,
            connect_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(3600),
            max_response_bytes: MAX_RESPONSE_BYTES_DEFAULT,
            accept_max_response_bytes: Some(ACCEPT_MAX_RESPONSE_BYTES_DEFAULT),
            many_batch_turns: true,
            compression: false,
            headers: Vec::new(),
        }
    }
}

/// One response: status, headers (lower-case names), the decoded body.
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// Headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The body, its content coding removed.
    pub body: Vec<u8>,
}

impl HttpReply {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body is an Arrow IPC stream.
    pub fn is_arrow(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.split(';').next().unwrap_or("").trim() == ARROW_STREAM)
    }
}

/// A connection to one HTTP worker.
pub struct HttpPeer {
    tls: Option<(TlsConnector, rustls_pki_types::ServerName<'static>)>,
    host: String,
    port: u16,
    host_header: HeaderValue,
    base_path: String,
    options: HttpOptions,
    runtime: tokio::runtime::Runtime,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// When the kept-alive connection last finished a request.
    last_used: Instant,
    description: String,
}

impl HttpPeer {
    /// A peer for `url`; nothing is dialled until the first request.
    pub fn new(url: &str, options: HttpOptions) -> io::Result<HttpPeer> {
        let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid(format!("not an http(s) URL: {url:?}")))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            _ => return Err(invalid(format!("not an http(s) URL: {url:?}"))),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let (host, port) = split_authority(authority, if https { 443 } else { 80 })
            .ok_or_else(|| invalid(format!("no host in URL {url:?}")))?;
        let tls = if https {
            let name = rustls_pki_types::ServerName::try_from(host.clone())
                .map_err(|e| invalid(format!("TLS server name {host:?}: {e}")))?;
            Some((tls_connector(options.ca_file.as_ref())?, name))
        } else {
            None
        };
        let host_header = HeaderValue::from_str(authority)
            .map_err(|_| invalid(format!("host {authority:?} is not a header value")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(HttpPeer {
            tls,
            host,
            port,
            host_header,
            base_path: path.trim_end_matches('/').to_string(),
            options,
            runtime,
            sender: None,
            last_used: Instant::now(),
            description: url.to_string(),
        })
    }

    /// The URL, for errors and logs.
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// Sends one request (`path` under the URL's base path) and reads its whole response.
    pub fn request(&mut self, verb: &str, path: &str, body: Vec<u8>) -> io::Result<HttpReply> {
        let request = self.build(verb, path, Bytes::from(body))?;
        if self.last_used.elapsed() > IDLE_REUSE_MAX {
            self.sender = None;
        }
        let reused = self.sender.is_some();
        let answered = match self.exchange(request.clone_for_retry()) {
            Err(Failure::NotSent(_)) if reused => {
                // A kept-alive connection the server closed while idle: dial once more.
                self.sender = None;
                self.exchange(request).map_err(Failure::into_io)
            }
            other => other.map_err(Failure::into_io),
        };
        self.last_used = Instant::now();
        answered
    }

    /// Sends `body` (an Arrow IPC stream) with `POST`.
    pub fn post(&mut self, path: &str, body: Vec<u8>) -> io::Result<HttpReply> {
        self.request("POST", path, body)
    }

    fn build(&self, verb: &str, path: &str, body: Bytes) -> io::Result<Prepared> {
        let uri = format!("{}{path}", self.base_path);
        let mut builder = Request::builder()
            .method(verb)
            .uri(if uri.is_empty() { "/".to_string() } else { uri })
            .header(HOST, self.host_header.clone())
            .header("user-agent", "quiver-http/0.1");
        if verb == "POST" {
            builder = builder.header(CONTENT_TYPE, ARROW_STREAM);
        }
        if self.options.compression {
            builder = builder.header(ACCEPT_ENCODING, "zstd, gzip");
        }
        if self.options.many_batch_turns {
            builder = builder.header(TURN_BATCHES, "many");
        }
        if let Some(max) = self.options.accept_max_response_bytes {
            builder = builder.header(ACCEPT_MAX_RESPONSE_BYTES, max.to_string());
        }
        for (name, value) in &self.options.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(token) = &self.options.bearer {
            builder = builder.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = builder
            .body(Full::new(body.clone()))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(Prepared { request, body })
    }

    fn exchange(&mut self, prepared: Prepared) -> Result<HttpReply, Failure> {
        let started = Instant::now();
        let deadline = started + self.options.response_timeout;
        if self.sender.is_none() {
            let sender = self.dial().map_err(Failure::Sent)?;
            self.sender = Some(sender);
        }
        let max = self.options.max_response_bytes;
        let sender = self.sender.as_mut().expect("dialled above");
        let send = async {
            sender.ready().await.map_err(Failure::not_sent)?;
            let response = sender.send_request(prepared.request).await.map_err(|e| {
                if e.is_canceled() || (e.is_closed() && !e.is_incomplete_message()) {
                    Failure::not_sent(e)
                } else {
                    Failure::Sent(io::Error::new(io::ErrorKind::ConnectionAborted, e))
                }
            })?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, max).collect().await.map_err(|e| {
                Failure::Sent(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("response body: {e}"),
                ))
            })?;
            Ok::<_, Failure>((parts, body.to_bytes()))
        };
        let outcome = self.runtime.block_on(watch(send, deadline));
        let (parts, body) = match outcome {
            Ok(done) => done,
            Err(failure) => {
                self.sender = None;
                return Err(failure);
            }
        };
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_string(), value.to_str().ok()?.to_string()))
            })
            .collect();
        let mut reply = HttpReply {
            status: parts.status.as_u16(),
            headers,
            body: Vec::new(),
        };
        let coding = reply
            .header(codec::CONTENT_ENCODING)
            .or_else(|| reply.header(codec::VGI_CONTENT_ENCODING))
            .map(str::to_string);
        // A body that arrived as one piece converts to a Vec without a copy.
        let body = Vec::from(body);
        reply.body = match coding {
            Some(coding) => codec::decode(body, &coding, max)
                .map_err(|e| Failure::Sent(io::Error::new(io::ErrorKind::InvalidData, e)))?,
            None => body,
        };
        Ok(reply)
    }

    fn dial(&mut self) -> io::Result<SendRequest<Full<Bytes>>> {
        let address = (self.host.clone(), self.port);
        let tls = self.tls.clone();
        let deadline = Instant::now() + self.options.connect_timeout;
        let runtime = &self.runtime;
        let dial = async move {
            let socket = tokio::net::TcpStream::connect(address)
                .await
                .map_err(Failure::Sent)?;
            let _ = socket.set_nodelay(true);
            let handshake = match tls {
                None => spawn_connection(TokioIo::new(socket)).await,
                Some((connector, name)) => {
                    let stream = connector
                        .connect(name, socket)
                        .await
                        .map_err(Failure::Sent)?;
                    spawn_connection(TokioIo::new(stream)).await
                }
            };
            handshake.map_err(Failure::Sent)
        };
        runtime.block_on(watch(dial, deadline)).map_err(|failure| {
            let error = failure.into_io();
            io::Error::new(
                error.kind(),
                format!("connect {}: {error}", self.description),
            )
        })
    }
}

/// A request and the body it carries, so it can be rebuilt for a second attempt.
struct Prepared {
    request: Request<Full<Bytes>>,
    body: Bytes,
}

impl Prepared {
    fn clone_for_retry(&self) -> Prepared {
        let mut builder = Request::builder()
            .method(self.request.method().clone())
            .uri(self.request.uri().clone());
        for (name, value) in self.request.headers() {
            builder = builder.header(name, value);
        }
        Prepared {
            request: builder
                .body(Full::new(self.body.clone()))
                .expect("a request that was valid once"),
            body: self.body.clone(),
        }
    }
}

/// How a request failed: before it left (safe to send again) or after.
enum Failure {
    NotSent(io::Error),
    Sent(io::Error),
}

impl Failure {
    fn not_sent(error: hyper::Error) -> Failure {
        Failure::NotSent(io::Error::new(io::ErrorKind::ConnectionReset, error))
    }

    fn into_io(self) -> io::Error {
        match self {
            Failure::NotSent(error) | Failure::Sent(error) => error,
        }
    }
}

/// Runs `work`, stopping it when the caller's interrupt check fires, its deadline passes, or
/// `deadline` does.
async fn watch<T>(
    work: impl std::future::Future<Output = Result<T, Failure>>,
    deadline: Instant,
) -> Result<T, Failure> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = tokio::time::sleep(CHECK_SLICE) => {
                let stopped = stop_reason().or_else(|| (Instant::now() >= deadline).then_some(Stopped::TimedOut));
                if let Some(stopped) = stopped {
                    return Err(Failure::Sent(io::Error::other(stopped)));
                }
            }
        }
    }
}

async fn spawn_connection<I>(io: TokioIo<I>) -> io::Result<SendRequest<Full<Bytes>>>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| io::Error::new(io::ErrorKind::ConnectionAborted, e))?;
    // The connection task lives on this peer's runtime; it ends when the sender drops.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

fn tls_connector(ca_file: Option<&PathBuf>) -> io::Result<TlsConnector> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("CA file {}: {e}", path.display()),
                    )
                })?;
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| io::Error::other(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// `host` and `port` of an authority (`host`, `host:port`, `[v6]:port`).
fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next()?;
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default_port,
        };
        return Some((host.to_string(), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (authority, default_port),
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}
