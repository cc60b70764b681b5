//! `GET|HEAD /v1/endpoints/{name}`: one request's flow, in the order design.md fixes: auth →
//! endpoint granted (else a 404 identical to a missing endpoint's) → rate limit → snapshot →
//! compile → ETag (`304` before the cache and the server) → cache with single-flight → a
//! connection (bounded wait, shedding) → query → encode → compress → respond.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use crate::cache::{BodyKey, CachedBody, KeyParts};
use crate::compile;
use crate::compile::cursor;
use crate::gateway::Gateway;
use crate::lookup::Lookups;
use crate::project::{
    AuthMode, CachePolicy, Dataset, Endpoint, Key, Project, RepeatedParams, ServingMode,
};
use crate::representation::chunks::Chunks;
use crate::representation::encoding::COMPRESS_BYTES_MIN;
use crate::representation::{self, splice, BodyMeta, Encoding, Format, Freshness, RequestFacts};
use crate::snapshot::{Snapshot, View};

use super::errors::{ApiError, Family};
use super::etag;
use super::limits;
use super::query;
use super::request_id::RequestId;
use super::timing::Timings;
use crate::access::auth::{bearer_token, Refusal};

/// What a call of an endpoint whose dataset has no snapshot yet is told.
pub const NOT_READY_MESSAGE: &str = "snapshot is not ready";

/// Seconds a caller is asked to wait before retrying a dataset that is not ready.
const NOT_READY_RETRY_SECONDS: u64 = 5;

pub async fn handle(
    State(gateway): State<Arc<Gateway>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Path(name): Path<String>,
    RawQuery(raw_query): RawQuery,
    // The request itself, not a `HeaderMap` extractor: that one copies every header.
    request: Request,
) -> Response {
    let headers = request.headers();
    let timeout = gateway.project().settings.request_timeout;
    let mut key_id = None;
    // Boxed: the router's layers move this handler's future by value, a pointer rather than
    // the whole flow's state.
    let flow = Box::pin(respond(
        &gateway,
        &name,
        raw_query.as_deref(),
        headers,
        &request_id,
        &mut key_id,
    ));
    let outcome = match tokio::time::timeout(timeout, flow).await {
        Ok(outcome) => outcome,
        Err(_elapsed) => Err(ApiError::new(
            Family::Timeout,
            format!("the request took over {} ms", timeout.as_millis()),
        )),
    };
    let mut response = match outcome {
        Ok(response) => response,
        Err(error) => error.response(&request_id),
    };
    if let Some(key_id) = key_id {
        response.extensions_mut().insert(KeyId(key_id));
    }
    response
}

/// The id of the key a request authenticated with, for its log line (never the token).
#[derive(Clone, Debug)]
pub struct KeyId(pub String);

async fn respond(
    gateway: &Gateway,
    name: &str,
    raw_query: Option<&str>,
    headers: &HeaderMap,
    request_id: &str,
    key_id: &mut Option<String>,
) -> Result<Response, ApiError> {
    let mut timings = Timings::start();
    // One project and its snapshots for the whole request, whatever a reload does meanwhile.
    let view = gateway.snapshots.view();
    let project = &view.project;
    let key = authenticate(gateway, project, headers)?;
    *key_id = key.as_ref().map(|key| key.id.clone());
    let endpoint = granted(project, key.as_ref(), name)?;
    rate_limit(gateway, key.as_ref())?;
    timings.mark("auth");

    let refuse_repeats = project.settings.repeated_params == RepeatedParams::Refuse;
    let pairs = limits::query_pairs(raw_query, refuse_repeats)?;
    let (format, encoding) = negotiate(endpoint, &pairs, headers)?;
    let snapshot = snapshot_for(gateway, &view, endpoint, &pairs)?;
    let dataset = project
        .dataset(&endpoint.dataset)
        .expect("an endpoint's dataset exists (checked at load)");
    let tenant = match (&endpoint.tenant_column, &key) {
        (Some(_), Some(key)) => key.tenant.as_deref(),
        _ => None,
    };
    let compiled = compile_call(gateway, endpoint, dataset, &snapshot, &pairs, tenant)?;
    timings.mark("compile");

    let body_key = BodyKey::new(&KeyParts {
        dataset: &dataset.id,
        endpoint: &endpoint.name,
        version: endpoint.version,
        tenant,
        canonical: &compiled.canonical,
        snapshot_id: &snapshot.snapshot_id,
        format,
        project_generation: view.generation,
    });
    let caching = HttpCaching::of(project, endpoint);
    let facts = Facts::new(
        endpoint,
        &snapshot,
        caching.etag(&body_key, encoding),
        caching,
    );
    if let Some(response) = not_modified(headers, &facts, &timings) {
        return Ok(response);
    }

    let call = Call {
        gateway,
        endpoint,
        dataset,
        format,
        encoding,
        meta: body_meta(endpoint, &snapshot),
        lookups: snapshot.lookups.clone(),
        request_id,
    };
    let (body, cache_state) = call.body(compiled, body_key).await?;
    let (bytes, coding) = call.wire_bytes(&body, &facts, cache_state).await;
    timings.mark("body");
    Ok(ok_response(
        bytes,
        coding,
        &body,
        &facts,
        cache_state,
        &timings,
    ))
}

