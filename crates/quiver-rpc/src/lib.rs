//! vgi-rpc v1 compatible RPC over Arrow IPC: a server that hosts a [`Service`]
//! and a [`Client`] that calls one, over any [`quiver_transport`] connection, with
//! large batches routed through shared memory when the client owns a segment.
//!
//! Method kinds: unary (one request, one reply), producer streams (the client
//! ticks, the server emits one batch per tick until it finishes) and exchange
//! streams (one output batch per input batch), each optionally preceded by a
//! header. Errors and logs travel as zero-row batches; see [`quiver_wire`].
#![warn(missing_docs)]

pub mod client;
mod context;
pub mod errors;
mod method;
mod params;
pub mod serve;
mod server;
mod service;
mod shm_route;
mod stats;

pub use client::{Client, ClientError, StreamCall};
pub use context::CallContext;
pub use method::{field, Body, Method, StreamBody, StreamOutput, StreamSetup, StreamState, UnaryBody};
pub use params::Params;
pub use server::{Server, ServerConfig, SessionEnd};
pub use service::{major_minor, Service};
pub use shm_route::{batch_bytes, ShmRoute};
pub use stats::ShmStats;
