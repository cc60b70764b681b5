//! quiver gateway: read-only HTTP APIs over DuckDB snapshots. It embeds no DuckDB: it is a client
//! of a quiver server (spawned, or reached by address) over the spine.
//!
//! - [`backend`]: the quiver server (spawned or reached) and the connection pool.
//! - [`project`]: the project files (offloader's layout) loaded and checked.
//! - [`compile`]: an endpoint and a caller's params become one parameterized statement, and
//!   its signed keyset cursors (`compile::cursor`).
//! - [`openapi`]: the project's OpenAPI document.
//! - [`snapshot`]: manifests, materialize, swap, rollback, warm start, readiness.
//! - [`representation`]: a response's format (`Accept`), body and content coding.
//! - [`cache`]: finished bodies, bounded by bytes, one load per key at a time.
//! - [`http`]: the public port: auth, limits, the request flow, errors, ETags.
//! - [`admin`]: the admin port: liveness, readiness, status, OpenAPI, metrics, refresh.
//! - [`metrics`]: the Prometheus exposition.
//! - [`project_sync`]: the project reloaded while serving (offloader's config sync).
//! - [`gateway`]: the parts wired together; [`serve`]: the process around them.

pub mod admin;
pub mod backend;
pub mod bucket_project;
pub mod cache;
pub mod catalog;
pub mod compile;
pub mod gateway;
pub mod http;
pub mod metrics;
pub mod openapi;
pub mod project;
pub mod project_sync;
pub mod representation;
pub mod serve;
pub mod snapshot;
