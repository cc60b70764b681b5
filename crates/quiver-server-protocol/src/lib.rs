//! The quiver server's protocol, `quiver.server` 1.0.0: what a client and the server (DuckDB with
//! quiver's extension serving) agree on, on the vgi-rpc v1 spine (`quiver-rpc`).
//!
//! A connection is one session on its own DuckDB connection: it starts with [`methods::CONNECT`]
//! (the token, when the listener requires one), then runs statements. Transactions are SQL
//! (`BEGIN` / `COMMIT` / `ROLLBACK` through [`methods::EXECUTE`]) and span calls on the connection;
//! closing the connection rolls back what it left open.
//!
//! - [`methods`]: every method, its parameter schema and its reply, in one table.
//! - [`session`]: what `connect` answers ([`SessionInfo`]).
//! - [`insert`]: the insert handshake (modes, the commit marker, the acknowledgement batch).
//! - [`parameters`]: statement parameters and schemas nested in `binary` values.
//! - [`errors`]: the error types a client reads.
//! - [`address`]: `tcp://host:port` and `unix:///path`, parsed in one place.
//! - [`limits`]: defaults and bounds both sides check.
//!
//! Nothing here knows about DuckDB, sockets or threads.
#![warn(missing_docs)]

pub mod address;
pub mod errors;
pub mod insert;
pub mod limits;
pub mod methods;
pub mod parameters;
pub mod session;

pub use address::Address;
pub use insert::InsertMode;
pub use session::SessionInfo;

/// The protocol name requests carry in `vgi_rpc.protocol`.
pub const PROTOCOL_NAME: &str = "quiver.server";
/// The protocol version both sides speak; requests must match major.minor.
pub const PROTOCOL_VERSION: &str = "1.0.0";
