//! Bounds on what a long-lived worker keeps: executions, stashed states, buffered output.
//! The bounds on what a peer can send are the contract's and are re-exported here, so
//! `quiver_vgi::limits` names every limit a worker runs under.

pub use quiver_vgi_contract::limits::*;

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

/// Stale cross-process work files removed per primary init (stdio mode), so a
/// sweep never turns into a long pause.
pub const WORK_FILES_SWEEP_MAX: usize = 64;

/// Aggregate executions whose states one process keeps at once. The oldest is dropped (with a
/// warning) when a new bind would exceed this, so an engine that dies before its destructor
/// cannot grow a long-lived worker without bound.
pub const AGGREGATE_EXECUTIONS_MAX: usize = 1024;

/// Groups one aggregate execution may hold; past it an update fails with a clear error.
pub const AGGREGATE_GROUPS_MAX: usize = 1 << 24;
