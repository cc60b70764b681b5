//! Bounds on everything a peer (or a long-lived worker) can make grow.
//!
//! Each limit is checked where the value enters: a request that exceeds one is
//! answered with a clear error, never by allocating first.

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

/// Executions whose shared work counter is live at once in one process (unix
/// socket mode). A primary init beyond this is refused, not queued.
pub const EXECUTIONS_LIVE_MAX: usize = 4096;

/// Table-in-out states kept between an INPUT stream's end and its FINALIZE. The
/// oldest is dropped (with a warning) when a new one would exceed this, so an
/// engine that never finalizes cannot grow the worker without bound.
pub const FINALIZE_STATES_MAX: usize = 1024;

/// Batches one table-in-out input (or one finalize) may produce; the rest of
/// them wait for CONTINUE ticks, so this bounds what a function buffers.
pub const OUTPUT_BATCHES_PER_INPUT_MAX: usize = 65_536;

/// Connections a table or table-in-out execution may fan out to: the runtime
/// `max_workers` a function can advertise.
pub const MAX_WORKERS_MAX: u32 = 1024;

/// What `max_workers` means when a function sets no limit (vgi-python's value).
pub const MAX_WORKERS_UNBOUNDED: i64 = 99_999;

/// Stale cross-process work files removed per primary init (stdio mode), so a
/// sweep never turns into a long pause.
pub const WORK_FILES_SWEEP_MAX: usize = 64;
