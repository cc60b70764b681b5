//! Defaults and bounds of `quiver.server`. The server checks each bound where the value enters
//! (before allocating for it) and answers with [`crate::errors::limit`]; the client checks the
//! same bounds before sending.

/// Rows per output batch when the request does not say (large enough that per-batch costs vanish
/// next to the copy, small enough that a slow client holds little of the server's memory).
pub const BATCH_ROWS_DEFAULT: i64 = 1 << 17;
/// Most rows per output batch a request may ask for.
pub const BATCH_ROWS_MAX: i64 = 1 << 24;
/// Longest SQL text.
pub const SQL_BYTES_MAX: usize = 4 << 20;
/// Largest nested parameters stream.
pub const PARAMETERS_BYTES_MAX: usize = 64 << 20;
/// Most executions one `parameters` stream may ask for (its rows).
pub const PARAMETER_ROWS_MAX: usize = 1 << 20;
/// Largest schema message (an insert's schema, a prepared statement's result schema).
pub const SCHEMA_BYTES_MAX: usize = 1 << 20;
/// Most columns in a schema.
pub const SCHEMA_FIELDS_MAX: usize = 4096;
/// Most prepared statements one session keeps open.
pub const PREPARED_PER_SESSION_MAX: usize = 1024;
/// Longest token a client may present.
pub const TOKEN_BYTES_MAX: usize = 1024;
/// Longest identifier (table, schema, catalog, client name).
pub const IDENTIFIER_BYTES_MAX: usize = 1024;

/// Sessions served at once by default; more connections are refused until one closes.
pub const CONNECTIONS_DEFAULT: usize = 64;
/// Largest message (one IPC stream: a request, or one batch) the server reads by default.
pub const MESSAGE_BYTES_DEFAULT: u64 = 256 << 20;
/// Most bytes a client puts in one insert batch: larger batches are sent as slices of this size
/// (a quarter of [`MESSAGE_BYTES_DEFAULT`], so a slice with its framing always fits, and large
/// enough that the per-batch round trip vanishes). A single row larger than the server's message
/// limit is refused by the server with a `LimitExceededError` naming that limit.
pub const INSERT_BATCH_BYTES_MAX: usize = 64 << 20;
