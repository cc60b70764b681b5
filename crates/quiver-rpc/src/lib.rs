//! vgi-rpc v1 compatible RPC over Arrow IPC: a server that hosts a [`Service`]
//! and a [`Client`] that calls one, over any [`quiver_transport`] connection, with
//! large batches routed through shared memory when the client owns a segment.
//!
//! Method kinds: unary (one request, one reply), producer streams (the client
//! ticks, the server emits one batch per tick until it finishes) and exchange
//! streams (one output batch per input batch), each optionally preceded by a
//! header. Errors and logs travel as zero-row batches; see [`quiver_wire`].
//!
//! Defining and serving a method takes a few lines:
//!
//! ```
//! use arrow_schema::DataType;
//! use quiver_rpc::{field, reply, Method, Server, ServerConfig, Service};
//!
//! let service = Service::new("Calculator", "1.0.0").with(Method::unary(
//!     "add",
//!     vec![field("a", DataType::Float64, false), field("b", DataType::Float64, false)],
//!     Some(field("result", DataType::Float64, false)),
//!     |params, _ctx| Ok(reply::f64(params.f64("a")? + params.f64("b")?)),
//! ));
//! let server = Server::new(service, ServerConfig::default());
//! // quiver_rpc::serve::serve_stdio(&server) in a worker's main.
//! # let _ = server;
//! ```
#![warn(missing_docs)]

pub mod client;
pub mod conform;
mod context;
pub mod errors;
pub mod http;
mod link;
mod method;
mod output;
mod params;
mod protocol_hash;
pub mod reflection;
pub mod reply;
pub mod serve;
mod server;
mod service;
mod shm_route;
mod stats;
pub mod stream_call;

pub use client::{Client, LogSink, RpcError, LOGS_KEPT_MAX};
pub use context::CallContext;
pub use link::ConnectionError;
pub use method::{
    field, Body, Method, StreamBody, StreamKind, StreamOutput, StreamSetup, StreamState, UnaryBody,
};
pub use output::OutputSpace;
pub use params::Params;
pub use protocol_hash::{protocol_hash, type_token};
pub use quiver_shm::{OutputBuffer, OutputRegion};
pub use server::{Admission, Guard, Server, ServerConfig, SessionEnd, UNADMITTED_BODY_BYTES_MAX};
pub use service::{major_minor, Service};
pub use shm_route::{batch_bytes, ShmRoute};
pub use stats::ShmStats;
pub use stream_call::{ClientStream, StreamCall, TICK_BYTES_AHEAD_MAX};
