//! The public port's router: `GET|HEAD /v1/endpoints/{name}` and `/healthz`, everything else a
//! `404` envelope.
//! One middleware wraps every request: its id, the URI and header limits, and once answered, one
//! JSON log line and the request metrics.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};

use crate::gateway::Gateway;
use crate::metrics::UNKNOWN_ENDPOINT;
use crate::representation::{self, Format};

use super::cors;
use super::endpoint::{self, KeyId};
use super::errors::{plain_json, ApiError, Family};
use super::limits;
use super::request_id::{self, RequestId};

/// The path prefix of endpoints.
pub const ENDPOINTS_PREFIX: &str = "/v1/endpoints/";

pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route(
            "/v1/endpoints/{name}",
            get(endpoint::handle).fallback(method_not_allowed),
        )
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(gateway.clone(), cors::layer))
        .layer(middleware::from_fn_with_state(gateway.clone(), around))
        .with_state(gateway)
}

/// offloader's liveness probe on the public port: `200 {"status":"ok"}` whatever the snapshots'
/// state, to any caller that accepts JSON.
async fn healthz(
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    if representation::negotiate(accept, None) != Ok(Format::Json) {
        return ApiError::new(Family::NotAcceptable, "/healthz answers JSON only")
            .response(&request_id);
    }
    plain_json(StatusCode::OK, r#"{"status":"ok"}"#.to_string())
}

async fn not_found(request: Request) -> Response {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map_or_else(request_id::new_id, |id| id.0.clone());
    ApiError::not_found().response(&request_id)
}

/// Endpoints are read-only: anything but GET and HEAD is refused, in the envelope.
async fn method_not_allowed(request: Request) -> Response {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map_or_else(request_id::new_id, |id| id.0.clone());
    let mut response = ApiError::new(
        Family::MethodNotAllowed,
        "endpoints answer GET and HEAD only",
    )
    .response(&request_id);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

async fn around(State(gateway): State<Arc<Gateway>>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id::for_request(request.headers());
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let project = gateway.project();
    let endpoint = path
        .strip_prefix(ENDPOINTS_PREFIX)
        .and_then(|name| project.endpoint(name))
        .map_or(UNKNOWN_ENDPOINT, |endpoint| endpoint.name.as_str());
    let uri_length = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    let checked =
        limits::check_uri(uri_length).and_then(|()| limits::check_headers(request.headers()));
    let mut response = match checked {
        Err(error) => error.response(&request_id),
        Ok(()) => {
            request
                .extensions_mut()
                .insert(RequestId(request_id.clone()));
            next.run(request).await
        }
    };
    request_id::stamp(response.headers_mut(), &request_id);
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    gateway
        .metrics
        .record_request(endpoint, status, elapsed.as_secs_f64());
    let cache = response
        .headers()
        .get("x-cache")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("-");
    let key = response
        .extensions()
        .get::<KeyId>()
        .map_or("-", |key| key.0.as_str());
    tracing::info!(
        request_id,
        method = %method,
        endpoint,
        status,
        cache,
        key,
        ms = elapsed.as_secs_f64() * 1000.0,
        "request"
    );
    response
}