/// A key's per-second limit, if it has one.
fn rate_limit(gateway: &Gateway, key: Option<&Key>) -> Result<(), ApiError> {
    let Some((key, rate)) = key.and_then(|key| Some((key, key.rate_limit_per_second?))) else {
        return Ok(());
    };
    gateway
        .rate_limiter
        .admit(&key.id, rate, Instant::now())
        .map_err(|seconds| {
            ApiError::new(
                Family::RateLimited,
                format!("this key may make {rate} requests a second"),
            )
            .retry_after(seconds)
        })
}

/// The response's format (`Accept`, or quiver's `?format=` unless the endpoint declares a
/// `format` param; the last one sent wins) and content coding.
fn negotiate(
    endpoint: &Endpoint,
    pairs: &[(String, String)],
    headers: &HeaderMap,
) -> Result<(Format, Encoding), ApiError> {
    let format_param = match endpoint.param("format") {
        Some(_) => None,
        None => pairs
            .iter()
            .rev()
            .find(|(name, _)| name == "format")
            .map(|(_, value)| value.as_str()),
    };
    let header_text = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let format = representation::negotiate(header_text(header::ACCEPT), format_param)
        .map_err(|refusal| ApiError::new(Family::NotAcceptable, refusal.to_string()))?;
    let encoding = representation::negotiate_encoding(header_text(header::ACCEPT_ENCODING));
    Ok((format, encoding))
}

/// The caller's params against the endpoint, over the snapshot's relation.
fn compile_call(
    gateway: &Gateway,
    endpoint: &Endpoint,
    dataset: &Dataset,
    snapshot: &Snapshot,
    pairs: &[(String, String)],
    tenant: Option<&str>,
) -> Result<compile::Compiled, ApiError> {
    let relation = match endpoint.serving_mode {
        ServingMode::LocalTable => snapshot.table.as_str(),
        ServingMode::RemoteScan => snapshot.files_relation.as_str(),
    };
    compile::compile(
        endpoint,
        dataset,
        relation,
        &snapshot.snapshot_id,
        pairs,
        tenant,
        &gateway.cursor_key,
    )
    .map_err(|error| ApiError::new(Family::InvalidParam, error.to_string()))
}

/// `304` when `If-None-Match` names this response's ETag: before the cache and the server.
fn not_modified(headers: &HeaderMap, facts: &Facts, timings: &Timings) -> Option<Response> {
    let tags = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())?;
    let etag = facts.etag.as_deref()?;
    if !etag::none_match_hits(tags, etag) {
        return None;
    }
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    facts.write(response.headers_mut(), "revalidated", timings);
    Some(response)
}

