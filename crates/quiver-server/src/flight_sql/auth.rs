//! Who may call the Flight SQL service: the server's token (`crate::auth::Token`), presented the
//! two ways ADBC and JDBC clients present credentials. `Handshake` with HTTP Basic (the password is
//! the token, the user name is ignored) answers the header `authorization: Bearer <token>`, which
//! the client then sends on every call; a client may also send that header from the start.
//! Every refusal is the same `unauthenticated("authentication failed")`: it says nothing about which
//! tokens exist. A server without a token (`no_auth`, loopback listeners only) checks nothing.
//! [`Gate`] is the check every call passes: `crate::auth::verify` (the per-peer throttle, the
//! count, the log), then the call's connection is marked authenticated (`connections.rs`).

use arrow_flight::flight_service_server::FlightService;
use arrow_flight::{
    Action, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, PollInfo,
    SchemaResult, Ticket,
};
use quiver_server_protocol::limits::TOKEN_BYTES_MAX;
use std::net::SocketAddr;
use std::sync::Arc;

use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};

use super::connections::Connections;
use crate::admission::Door;
use crate::auth::{verify, Token};
use crate::server::Shared;

/// The header both forms arrive in.
pub const AUTHORIZATION: &str = "authorization";
/// `Basic `, the longer of the two schemes' prefixes.
const BASIC_PREFIX_BYTES: usize = 6;

/// The one refusal.
pub fn refused() -> Status {
    Status::unauthenticated("authentication failed")
}

/// The token of an `authorization` header, Bearer or Basic (the password, base64 padded or not),
/// if it is well formed.
fn presented(metadata: &MetadataMap) -> Option<String> {
    let header = metadata.get(AUTHORIZATION)?.to_str().ok()?;
    if header.len() > 2 * TOKEN_BYTES_MAX + BASIC_PREFIX_BYTES {
        return None;
    }
    quiver_secret::credentials::token(header)
}

/// Checks the credentials of one call.
pub fn check(token: Option<&Token>, metadata: &MetadataMap) -> Result<(), Status> {
    let Some(token) = token else {
        return Ok(());
    };
    match presented(metadata) {
        Some(text) if text.len() <= TOKEN_BYTES_MAX && token.matches(&text) => Ok(()),
        _ => Err(refused()),
    }
}

/// The handshake's answer header (`Bearer <token>`) for accepted credentials; `None` when the
/// server checks nothing.
pub fn handshake(token: Option<&Token>, metadata: &MetadataMap) -> Result<Option<String>, Status> {
    check(token, metadata)?;
    if token.is_none() {
        return Ok(None);
    }
    let text = presented(metadata).ok_or_else(refused)?;
    Ok(Some(format!("Bearer {text}")))
}

/// The credentials check of every call, against the server's token.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
    connections: Arc<Connections>,
}

impl Gate {
    /// The check of `shared`'s token; accepted calls mark their connection in `connections`.
    pub fn new(shared: Arc<Shared>, connections: Arc<Connections>) -> Gate {
        Gate {
            shared,
            connections,
        }
    }

    /// Checks one call's credentials, from `remote` (throttled by its address).
    fn check(&self, metadata: &MetadataMap, remote: Option<SocketAddr>) -> Result<(), Status> {
        if self.shared.token.is_some() {
            let presented = presented(metadata);
            let peer = remote.map_or_else(|| "unknown".into(), |peer| peer.to_string());
            let ip = remote.map(|peer| peer.ip());
            if !verify(
                &self.shared,
                Door::FlightSql,
                &peer,
                ip,
                presented.as_deref(),
            ) {
                return Err(refused());
            }
        }
        self.connections.authenticated(remote);
        Ok(())
    }
}

/// A Flight service behind the credentials check: every call is refused before it reaches `inner`
/// unless its `authorization` header carries the token (`Handshake` then answers for itself). One
/// gate for every method, those `inner` leaves unimplemented included.
pub struct Authenticated<S> {
    inner: S,
    gate: Gate,
}

impl<S> Authenticated<S> {
    /// `inner`, behind `gate`.
    pub fn new(inner: S, gate: Gate) -> Authenticated<S> {
        Authenticated { inner, gate }
    }

    /// Checks one call's credentials.
    pub fn check<T>(&self, request: &Request<T>) -> Result<(), Status> {
        self.gate.check(request.metadata(), request.remote_addr())
    }
}

#[tonic::async_trait]
impl<S: FlightService> FlightService for Authenticated<S> {
    type HandshakeStream = S::HandshakeStream;
    type ListFlightsStream = S::ListFlightsStream;
    type DoGetStream = S::DoGetStream;
    type DoPutStream = S::DoPutStream;
    type DoExchangeStream = S::DoExchangeStream;
    type DoActionStream = S::DoActionStream;
    type ListActionsStream = S::ListActionsStream;

    async fn handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        self.check(&request)?;
        self.inner.handshake(request).await
    }

    async fn list_flights(
        &self,
        request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        self.check(&request)?;
        self.inner.list_flights(request).await
    }

    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.check(&request)?;
        self.inner.get_flight_info(request).await
    }

    async fn poll_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        self.check(&request)?;
        self.inner.poll_flight_info(request).await
    }

    async fn get_schema(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        self.check(&request)?;
        self.inner.get_schema(request).await
    }

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        self.check(&request)?;
        self.inner.do_get(request).await
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        self.check(&request)?;
        self.inner.do_put(request).await
    }

    async fn do_exchange(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        self.check(&request)?;
        self.inner.do_exchange(request).await
    }

    async fn do_action(
        &self,
        request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        self.check(&request)?;
        self.inner.do_action(request).await
    }

    async fn list_actions(
        &self,
        request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        self.check(&request)?;
        self.inner.list_actions(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(value: &str) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        metadata.insert(AUTHORIZATION, value.parse().unwrap());
        metadata
    }

    #[test]
    fn bearer_and_basic_carry_the_token() {
        let token = Token::new("secret");
        assert!(check(Some(&token), &with_header("Bearer secret")).is_ok());
        // "anyone:secret"
        let basic = with_header("Basic YW55b25lOnNlY3JldA==");
        assert!(check(Some(&token), &basic).is_ok());
        assert_eq!(
            handshake(Some(&token), &basic).unwrap().as_deref(),
            Some("Bearer secret")
        );
        for refused in [
            "Bearer wrong",
            "Basic YW55b25lOndyb25n",
            "secret",
            "Bearer ",
        ] {
            let status = check(Some(&token), &with_header(refused)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
            assert_eq!(status.message(), "authentication failed");
        }
        assert!(check(Some(&token), &MetadataMap::new()).is_err());
        // Every length of user:token modulo 3, padded and as ADBC's Go driver sends it: unpadded.
        for user in ["user", "admin", "anyone"] {
            use base64::Engine;
            let padded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:secret"));
            for encoded in [padded.as_str(), padded.trim_end_matches('=')] {
                let header = with_header(&format!("Basic {encoded}"));
                assert!(check(Some(&token), &header).is_ok(), "{user}: {encoded}");
            }
        }
        assert!(check(None, &MetadataMap::new()).is_ok());
        assert_eq!(handshake(None, &MetadataMap::new()).unwrap(), None);
    }
}
