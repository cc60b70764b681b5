//! The admin port, with offloader's routes and bodies: `/live`, `/ready` (the project's policy),
//! `/status` (offloader's four fields; per dataset, the cache, the pool and the keys beside them
//! for whoever may see the details), `/docs`, `/schema`, `/openapi.json`, `/metrics`, and
//! `/diagnostics`; quiver's `POST /refresh`, `/refresh/{dataset}`, `/rollback/{dataset}`.
//! Loopback by default. As offloader, the descriptions and probes are open; `/diagnostics` needs
//! the admin token and fails closed without one configured; quiver's POST routes need the token
//! when one is set.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde_json::{json, Value};

use crate::access::admin_token::AdminToken;
use crate::catalog;
use crate::gateway::Gateway;
use crate::http::errors::{plain_json, ApiError, Family};
use crate::http::request_id::{self, RequestId};
use crate::metrics::{DatasetScrape, Scrape};
use crate::snapshot::SnapshotError;

mod diagnostics;

#[derive(Clone)]
struct AdminState {
    gateway: Arc<Gateway>,
    /// The admin token, when one is required.
    token: AdminToken,
}

pub fn router(gateway: Arc<Gateway>, admin_token: Option<String>) -> Router {
    let state = AdminState {
        gateway,
        token: AdminToken::new(admin_token.as_deref()),
    };
    let guarded = Router::new()
        .route("/refresh", post(refresh_all))
        .route("/refresh/{dataset}", post(refresh_one))
        .route("/rollback/{dataset}", post(rollback))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/live", get(live))
        .route("/ready", get(ready))
        .route("/status", get(status))
        .route("/docs", get(docs))
        .route("/schema", get(schema))
        .route("/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .route("/diagnostics", get(diagnostics::handle))
        .merge(guarded)
        .layer(middleware::from_fn(stamp))
        .with_state(state)
}

/// Every admin answer carries its request id and `nosniff`, as the public port's do.
async fn stamp(mut request: Request, next: Next) -> Response {
    let request_id = request_id::for_request(request.headers());
    request
        .extensions_mut()
        .insert(RequestId(request_id.clone()));
    let mut response = next.run(request).await;
    request_id::stamp(response.headers_mut(), &request_id);
    response
}

/// Whether `headers` carry the admin token; `None` when no token is configured.
fn token_sent(state: &AdminState, headers: &HeaderMap) -> Option<bool> {
    state.token.sent(headers)
}

async fn require_token(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    if token_sent(&state, request.headers()) == Some(false) {
        return ApiError::unauthorized(INVALID_TOKEN).response(&request_id_of(&request));
    }
    next.run(request).await
}

/// The refusal of a missing or wrong admin token (offloader's words).
const INVALID_TOKEN: &str = "invalid admin token";

fn request_id_of(request: &Request) -> String {
    request
        .extensions()
        .get::<RequestId>()
        .map_or_else(request_id::new_id, |id| id.0.clone())
}

/// A JSON answer as offloader's admin port gives it: `charset=utf-8`, Plug's cache-control.
fn json_reply(status: StatusCode, value: &Value) -> Response {
    plain_json(status, value.to_string())
}

async fn live() -> Response {
    json_reply(StatusCode::OK, &json!({"status": "ok"}))
}

async fn docs(State(state): State<AdminState>) -> Response {
    json_reply(StatusCode::OK, &catalog::docs(&state.gateway.project()))
}

async fn schema(State(state): State<AdminState>) -> Response {
    json_reply(StatusCode::OK, &catalog::schema(&state.gateway.project()))
}

/// `200` when the project's `ready:` policy holds, else `503`; each dataset's state either way.
async fn ready(State(state): State<AdminState>) -> Response {
    let snapshots = &state.gateway.snapshots;
    let ready = snapshots.is_ready();
    let status = snapshots.status();
    let datasets: serde_json::Map<String, Value> = status["datasets"]
        .as_object()
        .map(|datasets| {
            datasets
                .iter()
                .map(|(name, entry)| (name.clone(), entry["state"].clone()))
                .collect()
        })
        .unwrap_or_default();
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let keys = state.gateway.keys.state();
    json_reply(
        code,
        &json!({"status": "ok", "ready": ready, "datasets": datasets, "keys": keys}),
    )
}

/// offloader's `{status, service, version, ready}`; with quiver's details beside them (per
/// dataset, the cache, the pool, the keys) when no admin token is configured or it is sent.
async fn status(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    let mut document = json!({
        "status": "ok",
        "service": catalog::SERVICE,
        "version": env!("CARGO_PKG_VERSION"),
        "ready": state.gateway.snapshots.is_ready(),
    });
    if token_sent(&state, &headers) != Some(false) {
        if let (Some(document), Value::Object(details)) =
            (document.as_object_mut(), details(&state.gateway))
        {
            document.extend(details);
        }
    }
    json_reply(StatusCode::OK, &document)
}

/// The snapshots' own status (`ready`, `datasets`), with the cache, the pool and the keys.
pub(crate) fn details(gateway: &Gateway) -> Value {
    let cache = gateway.cache.stats();
    let mut status = gateway.snapshots.status();
    let extra = json!({
        "cache": {
            "entries": cache.entries,
            "bytes": cache.bytes,
            "max_bytes": cache.max_bytes,
            "hits": cache.hits,
            "misses": cache.misses,
            "evictions": cache.evictions,
        },
        "pool": {
            "size": gateway.admission.size(),
            "busy": gateway.admission.busy(),
            "open": gateway.backend.pool().open(),
            "wait_ms": gateway.admission.wait_max().as_millis() as u64,
        },
        "server": {
            "spawned": gateway.backend.server_pid().is_some(),
            "pid": gateway.backend.server_pid(),
        },
        "connections": {
            "public": gateway.public_connections.json(),
            "admin": gateway.admin_connections.json(),
        },
        "keys": {
            "count": gateway.keys.keys().len(),
            "state": gateway.keys.state(),
            "problems": gateway.keys.problems().as_slice(),
            "reloads_ok": gateway.keys.reloads_ok(),
            "reloads_failed": gateway.keys.reloads_failed(),
        },
        "config_sync": serde_json::to_value(gateway.sync.get()).unwrap_or_default(),
    });
    if let (Some(status), Value::Object(extra)) = (status.as_object_mut(), extra) {
        status.extend(extra);
    }
    status
}

async fn openapi(State(state): State<AdminState>) -> Response {
    json_reply(
        StatusCode::OK,
        &crate::openapi::document(&state.gateway.project()),
    )
}

async fn metrics(State(state): State<AdminState>) -> Response {
    let gateway = &state.gateway;
    let text = gateway.metrics.render(&scrape(gateway));
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    response
}

fn scrape(gateway: &Gateway) -> Scrape {
    let cache = gateway.cache.stats();
    let snapshot_metrics = gateway.snapshots.metrics();
    Scrape {
        ready: snapshot_metrics.ready,
        pool_connections: gateway.backend.pool().open() as i64,
        pool_busy: gateway.admission.busy() as i64,
        cache_entries: cache.entries as i64,
        cache_bytes: cache.bytes as i64,
        cache_evictions: cache.evictions,
        lookup_bytes: gateway.snapshots.lookup_bytes() as i64,
        keys_reload_failed: gateway.keys.reloads_failed(),
        datasets: snapshot_metrics
            .datasets
            .iter()
            .map(|dataset| DatasetScrape {
                dataset: dataset.dataset.clone(),
                snapshot_age_seconds: dataset.age_seconds,
                stale: dataset.stale.unwrap_or(false),
                refresh_ok: dataset.last_refresh_ok == Some(true),
                materialize_seconds: dataset.last_materialize_seconds,
            })
            .collect(),
    }
}

async fn refresh_all(
    State(state): State<AdminState>,
    Extension(RequestId(id)): Extension<RequestId>,
) -> Response {
    refresh(state.gateway, None, id).await
}

async fn refresh_one(
    State(state): State<AdminState>,
    Extension(RequestId(id)): Extension<RequestId>,
    Path(dataset): Path<String>,
) -> Response {
    refresh(state.gateway, Some(dataset), id).await
}

/// Runs a refresh to its end (materializes are bounded by their budgets) and answers its outcome
/// per dataset.
async fn refresh(gateway: Arc<Gateway>, dataset: Option<String>, request_id: String) -> Response {
    let outcome =
        tokio::task::spawn_blocking(move || gateway.snapshots.refresh(dataset.as_deref())).await;
    match outcome {
        Ok(Ok(outcomes)) => json_reply(StatusCode::OK, &json!({ "refreshed": outcomes })),
        Ok(Err(error)) => snapshot_error(&error, &request_id),
        Err(error) => {
            tracing::error!(request_id, error = %error, "refresh task failed");
            ApiError::internal().response(&request_id)
        }
    }
}

async fn rollback(
    State(state): State<AdminState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Path(dataset): Path<String>,
) -> Response {
    let gateway = state.gateway.clone();
    let outcome = tokio::task::spawn_blocking(move || gateway.snapshots.rollback(&dataset)).await;
    match outcome {
        Ok(Ok(rolled)) => json_reply(StatusCode::OK, &json!({ "rolled_back": rolled })),
        Ok(Err(error)) => snapshot_error(&error, &request_id),
        Err(error) => {
            tracing::error!(request_id, error = %error, "rollback task failed");
            ApiError::internal().response(&request_id)
        }
    }
}

/// An unknown dataset is `404`; no previous snapshot, or one being refreshed, `409`.
fn snapshot_error(error: &SnapshotError, request_id: &str) -> Response {
    let family = match error {
        SnapshotError::UnknownDataset(_) => Family::NotFound,
        SnapshotError::NoPrevious(_) | SnapshotError::Busy(_) => Family::Conflict,
    };
    ApiError::new(family, error.to_string()).response(request_id)
}
