//! Scalar functions: one exchange stream per DuckDB thread; every input chunk's columns go in,
//! one `result` column with the same row count comes out. Constant arguments went once, at bind.

use std::ffi::c_char;

use crate::bind::Bound;
use crate::calls::{Input, StreamHandle};
use crate::ffi::{guard_interruptible, handle, write_out, Failure, Interrupt, Outcome};
use crate::stream::Stream;

/// Opens the stream of a scalar call.
pub fn start(bound: &Bound) -> Outcome<StreamHandle> {
    let input = bound
        .input_schema
        .clone()
        .ok_or_else(|| Failure::invalid("a scalar call is bound with its input schema"))?;
    let during = format!("a call of {}", bound.call_name());
    let stream = Stream::open(
        &bound.attached.worker,
        &bound.init_request().encode(),
        during,
    )?
    .expecting(bound.output_schema.clone());
    Ok(StreamHandle::new(stream, Some(Input::new(input, true)?)))
}

/// Opens the exchange stream of a scalar call (one per thread).
///
/// # Safety
/// `bound` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_scalar_start(
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
