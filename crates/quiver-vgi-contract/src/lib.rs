//! The vgi.v2 contract (protocol version 2.2.0, as spoken by vgi-python 0.47.0): everything the
//! engine (`quiver-duckdb`) and a worker (`quiver-vgi`) must agree on, stated once.
//!
//! - [`schemas`]: the Arrow schema of every dataclass, field for field.
//! - [`row`]: one-row batches, the way every dataclass travels.
//! - [`ipc`]: Arrow nested inside a `binary` value (a whole stream, or a bare schema message).
//! - [`requests`]: `BindRequest` and `InitRequest`; [`arguments`]: the raw `Arguments` value.
//! - [`aggregate`]: aggregate functions' all-unary exchange (bind, update, combine, finalize,
//!   destructor) and its nested batches.
//! - [`global_init`]: `GlobalInitResponse`, the header of every `init` stream.
//! - [`filter_container`]: the `vgi.filters.v2` container (engine encodes, worker parses).
//! - [`splits`]: split scans (`table_function_plan`: plan pages, splits, the token envelope).
//! - [`buffering`]: buffered table functions (`table_buffering_process`/`_combine`/`_destructor`).
//! - [`status`]: the table-in-out `vgi.status` handshake keys.
//! - [`methods`]: the RPC method names; [`arg_metadata`]: the field metadata describing parameters.
//! - [`enums`]: enum members that travel by name (function type, catalog object type, init phase).
//! - [`errors`]: the error types a peer reads, named as vgi-python names them.
//! - [`limits`]: bounds on what a peer may send.
//! - [`dialects`]: the older contracts the engine still speaks (vgi-python 0.30 to 0.45).
//!
//! Nothing here knows about processes, transports or function bodies.
#![warn(missing_docs)]

pub mod aggregate;
pub mod arg_metadata;
pub mod arguments;
pub mod buffering;
pub mod dialects;
pub mod enums;
pub mod errors;
pub mod filter_container;
pub mod global_init;
pub mod ipc;
pub mod limits;
pub mod methods;
pub mod requests;
pub mod row;
pub mod schemas;
pub mod splits;
pub mod status;

pub use arguments::{int64_value, utf8_value, RawArguments};
pub use dialects::Dialect;
pub use global_init::GlobalInitResponse;
pub use requests::{BindRequest, InitRequest};
pub use row::{RowBuilder, RowReader};
pub use status::{CONTINUE, HAVE_MORE_OUTPUT, STATUS_KEY};

/// The protocol name requests carry in `vgi_rpc.protocol`.
pub const PROTOCOL_NAME: &str = "vgi.v2";
/// The protocol version both sides speak; requests must match major.minor.
pub const PROTOCOL_VERSION: &str = "2.2.0";
