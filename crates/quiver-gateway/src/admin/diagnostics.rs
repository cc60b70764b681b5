//! `GET /diagnostics`: what an operator reads when something is wrong, in offloader's shape
//! (its field names where the meaning exists; quiver's own details under `quiver`). Fails
//! closed: without an admin token configured it answers `503`, and without the token `401`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use serde_json::{json, Value};

use super::{details, json_reply, token_sent, AdminState, INVALID_TOKEN};
use crate::catalog;
use crate::gateway::Gateway;
use crate::http::errors::{ApiError, Family};
use crate::http::request_id::RequestId;

/// The refusal when no admin token is configured (offloader's words; its variable is honoured).
const NO_TOKEN: &str = "admin token not configured (set OFFLOADER_ADMIN_TOKEN)";

/// A snapshot older than this is `stale` here (offloader's day), whatever endpoints allow.
const STALE_AFTER_SECONDS: f64 = 24.0 * 3600.0;

pub(super) async fn handle(
    State(state): State<AdminState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
) -> Response {
    match token_sent(&state, &headers) {
        None => ApiError::new(Family::NotReady, NO_TOKEN).response(&request_id),
        Some(false) => ApiError::unauthorized(INVALID_TOKEN).response(&request_id),
        Some(true) => json_reply(StatusCode::OK, &document(&state.gateway)),
    }
}

fn document(gateway: &Gateway) -> Value {
    let status = gateway.snapshots.status();
    let datasets: Vec<Value> = status["datasets"]
        .as_object()
        .map(|datasets| {
            datasets
                .iter()
                .map(|(name, entry)| dataset(name, entry))
                .collect()
        })
        .unwrap_or_default();
    let size = gateway.admission.size();
    let busy = gateway.admission.busy();
    json!({
        "build_version": env!("CARGO_PKG_VERSION"),
        "config_version": catalog::CONFIG_VERSION,
        "object_store_mode": "local",
        "duckdb_status": if gateway.backend.pool().open() > 0 { "ok" } else { "error" },
        "pool": {"connections": size, "busy": busy, "saturated": busy >= size, "remote_cap": null},
        "disk": {"cache_dir_free_bytes": null},
        "ready": gateway.snapshots.is_ready(),
        "config_sync": gateway.sync.diagnostics(),
        "datasets": datasets,
        "quiver": details(gateway),
    })
}

/// One dataset's entry from its `/status` line.
fn dataset(name: &str, entry: &Value) -> Value {
    let active = entry["snapshot_id"].as_str().map(|snapshot_id| {
        json!({
            "snapshot_id": snapshot_id,
            "watermark": entry["watermark"],
            "age_seconds": entry["age_seconds"],
        })
    });
    let error = entry["last_error"].as_str();
    let attempted = entry["attempts"].as_u64().unwrap_or(0) > 0;
    let last_attempted = attempted.then(|| {
        json!({
            "snapshot_id": entry["snapshot_id"],
            "status": if error.is_some() { "failed" } else { "ok" },
            "at": null,
        })
    });
    json!({
        "dataset": name,
        "source": "static_manifest",
        "active_snapshot": active,
        "last_attempted": last_attempted,
        "refresh_error": error,
        "source_reachable": null,
        "manifest_valid": attempted.then_some(error.is_none()),
        "stale": entry["age_seconds"].as_f64().map(|age| age > STALE_AFTER_SECONDS),
    })
}
