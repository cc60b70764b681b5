//! Serving the app over HTTP/1.1 with hyper on tokio: TLS through rustls, bearer tokens, and a
//! limit or a deadline on everything a peer controls (connections, head, body, handshake).
//!
//! Methods are synchronous and may block, so each request runs on tokio's blocking pool; the
//! async side only moves bytes. A bearer token, when configured, is checked in constant time
//! (`quiver_secret::Secret`) before anything else, and a refusal reveals nothing about the server.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use super::app::{App, AppRequest};
use super::HttpConfig;
use crate::server::Server;
use quiver_process::{announce, log_line, Announcement, StopSignal};

/// A running HTTP server: its address, and a handle that stops it.
pub struct HttpServer {
    address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpServer {
    /// Binds `address` and serves `server` on a thread of its own until [`HttpServer::stop`] or
    /// drop (for embedding and tests; a worker's main uses [`serve_http`]).
    pub fn start(server: Arc<Server>, address: &str, config: HttpConfig) -> io::Result<HttpServer> {
        let runtime = runtime()?;
        let listener = runtime.block_on(TcpListener::bind(address))?;
        let bound = listener.local_addr()?;
        let acceptor = tls_acceptor(&config)?;
        let app = Arc::new(App::new(server, config));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("quiver http".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, app, acceptor, async {
                    let _ = stopped.await;
                }))
            })?;
        Ok(HttpServer {
            address: bound,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The base URL clients dial (`http://` or, with TLS, `https://`).
    pub fn url(&self, tls: bool) -> String {
        let scheme = if tls { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// Stops accepting and waits for the serving thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shut();
    }
}

/// Binds `address`, prints `PORT:<port>` on stdout, and serves `server` until `SIGTERM`.
pub fn serve_http(server: Arc<Server>, address: &str, config: HttpConfig) -> io::Result<()> {
    let stop = StopSignal::install()?;
    let runtime = runtime()?;
    let listener = runtime.block_on(TcpListener::bind(address))?;
    let acceptor = tls_acceptor(&config)?;
    announce(&Announcement::Port(listener.local_addr()?.port()))?;
    let app = Arc::new(App::new(server, config));
    runtime.block_on(accept_loop(listener, app, acceptor, stop_requested(stop)));
    // Requests still running on the blocking pool finish or are abandoned with the runtime.
    runtime.shutdown_timeout(crate::serve::STOP_GRACE);
    Ok(())
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(256)
        .thread_name("quiver-http")
        .enable_all()
        .build()
}

/// Resolves once `SIGTERM` asks the process to stop (never without a stop signal).
async fn stop_requested(stop: Option<StopSignal>) {
    let Some(stop) = stop else {
        return std::future::pending().await;
    };
    let fd: RawFd = stop.as_raw_fd();
    let _ = tokio::task::spawn_blocking(move || loop {
        if stop.requested() {
            return;
        }
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one pollfd we own.
        let _ = unsafe { libc::poll(&mut poll, 1, 1000) };
    })
    .await;
}

fn tls_acceptor(config: &HttpConfig) -> io::Result<Option<TlsAcceptor>> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let Some((cert, key)) = &config.tls else {
        return Ok(None);
    };
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(&format!("TLS certificate {}", cert.display()), &e))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| invalid(&format!("TLS key {}", key.display()), &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("TLS protocol versions", &e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| invalid("TLS certificate and key", &e))?;
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(tls))))
}

async fn accept_loop(
    listener: TcpListener,
    app: Arc<App>,
    tls: Option<TlsAcceptor>,
    stop: impl std::future::Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(app.config().connections_max));
    tokio::pin!(stop);
    loop {
        let slot = tokio::select! {
            () = &mut stop => return,
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let (socket, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, an aborted handshake: keep serving the others.
                log_line!("quiver: http accept failed: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let app = Arc::clone(&app);
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let deadline = app.config().body_timeout;
            match tls {
                None => serve_connection(TokioIo::new(socket), app).await,
                Some(acceptor) => {
                    match tokio::time::timeout(deadline, acceptor.accept(socket)).await {
                        Ok(Ok(stream)) => serve_connection(TokioIo::new(stream), app).await,
                        Ok(Err(error)) => {
                            log_line!("quiver: TLS handshake with {peer} failed: {error}")
                        }
                        Err(_) => log_line!("quiver: TLS handshake with {peer} timed out"),
                    }
                }
            }
        });
    }
}

async fn serve_connection<I>(io: TokioIo<I>, app: Arc<App>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let header_timeout = app.config().header_timeout;
    let service = hyper::service::service_fn(move |request| {
        let app = Arc::clone(&app);
        async move { Ok::<_, Infallible>(answer(app, request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true)
        .serve_connection(io, service);
    // A peer that vanishes or stalls ends its own connection; nothing to report.
    let _ = connection.await;
}

async fn answer(app: Arc<App>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let config = app.config();
    if let Some(bearer) = &config.bearer {
        let presented = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(quiver_secret::credentials::bearer);
        if !presented.is_some_and(|token| bearer.matches(token)) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "authentication required\n");
            response
                .headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let (parts, body) = request.into_parts();
    let limit = config.max_request_bytes;
    let collected =
        tokio::time::timeout(config.body_timeout, Limited::new(body, limit).collect()).await;
    let body = match collected {
        Ok(Ok(body)) => body.to_bytes().to_vec(),
        Ok(Err(error))
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body exceeds max_request_bytes={limit}\n"),
            );
        }
        Ok(Err(_)) => return plain(StatusCode::BAD_REQUEST, "unreadable request body\n"),
        Err(_) => {
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                "request body not received in time\n",
            )
        }
    };
    let headers = parts
        .headers
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_string(), value.to_str().ok()?.to_string()))
        })
        .collect();
    let app_request = AppRequest {
        verb: parts.method.as_str().to_string(),
        path: percent_decoded(parts.uri.path()),
        headers,
        body,
    };
    let handled = tokio::task::spawn_blocking(move || app.handle(app_request)).await;
    let Ok(answer) = handled else {
        // A method that panicked: the connection lives, the client hears a 500.
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal server error\n");
    };
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A path with `%XX` escapes decoded (as Latin-1 bytes, the way WSGI servers decode it).
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(value) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(char::from(value));
                i += 3;
                continue;
            }
        }
        out.push(char::from(bytes[i]));
        i += 1;
    }
    out
}
