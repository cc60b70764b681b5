//! Table-in-out functions: per DuckDB thread, an INPUT exchange stream (its own execution and
//! substream id) fed the input table batch by batch — a batch may be answered in several parts
//! (`HAVE_MORE_OUTPUT` / CONTINUE) — then, for functions with a finalize, a FINALIZE producer on
//! the same connection (where the INPUT phase left its state).

use quiver_vgi_contract::enums::init_phase;
use std::ffi::c_char;

use crate::bind::Bound;
use crate::calls::{Input, StreamHandle};
use crate::ffi::{guard_interruptible, handle, write_out, Failure, Interrupt, Outcome};
use crate::stream::Stream;

/// 16 random bytes (no weaker fallback: see `quiver_secret::random`).
fn substream_id() -> Vec<u8> {
    quiver_secret::random::bytes::<16>().to_vec()
}

/// Opens the INPUT stream of a table-in-out call.
pub fn start(bound: &Bound) -> Outcome<StreamHandle> {
    let input = bound
        .input_schema
        .clone()
        .ok_or_else(|| Failure::invalid("a table-in-out call is bound with its input schema"))?;
    let substream = substream_id();
    let mut init = bound.init_request();
    init.phase = Some(init_phase::INPUT.into());
    init.substream_id = Some(substream.clone());
    let during = format!("the input of {}", bound.call_name());
    let stream = Stream::open(&bound.attached.worker, &init.encode(), during)?
        .expecting(bound.output_schema.clone());
    let finalize = bound.desc().has_finalize.then(|| {
        let mut finalize = bound.init_request();
        finalize.phase = Some(init_phase::FINALIZE.into());
        finalize.substream_id = Some(substream);
        finalize.execution_id = Some(stream.header.execution_id.clone());
        finalize.init_opaque_data = stream.header.opaque_data.clone();
        finalize.encode()
    });
    let mut handle = StreamHandle::new(stream, Some(Input::new(input, false)?));
    handle.finalize = finalize;
    Ok(handle)
}

/// Opens the INPUT stream of a table-in-out call (one per thread).
///
/// # Safety
/// `bound` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_in_out_start(
    bound: *const Bound,
    interrupt: Interrupt,
    out: *mut *mut StreamHandle,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let bound = unsafe { handle(bound, "bind")? };
        let stream = start(bound)?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, Box::into_raw(Box::new(stream)), "out") }
    })
}
