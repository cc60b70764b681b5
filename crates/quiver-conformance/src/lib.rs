//! vgi-rpc's `ConformanceService` (protocol version 2.0.0) on quiver's RPC spine.
//!
//! vgi-rpc ships a conformance suite (`vgi-rpc-test`) that drives a worker through
//! every wire feature: each scalar and nested type, defaults, logs, errors,
//! producer and exchange streams with headers, cancel, large payloads and shared
//! memory. Passing it against this worker is quiver's proof of wire compatibility.

mod build;
mod headers;
mod secondary;
mod sessions;
mod sized;
mod stream_kit;
mod streams;
mod types;
mod unary;
mod wide;

use quiver_rpc::Service;

pub use secondary::{secondary_service, SECONDARY_PROTOCOL_NAME};

/// The protocol name the suite addresses.
pub const PROTOCOL_NAME: &str = "ConformanceService";
/// The protocol version the suite sends.
pub const PROTOCOL_VERSION: &str = "2.0.0";

/// The conformance service with every method of the protocol.
pub fn conformance_service() -> Service {
    let mut service = Service::new(PROTOCOL_NAME, PROTOCOL_VERSION);
    unary::register(&mut service);
    streams::register(&mut service);
    wide::register(&mut service);
    sized::register(&mut service);
    sessions::register(&mut service);
    service
}
