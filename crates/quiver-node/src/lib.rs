//! Node bindings of `quiver-client` (napi-rs): the Rust client is the engine, this crate only
//! moves values across the JS boundary. `node/index.js` wraps these classes into the package's
//! API (`node/index.d.ts`) and decodes Arrow IPC with apache-arrow.
//!
//! Every call that waits on the server is an `async fn` on napi's tokio runtime, where
//! `quiver_client::AsyncConnection` runs the blocking client on tokio's blocking pool: the JS
//! thread never waits on a socket. What crosses the boundary is bounded: eager results have a
//! row or byte limit and fail with a clear error beyond it ([`limits`]), streams hold one batch.
#![warn(missing_docs)]
// napi-derive registers the exported free functions only outside `cfg(test)`, so a test-cfg
// check (clippy --all-targets) sees them unused.
#![cfg_attr(test, allow(dead_code))]

mod batches;
mod columns;
mod connection;
mod error;
mod inserters;
mod ipc;
pub mod limits;
mod row_inserter;
mod server;
mod staged;
mod stream;
mod values;
