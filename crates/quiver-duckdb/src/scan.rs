//! Table functions: the primary `init` (header: execution id, max_workers), then one secondary
//! `init` per further DuckDB thread joining the same execution; every stream is a producer ticked
//! for batches. Projection (`projection_ids`) and filters (`pushdown_filters`) go into every init.
//! A function that declares `supports_splits` is planned instead (`splits.rs`): each thread
//! redeems splits from the plan until none is left.

use std::ffi::c_char;
use std::sync::Arc;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_schema::SchemaRef;
use quiver_vgi_contract::InitRequest;

use crate::arrow_c;
use crate::bind::Bound;
use crate::calls::StreamHandle;
use crate::ffi::{
    guard, guard_interruptible, handle, str_arg, write_out, Failure, Interrupt, Outcome,
};
use crate::splits::{self, SplitQueue};
use crate::stream::Stream;
use crate::worker::Worker;

/// A running table-function execution, which further threads join.
pub struct TableExecution {
    worker: Arc<Worker>,
    secondary_request: Vec<u8>,
    during: String,
    /// The columns every stream of the scan answers (projected).
    output: SchemaRef,
    /// Connections the worker allows for this execution (at least 1).
    pub max_workers: i64,
    /// A split scan: the splits every thread claims from.
    splits: Option<Arc<SplitQueue>>,
}

impl TableExecution {
    /// A secondary stream of this execution (another reader of its splits, for a split scan).
    pub fn join(&self) -> Outcome<StreamHandle> {
        if let Some(splits) = &self.splits {
            return Ok(StreamHandle::chained(splits.reader()));
        }
        let stream = Stream::open(&self.worker, &self.secondary_request, self.during.clone())?
            .expecting(self.output.clone());
        Ok(StreamHandle::new(stream, None))
    }
}

/// The primary init of a table call: `projection` (indices into the unprojected output; `None`
/// for all columns) and `filters` (an encoded filter batch) are sent where the function accepts
/// them.
pub fn start(
    bound: &Bound,
    projection: Option<Vec<i64>>,
    filters: Option<Vec<u8>>,
) -> Outcome<(TableExecution, StreamHandle)> {
    let desc = bound.desc();
    let (mut init, output) = primary_init(bound, projection, filters)?;
    let during = format!("the scan of {}", bound.call_name());
    let worker = bound.attached.worker.clone();
    if desc.supports_splits {
        let plan = splits::plan(init, bound, output.clone())?;
        let max_workers = plan.streams();
        let queue = SplitQueue::new(plan);
        let primary = StreamHandle::chained(queue.reader());
        let execution = TableExecution {
            worker,
            secondary_request: Vec::new(),
            during,
            output,
            max_workers,
            splits: Some(queue),
        };
        return Ok((execution, primary));
    }
    let primary = Stream::open(&worker, &init.encode(), during.clone())?.expecting(output.clone());
    init.execution_id = Some(primary.header.execution_id.clone());
    init.init_opaque_data = primary.header.opaque_data.clone();
    let execution = TableExecution {
        worker,
        secondary_request: init.encode(),
        during,
        output,
        max_workers: primary.header.max_workers.max(1),
        splits: None,
    };
    Ok((execution, StreamHandle::new(primary, None)))
}

/// The primary `init` of a table call, carrying `projection` and `filters` where the function
/// accepts them, and the (projected) columns every stream of the scan answers.
pub fn primary_init(
    bound: &Bound,
    projection: Option<Vec<i64>>,
    filters: Option<Vec<u8>>,
) -> Outcome<(InitRequest, SchemaRef)> {
    let desc = bound.desc();
    let mut init = bound.init_request();
    let mut output = bound.output_schema.clone();
    if desc.projection_pushdown {
        if let Some(ids) = &projection {
            output = projected(&output, ids)?;
        }
        init.projection_ids = projection;
    }
    if desc.filter_pushdown {
        init.pushdown_filters = filters;
    }
    Ok((init, output))
}

/// The columns a scan projected to `ids` answers, in `ids` order.
fn projected(output: &SchemaRef, ids: &[i64]) -> Outcome<SchemaRef> {
    let indices = ids
        .iter()
        .map(|&id| {
            usize::try_from(id)
                .ok()
                .filter(|&i| i < output.fields().len())
                .ok_or_else(|| Failure::invalid(format!("projection id {id} out of range")))
        })
        .collect::<Outcome<Vec<usize>>>()?;
    Ok(Arc::new(output.project(&indices)?))
}

/// Starts a table call. `projection_ids` (null: all columns) are indices into the unprojected
/// output, in output order. `filter_spec` (null: no filters) is a vgi.filters.v2 document whose
/// literals are the columns `value_<N>` of the one-row batch `filter_values` (taken; may be null
/// when there are none). Returns the execution (for secondary streams), the primary stream and the
/// number of streams the worker allows.
///
/// # Safety
/// Pointers valid as described; out-pointers valid for one write each.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiver_table_start(
    bound: *const Bound,
    projection_ids: *const i64,
    projection_count: usize,
    filter_spec: *const c_char,
    filter_values_schema: *const FFI_ArrowSchema,
    filter_values: *mut FFI_ArrowArray,
    interrupt: Interrupt,
    execution: *mut *mut TableExecution,
    primary: *mut *mut StreamHandle,
    max_workers: *mut i64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let bound = unsafe { handle(bound, "bind")? };
        let projection = (!projection_ids.is_null()).then(|| {
            // SAFETY: `projection_count` readable values by this function's contract.
            unsafe { std::slice::from_raw_parts(projection_ids, projection_count) }.to_vec()
        });
        let filters = if filter_spec.is_null() {
            None
        } else {
            // SAFETY: by this function's contract.
            let spec = unsafe { str_arg(filter_spec, "filter_spec")? };
            // SAFETY: a non-null schema pointer is readable by this function's contract.
            let schema = unsafe { filter_values_schema.as_ref() };
            let values = match (filter_values.is_null(), schema) {
                (false, Some(schema)) => {
                    // SAFETY: by this function's contract.
                    Some(unsafe { arrow_c::import_batch(filter_values, schema, "filter values")? })
                }
                _ => None,
            };
            Some(crate::filters::encode(spec, values)?)
        };
        let (started, stream) = start(bound, projection, filters)?;
        let allowed = started.max_workers;
        // SAFETY: by this function's contract.
        unsafe {
            write_out(max_workers, allowed, "max_workers")?;
            write_out(primary, Box::into_raw(Box::new(stream)), "primary")?;
            write_out(execution, Box::into_raw(Box::new(started)), "execution")
        }
    })
}

/// Opens a secondary stream of `execution` (another thread of the same scan).
///
/// # Safety
/// `execution` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_execution_join(
    execution: *const TableExecution,
    interrupt: Interrupt,
    out: *mut *mut StreamHandle,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let execution = unsafe { handle(execution, "execution")? };
        let stream = execution.join()?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, Box::into_raw(Box::new(stream)), "out") }
    })
}

/// Frees an execution (its streams live on independently).
///
/// # Safety
/// `execution` null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_execution_free(execution: *mut TableExecution) {
    let _ = guard(std::ptr::null_mut(), 0, || {
        if !execution.is_null() {
            // SAFETY: by this function's contract.
            drop(unsafe { Box::from_raw(execution) });
        }
        Ok(())
    });
}