/// One call's answer being made: what its body depends on besides the compiled statement.
struct Call<'a> {
    gateway: &'a Gateway,
    endpoint: &'a Endpoint,
    dataset: &'a Dataset,
    format: Format,
    encoding: Encoding,
    meta: BodyMeta,
    /// The snapshot's rows in memory, when it keeps them for keyed lookups.
    lookups: Option<Arc<Lookups>>,
    request_id: &'a str,
}

impl Call<'_> {
    /// The body (from the cache, or run), and the cache's part in it: `hit`, `miss` or `off`.
    async fn body(
        &self,
        compiled: compile::Compiled,
        body_key: BodyKey,
    ) -> Result<(Arc<CachedBody>, &'static str), ApiError> {
        let gateway = self.gateway;
        // The query's future is large (a statement's or a lookup's whole flow): made, and boxed,
        // only when the cache misses; until then this future holds a few references, which a
        // cache hit moves through the router's layers instead of kilobytes.
        let answer = async move {
            Box::pin(query::answer(
                gateway,
                self.endpoint,
                self.dataset,
                compiled,
                self.format,
                self.meta.clone(),
                self.lookups.clone(),
                self.request_id,
            ))
            .await
        };
        if self.endpoint.cache == CachePolicy::None {
            let identity = answer.await?;
            let body = match self.format {
                Format::Json => Arc::new(identity),
                _ => query::compressed(identity, self.encoding).await,
            };
            return Ok((body, "off"));
        }
        // A JSON head in brotli cannot take its tail (representation::splice): its identity
        // head is cached and each response compressed whole.
        let cached_encoding = match (self.format, self.encoding) {
            (Format::Json, Encoding::Br) => Encoding::Identity,
            _ => self.encoding,
        };
        let (body, hit) = gateway
            .cache
            .get_or_load(body_key, cached_encoding, answer)
            .await
            .map_err(|error: Arc<ApiError>| (*error).clone())?;
        gateway.metrics.record_cache(hit);
        Ok((body, if hit { "hit" } else { "miss" }))
    }

    /// The bytes sent, in chunks: a JSON body's cached head and this response's `meta`; any
    /// other format's body as cached.
    async fn wire_bytes(
        &self,
        body: &Arc<CachedBody>,
        facts: &Facts,
        cache_state: &str,
    ) -> (Vec<Bytes>, Encoding) {
        if self.format != Format::Json {
            return (vec![body.bytes.clone()], body.encoding);
        }
        let request = facts.request_facts(self.request_id, cache_state);
        let mut meta = self.meta.clone();
        meta.next_cursor = body.next_cursor.clone();
        let tail = representation::envelope_tail(&meta, &request, body.row_count);
        joined(body.clone(), tail, self.encoding).await
    }
}

/// A `200` with its body and the headers that describe it.
fn ok_response(
    chunks: Vec<Bytes>,
    coding: Encoding,
    body: &CachedBody,
    facts: &Facts,
    cache_state: &'static str,
    timings: &Timings,
) -> Response {
    let mut response = (StatusCode::OK, Body::new(Chunks::new(chunks))).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(body.content_type),
    );
    if let Some(coding) = coding.header_value() {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    if let Some(next) = body.next_cursor.as_deref() {
        if let Ok(value) = HeaderValue::from_str(next) {
            headers.insert("x-next-cursor", value);
        }
    }
    facts.write(headers, cache_state, timings);
    response
}

/// A JSON body: its head and this response's tail, in the caller's coding. An identity body is
/// sent as the cached head and the tail, neither copied. Compressing a whole body (an uncached
/// one, or brotli) runs on a blocking thread; joining a compressed head to its small tail does
/// not need one.
async fn joined(body: Arc<CachedBody>, tail: Vec<u8>, wanted: Encoding) -> (Vec<Bytes>, Encoding) {
    let small = body.bytes.len() + tail.len() < COMPRESS_BYTES_MIN;
    if body.encoding == Encoding::Identity && (wanted == Encoding::Identity || small) {
        return (
            vec![body.bytes.clone(), Bytes::from(tail)],
            Encoding::Identity,
        );
    }
    let whole = body.encoding == Encoding::Identity && wanted != Encoding::Identity && !small;
    let join = move || {
        let (bytes, coding) =
            splice::join(&body.bytes, body.encoding, body.head_crc, &tail, wanted);
        (vec![Bytes::from(bytes)], coding)
    };
    if whole {
        tokio::task::spawn_blocking(join)
            .await
            .expect("compression does not panic")
    } else {
        join()
    }
}

