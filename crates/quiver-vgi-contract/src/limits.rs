//! Bounds on what a vgi.v2 peer can send: both sides check them where the value enters, so a
//! request that exceeds one is answered with a clear error, never by allocating first.

/// Largest nested IPC stream (a dataclass, the arguments, a filter batch) decoded
/// from inside a request. The biggest legitimate one is a filter document with
/// its payload (16 MiB by the filter spec) plus framing.
pub const NESTED_IPC_BYTES_MAX: usize = 24 << 20;

/// Largest serialized schema message (`input_schema`, `output_schema`).
pub const SCHEMA_MESSAGE_BYTES_MAX: usize = 1 << 20;

/// Most fields in a schema a function binds to or produces.
pub const SCHEMA_FIELDS_MAX: usize = 4096;

/// Most arguments (positional plus named) in one call.
pub const ARGUMENTS_MAX: usize = 256;

/// Filter v2 document: UTF-8 JSON bytes.
pub const FILTER_JSON_BYTES_MAX: usize = 1 << 20;
/// Filter v2 document: nesting depth of expressions.
pub const FILTER_DEPTH_MAX: usize = 64;
/// Filter v2 document: expression nodes across all predicates.
pub const FILTER_NODES_MAX: usize = 10_000;
/// Filter v2 document: predicates in one snapshot.
pub const FILTER_PREDICATES_MAX: usize = 1024;
/// Filter v2 document: bytes in a predicate id.
pub const FILTER_ID_BYTES_MAX: usize = 128;
/// Filter v2 `in` node: candidate values in one literal set.
pub const FILTER_IN_SET_VALUES_MAX: usize = 1 << 16;
/// Filter v2 container: bytes of the literal payload columns.
pub const FILTER_PAYLOAD_BYTES_MAX: usize = 16 << 20;

/// What `max_workers` means when a function sets no limit (vgi-python's value).
pub const MAX_WORKERS_UNBOUNDED: i64 = 99_999;
