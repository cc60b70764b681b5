//! quiver gateway: read-only HTTP APIs over DuckDB snapshots. It embeds no DuckDB: it is a client
//! of a quiver server (spawned, or reached by address) over the spine.
//!
//! - [`backend`]: the quiver server (spawned or reached) and the connection pool.
//! - [`project`]: the project files (offloader's layout) loaded and checked.
//! - [`compile`]: an endpoint and a caller's params become one parameterized statement.
//! - [`snapshot`]: manifests, materialize, swap, rollback, warm start, readiness.

pub mod backend;
pub mod compile;
pub mod project;
pub mod snapshot;