fn authenticate(
    gateway: &Gateway,
    project: &Project,
    headers: &HeaderMap,
) -> Result<Option<Key>, ApiError> {
    if project.settings.auth == AuthMode::None {
        return Ok(None);
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let token = bearer_token(authorization)
        .ok_or_else(|| ApiError::unauthorized(Refusal::Missing.message()))?;
    gateway
        .keys
        .authenticate(token, SystemTime::now())
        .map(Some)
        .map_err(|refusal| ApiError::unauthorized(refusal.message()))
}

/// The endpoint, if it exists and the key may call it; a key that may not reads exactly as if
/// the endpoint did not exist. A tenant-scoped endpoint needs a key bound to a tenant.
fn granted<'p>(
    project: &'p Project,
    key: Option<&Key>,
    name: &str,
) -> Result<&'p Endpoint, ApiError> {
    let endpoint = project.endpoint(name).ok_or_else(ApiError::not_found)?;
    let allowed = match key {
        None => endpoint.tenant_column.is_none(),
        Some(key) => {
            key.endpoints.contains(&endpoint.name)
                && (endpoint.tenant_column.is_none() || key.tenant.is_some())
        }
    };
    if !allowed {
        return Err(ApiError::not_found());
    }
    Ok(endpoint)
}

/// The snapshot to read: a cursor's own, while it is kept; else the dataset's current one.
fn snapshot_for(
    gateway: &Gateway,
    view: &View,
    endpoint: &Endpoint,
    pairs: &[(String, String)],
) -> Result<Arc<Snapshot>, ApiError> {
    let pinned = match endpoint.param("cursor") {
        Some(_) => None,
        None => cursor::pinned_snapshot(&gateway.cursor_key, pairs),
    };
    pinned
        .and_then(|snapshot_id| view.get(&endpoint.dataset, &snapshot_id))
        .or_else(|| view.current(&endpoint.dataset))
        // offloader's words; the dataset is not named (it is the project's, not the caller's).
        .ok_or_else(|| {
            ApiError::new(Family::NotReady, NOT_READY_MESSAGE).retry_after(NOT_READY_RETRY_SECONDS)
        })
}

fn body_meta(endpoint: &Endpoint, snapshot: &Snapshot) -> BodyMeta {
    BodyMeta {
        endpoint: endpoint.name.clone(),
        version: endpoint.version,
        snapshot_id: snapshot.snapshot_id.clone(),
        serving_mode: endpoint.serving_mode,
        freshness: Freshness {
            watermark: snapshot.watermark.clone(),
            max_staleness_minutes: endpoint
                .max_staleness
                .map(|staleness| staleness.as_secs() / 60),
        },
        next_cursor: None,
    }
}

/// How HTTP caches may keep a response, as offloader decides it: a keyed response (the project
/// requires keys) is `private, no-store` with no ETag (quiver's revalidation is opt-in); a
/// public one is `public` for the endpoint's staleness bound (at most an hour, else a minute),
/// with a strong ETag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HttpCaching {
    Keyed { revalidate: bool },
    Public { max_age_seconds: u64 },
}

/// A keyed response's Cache-Control, without and with keyed revalidation.
const KEYED_NO_STORE: &str = "private, no-store";
const KEYED_NO_CACHE: &str = "private, no-cache";

/// A public response's lifetime without a staleness bound, and its cap with one.
const PUBLIC_MAX_AGE_DEFAULT_SECONDS: u64 = 60;
const PUBLIC_MAX_AGE_CAP_SECONDS: u64 = 3600;

