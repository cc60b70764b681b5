//! The one static library of quiver's DuckDB extension: it links the engine core and the server
//! together so their C ABIs (`extension/include/quiver_core.h`, `quiver_server.h`) land in one
//! archive with one copy of Rust's standard library. It adds no code of its own.
#![warn(missing_docs)]

// Referenced so both crates, and their exported `extern "C"` functions, are linked in.
pub use quiver_duckdb;
pub use quiver_server;
