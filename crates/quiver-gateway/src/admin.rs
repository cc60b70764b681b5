//! The admin port: `/live`, `/ready` (the project's policy), `/status` (per dataset, the cache,
//! the pool, the keys), `/openapi.json`, `/metrics`, and `POST /refresh`, `/refresh/{dataset}`,
//! `/rollback/{dataset}`. Loopback by default; with an admin token every route but `/live` and
//! `/ready` (probes) needs `Authorization: Bearer <token>`.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::gateway::Gateway;
use crate::http::auth;
use crate::http::errors::{ApiError, Family};
use crate::http::request_id;
use crate::metrics::{DatasetScrape, Scrape};
use crate::project::keys;
use crate::snapshot::SnapshotError;

#[derive(Clone)]
struct AdminState {
    gateway: Arc<Gateway>,
    /// SHA-256 of the admin token, when one is required.
    token_sha256: Option<[u8; 32]>,
}

pub fn router(gateway: Arc<Gateway>, admin_token: Option<String>) -> Router {
    let state = AdminState {
        gateway,
        token_sha256: admin_token.map(|token| keys::token_sha256(&token)),
    };
    let guarded = Router::new()
        .route("/status", get(status))
        .route("/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .route("/refresh", post(refresh_all))
        .route("/refresh/{dataset}", post(refresh_one))
        .route("/rollback/{dataset}", post(rollback))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/live", get(live))
        .route("/ready", get(ready))
        .merge(guarded)
        .with_state(state)
}

async fn require_token(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let Some(expected) = state.token_sha256 else {
        return next.run(request).await;
    };
    let sent = auth::bearer_token(
        request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok()),
    )
    .map(keys::token_sha256);
    let equal = sent.is_some_and(|sent| auth::digests_equal(&sent, &expected));
    if !equal {
        return ApiError::unauthorized("the admin port needs its bearer token")
            .response(&request_id::new_id());
    }
    next.run(request).await
}

async fn live() -> Json<Value> {
    Json(json!({"status": "live"}))
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
    (
        code,
        Json(json!({"ready": ready, "datasets": datasets, "keys": keys})),
    )
        .into_response()
}

/// The snapshots' own status (`ready`, `datasets`), with the cache, the pool and the keys.
async fn status(State(state): State<AdminState>) -> Json<Value> {
    let gateway = &state.gateway;
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
    });
    if let (Some(status), Value::Object(extra)) = (status.as_object_mut(), extra) {
        status.extend(extra);
    }
    Json(status)
}

async fn openapi(State(state): State<AdminState>) -> Json<Value> {
    Json(crate::openapi::document(&state.gateway.project))
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

async fn refresh_all(State(state): State<AdminState>) -> Response {
    refresh(state.gateway, None).await
}

async fn refresh_one(State(state): State<AdminState>, Path(dataset): Path<String>) -> Response {
    refresh(state.gateway, Some(dataset)).await
}

/// Runs a refresh to its end (materializes are bounded by their budgets) and answers its outcome
/// per dataset.
async fn refresh(gateway: Arc<Gateway>, dataset: Option<String>) -> Response {
    let outcome =
        tokio::task::spawn_blocking(move || gateway.snapshots.refresh(dataset.as_deref())).await;
    match outcome {
        Ok(Ok(outcomes)) => Json(json!({ "refreshed": outcomes })).into_response(),
        Ok(Err(error)) => snapshot_error(&error),
        Err(error) => {
            let request_id = request_id::new_id();
            tracing::error!(request_id, error = %error, "refresh task failed");
            ApiError::internal().response(&request_id)
        }
    }
}

async fn rollback(State(state): State<AdminState>, Path(dataset): Path<String>) -> Response {
    let gateway = state.gateway.clone();
    let outcome = tokio::task::spawn_blocking(move || gateway.snapshots.rollback(&dataset)).await;
    match outcome {
        Ok(Ok(rolled)) => Json(json!({ "rolled_back": rolled })).into_response(),
        Ok(Err(error)) => snapshot_error(&error),
        Err(error) => {
            let request_id = request_id::new_id();
            tracing::error!(request_id, error = %error, "rollback task failed");
            ApiError::internal().response(&request_id)
        }
    }
}

/// An unknown dataset is `404`; no previous snapshot, or one being refreshed, `409`.
fn snapshot_error(error: &SnapshotError) -> Response {
    let family = match error {
        SnapshotError::UnknownDataset(_) => Family::NotFound,
        SnapshotError::NoPrevious(_) | SnapshotError::Busy(_) => Family::Conflict,
    };
    ApiError::new(family, error.to_string()).response(&request_id::new_id())
}
