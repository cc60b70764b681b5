//! quiver gateway: read-only HTTP APIs over DuckDB snapshots. It embeds no DuckDB: it is a client
//! of a quiver server (spawned, or reached by address) over the spine. What a project says and
//! what a request means live in `quiver-gateway-core` (re-exported here as [`project`],
//! [`compile`], [`openapi`] and [`catalog`]); this crate serves them.
//!
//! - `access`: API keys, the admin token, rate limits and admission, for both ports.
//! - [`backend`]: the quiver server (spawned or reached) and the connection pool.
//! - [`snapshot`]: manifests, materialize, swap, rollback, warm start, readiness, reload.
//! - `representation`: a response's format (`Accept`), body and content coding.
//! - `cache`: finished bodies, bounded by bytes, one load per key at a time.
//! - [`lookup`]: snapshot rows in memory, indexed for requests that equality alone selects.
//! - [`http`]: the public port: auth, limits, the request flow, errors, ETags.
//! - `admin`: the admin port: liveness, readiness, status, OpenAPI, metrics, refresh.
//! - `metrics`: the Prometheus exposition.
//! - `bucket_project`: a project kept in a bucket.
//! - `project_sync`: the project reloaded while serving (offloader's config sync).
//! - `gateway`: the parts wired together; [`serve`]: the process around them.

#![warn(missing_docs)]

pub use quiver_gateway_core::{catalog, compile, openapi, project, value};

pub(crate) mod access;
pub(crate) mod admin;
pub mod backend;
pub(crate) mod bucket_project;
pub(crate) mod cache;
pub(crate) mod gateway;
pub mod http;
pub mod lookup;
pub(crate) mod metrics;
pub(crate) mod project_sync;
pub(crate) mod representation;
pub mod serve;
pub mod snapshot;
