//! Bounds on what an eager call may hand to JS. Beyond them a call fails and names the streaming
//! call to use instead; nothing is collected past the limit.

use napi_derive::napi;

/// Rows `executeQuery` returns as objects unless told otherwise: a million small row objects
/// are a few hundred MB of V8 heap.
#[napi]
pub const ROWS_MAX_DEFAULT: u32 = 1_000_000;
/// The most rows `executeQuery` may be allowed: beyond this the default V8 heap (4 GB) runs out
/// before the result is built.
#[napi]
pub const ROWS_MAX: u32 = 10_000_000;
/// Rows `executeQueryColumnar` returns unless told otherwise (typed arrays live outside the V8
/// heap, but strings do not).
pub const COLUMNAR_ROWS_MAX_DEFAULT: u32 = 50_000_000;
/// The most rows `executeQueryColumnar` may be allowed.
pub const COLUMNAR_ROWS_MAX: u32 = 500_000_000;
/// Bytes of Arrow IPC `executeQueryToArrow` returns unless told otherwise.
pub const IPC_BYTES_MAX_DEFAULT: f64 = (2u64 << 30) as f64;
/// The most bytes one Node `Buffer` may hold on every supported Node version (2^32 - 1 on
/// Node 20).
pub const IPC_BYTES_MAX: f64 = u32::MAX as f64;
/// Rows a `RowInserter` converts on the JS thread before handing them to the insert's task.
pub const ROW_CHUNK_ROWS: usize = 8192;
/// Chunks queued between the JS thread and the insert's task; a full queue makes `addRow` wait
/// for the server (backpressure) instead of buffering without bound.
pub const ROW_CHUNKS_QUEUED: usize = 4;

/// `requested` checked against `1..=max`, or `default` when absent.
pub fn check_rows(requested: Option<u32>, default: u32, max: u32, name: &str) -> napi::Result<u32> {
    let rows = requested.unwrap_or(default);
    if rows == 0 || rows > max {
        return Err(napi::Error::from_reason(format!(
            "{name} must be in 1..={max}, not {rows}"
        )));
    }
    Ok(rows)
}
