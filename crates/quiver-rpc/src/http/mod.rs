//! RPC over HTTP, route- and header-compatible with vgi-rpc's HTTP transport: a server for any
//! [`crate::Server`] ([`serve_http`]) and the client side of [`crate::Client`]
//! ([`crate::Client::http`]).
//!
//! HTTP carries one call or one stream turn per request, so unlike the byte-stream transports
//! this module speaks RPC: `app.rs` maps routes onto the server's protocols, `streams.rs` keeps
//! a stream call between requests in sealed tokens (`token.rs`), `codec.rs` negotiates zstd and
//! gzip, `server.rs` serves the app with hyper (TLS through rustls, bearer tokens, limits and
//! deadlines) and `client.rs` is the client's connection.

mod app;
mod client;
mod codec;
pub(crate) mod feed;
mod output;
mod server;
mod streams;
pub mod token;
pub(crate) mod turns;

use std::path::PathBuf;
use std::time::Duration;

pub use app::{
    ACCEPT_MAX_RESPONSE_BYTES, ARROW_STREAM, RESPONSE_BYTES_MIN, RPC_ERROR_HEADER, TURN_BATCHES,
    TURN_BYTES_DEFAULT, TURN_TIME_MAX,
};
pub use client::{
    HttpOptions, HttpPeer, HttpReply, ACCEPT_MAX_RESPONSE_BYTES_DEFAULT, MAX_RESPONSE_BYTES_DEFAULT,
};
pub use codec::ENCODINGS;
pub use server::{serve_http, HttpServer};
pub use streams::HELD_STREAMS_MAX;
pub use token::{TokenKey, STREAM_TTL};

/// Settings of an HTTP server.
#[derive(Clone)]
pub struct HttpConfig {
    /// A path every route sits under (`""` or `/vgi`-like: starts with `/`, no trailing `/`).
    pub prefix: String,
    /// Cap on one response's bytes (at least [`RESPONSE_BYTES_MIN`]); `None`: only the client's.
    pub max_response_bytes: Option<u64>,
    /// Cap on one request body, compressed and decoded alike.
    pub max_request_bytes: usize,
    /// Bytes a producer's turn fills up to before it hands back its cursor, for a client that
    /// reads many batches a turn ([`TURN_BATCHES`]); the response caps lower it. Smaller turns
    /// spread a stream over more requests (and replicas), larger ones cost fewer round trips.
    pub turn_bytes: u64,
    /// Codings responses may be compressed with (advertised in `VGI-Supported-Encodings`).
    pub response_codings: Vec<&'static str>,
    /// Seals stream tokens; replicas behind one load balancer share it.
    pub token_key: TokenKey,
    /// How long a stream may idle between turns.
    pub stream_ttl: Duration,
    /// Most stream calls held in this process (states that cannot travel in their token).
    pub held_streams_max: usize,
    /// The bearer token every request must present (`Authorization: Bearer ...`), if any.
    pub bearer: Option<quiver_secret::Secret>,
    /// Certificate chain and private key (PEM files) to serve HTTPS with.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Longest wait for a request's head, including an idle keep-alive connection's next one.
    pub header_timeout: Duration,
    /// Longest wait for a request's body once its head has arrived, and for a TLS handshake.
    pub body_timeout: Duration,
    /// Most connections served at once; more wait in the accept backlog.
    pub connections_max: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            prefix: String::new(),
            max_response_bytes: None,
            max_request_bytes: 256 << 20,
            turn_bytes: TURN_BYTES_DEFAULT,
            response_codings: ENCODINGS.to_vec(),
            token_key: TokenKey::random(),
            stream_ttl: STREAM_TTL,
            held_streams_max: HELD_STREAMS_MAX,
            bearer: None,
            tls: None,
            header_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(300),
            connections_max: 256,
        }
    }
}

/// The environment variable holding a deployment's shared token key (64 hex digits).
pub const TOKEN_KEY_ENV: &str = "QUIVER_HTTP_TOKEN_KEY";
/// The environment variable holding the bearer token a server requires.
pub const BEARER_ENV: &str = "QUIVER_HTTP_TOKEN";
/// The environment variable holding the bytes a producer's turn fills up to
/// ([`HttpConfig::turn_bytes`]).
pub const TURN_BYTES_ENV: &str = "QUIVER_HTTP_TURN_BYTES";

impl HttpConfig {
    /// Defaults, with the token key, the bearer token and the turn size from the environment
    /// ([`TOKEN_KEY_ENV`], [`BEARER_ENV`], [`TURN_BYTES_ENV`]) when set; a malformed value is
    /// an error.
    pub fn from_env() -> Result<HttpConfig, String> {
        let mut config = HttpConfig::default();
        if let Ok(hex) = std::env::var(TOKEN_KEY_ENV) {
            config.token_key = TokenKey::from_hex(&hex)
                .ok_or_else(|| format!("{TOKEN_KEY_ENV} must be 64 hex digits"))?;
        }
        if let Ok(token) = std::env::var(BEARER_ENV) {
            if token.is_empty() {
                return Err(format!("{BEARER_ENV} is set but empty"));
            }
            config.bearer = Some(quiver_secret::Secret::new(&token));
        }
        if let Ok(raw) = std::env::var(TURN_BYTES_ENV) {
            config.turn_bytes = raw
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|bytes| *bytes > 0)
                .ok_or_else(|| {
                    format!("{TURN_BYTES_ENV} must be a positive number of bytes; got {raw:?}")
                })?;
        }
        Ok(config)
    }
}
