//! The quiver server: DuckDB, with quiver's extension loaded, serving `quiver.server` 1.0.0
//! (`quiver-server-protocol`) on the vgi-rpc v1 spine (`quiver-rpc`) over TCP and Unix sockets,
//! shared memory negotiated per connection as the spine does it, and Arrow Flight SQL over gRPC.
//!
//! The DuckDB side is C++ (`extension/src/server_*.cpp`) behind the operations table of
//! `extension/include/quiver_server.h`; this crate is everything else:
//!
//! - [`ffi`]: that C ABI, mirrored, and `quiver_serve_start` / `quiver_serve_stop`;
//! - [`duck`]: safe handles over the operations (session, prepared statement, cursor);
//! - [`server`]: listeners, one thread per connection, limits, the stop;
//! - [`admission`]: connections before they authenticate (a deadline, a pool per door);
//! - [`session`]: one connection's session and the registry `cancel` and the stop use;
//! - [`auth`]: the token, and every door's check of credentials, slowed per peer by [`throttle`];
//! - [`events`] and [`metrics`]: the log on stderr, and the numbers `metrics_http` serves;
//! - [`flight_sql`]: the Flight SQL front door (gRPC) on the same sessions, token and stop;
//! - [`service`]: the methods, with `query.rs` (result streams), `insert.rs` (all-or-nothing
//!   inserts, fed through `insert_queue.rs`) and `catalog.rs` (`tables`).
//!
//! Started from SQL (`SELECT * FROM quiver_serve('tcp://127.0.0.1:0')`), or by the host program
//! `python -m quiver.serve` behind `./quiver server`.
#![warn(missing_docs)]

pub mod admission;
pub mod auth;
mod catalog;
pub mod duck;
pub mod events;
#[allow(missing_docs)]
pub mod ffi;
pub mod flight_sql;
mod insert;
mod insert_queue;
mod insert_types;
pub mod metrics;
mod metrics_http;
mod query;
pub mod server;
pub mod service;
pub mod session;
pub mod throttle;