impl HttpCaching {
    fn of(project: &Project, endpoint: &Endpoint) -> HttpCaching {
        match project.settings.auth {
            AuthMode::Required => HttpCaching::Keyed {
                revalidate: project.settings.keyed_revalidation,
            },
            AuthMode::None => HttpCaching::Public {
                max_age_seconds: endpoint
                    .max_staleness
                    .map(|staleness| staleness.as_secs())
                    .filter(|seconds| *seconds > 0)
                    .map_or(PUBLIC_MAX_AGE_DEFAULT_SECONDS, |seconds| {
                        seconds.min(PUBLIC_MAX_AGE_CAP_SECONDS)
                    }),
            },
        }
    }

    /// The ETag a response carries: none on a keyed one unless it revalidates (a weak tag), a
    /// strong one per content coding on a public one.
    fn etag(self, body_key: &BodyKey, encoding: Encoding) -> Option<String> {
        match self {
            HttpCaching::Keyed { revalidate: false } => None,
            HttpCaching::Keyed { revalidate: true } => Some(body_key.etag()),
            HttpCaching::Public { .. } => Some(body_key.strong_etag(encoding)),
        }
    }

    fn cache_control(self) -> String {
        match self {
            HttpCaching::Keyed { revalidate: false } => KEYED_NO_STORE.into(),
            HttpCaching::Keyed { revalidate: true } => KEYED_NO_CACHE.into(),
            HttpCaching::Public { max_age_seconds } => {
                format!("public, max-age={max_age_seconds}, stale-while-revalidate=60")
            }
        }
    }

    fn vary(self) -> &'static str {
        match self {
            HttpCaching::Keyed { .. } => "Accept, Accept-Encoding, Authorization",
            HttpCaching::Public { .. } => "Accept, Accept-Encoding",
        }
    }
}

/// The per-request facts a response carries in headers, and a JSON body in its `meta` too.
struct Facts {
    etag: Option<String>,
    caching: HttpCaching,
    snapshot_id: String,
    /// Whole seconds since the watermark; negative for a watermark in the future.
    age_seconds: Option<i64>,
    stale: bool,
}

impl Facts {
    fn new(
        endpoint: &Endpoint,
        snapshot: &Snapshot,
        etag: Option<String>,
        caching: HttpCaching,
    ) -> Facts {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs() as i64);
        let age = snapshot.watermark_unix.map(|watermark| now - watermark);
        let stale = match (age, endpoint.max_staleness) {
            (Some(age), Some(max)) => age > max.as_secs() as i64,
            _ => false,
        };
        Facts {
            etag,
            caching,
            snapshot_id: snapshot.snapshot_id.clone(),
            age_seconds: age,
            stale,
        }
    }

    fn request_facts<'a>(&self, request_id: &'a str, cache: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            request_id,
            generated_at: chrono::Utc::now()
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string(),
            cache,
            age_seconds: self.age_seconds,
            stale: self.stale,
        }
    }

    fn write(&self, headers: &mut HeaderMap, cache_state: &'static str, timings: &Timings) {
        let mut put = |name: &'static str, value: &str| {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(name, value);
            }
        };
        if let Some(etag) = &self.etag {
            put("etag", etag);
        }
        if let HttpCaching::Public { .. } = self.caching {
            put("cache-control", &self.caching.cache_control());
        }
        put("x-snapshot-id", &self.snapshot_id);
        if let Some(age) = self.age_seconds {
            put("x-freshness-age", &age.max(0).to_string());
        }
        put("server-timing", &timings.header());
        // The rest are fixed texts: no copy or check per response.
        if let HttpCaching::Keyed { revalidate } = self.caching {
            let control = if revalidate {
                KEYED_NO_CACHE
            } else {
                KEYED_NO_STORE
            };
            headers.insert("cache-control", HeaderValue::from_static(control));
        }
        headers.insert("vary", HeaderValue::from_static(self.caching.vary()));
        headers.insert("x-cache", HeaderValue::from_static(cache_state));
        let stale = if self.stale { "true" } else { "false" };
        headers.insert("x-stale", HeaderValue::from_static(stale));
    }
}
