//! Aggregate calls: vgi.v2's all-unary exchange (see `quiver_vgi_contract::aggregate`).
//!
//! DuckDB's state for a group is only an `int64` id handed out here; the worker keeps the real
//! state under the `execution_id` its `aggregate_bind` answered. Every call of one execution goes
//! over one connection, pinned from bind to free (a stdio worker is a process per connection, and
//! the state lives in that process). DuckDB's threads update and combine in parallel; their calls
//! take turns on that connection. Freeing the handle sends `aggregate_destructor` (best effort,
//! bounded) and returns the connection to the pool.

use std::ffi::c_char;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::ClientError;
use quiver_transport::fd_io;
use quiver_vgi_contract::aggregate::{self as contract, BatchRequest, Target};
use quiver_vgi_contract::RawArguments;

use crate::arrow_c;
use crate::attached::Attached;
use crate::catalog::{result_bytes, Kind};
use crate::ffi::{
    guard, guard_interruptible, handle, write_out, Failure, FailureCode, Interrupt, Outcome,
};
use crate::stream::{request_batch, same_layout};
use crate::worker::Conn;

/// How long freeing an aggregate waits for the worker to drop its state.
pub const DESTRUCTOR_DEADLINE: Duration = Duration::from_secs(2);
/// Most group ids one execution hands out (DuckDB makes one per group and thread, and more in
/// window segment trees); past it the query fails rather than the worker's memory.
pub const GROUPS_MAX: i64 = 1 << 31;

/// A bound aggregate call: one execution on one pinned connection.
pub struct Aggregate {
    attached: Arc<Attached>,
    target: Target,
    /// The value columns' schema as bound (`None`: a function of no columns).
    input: Option<(SchemaRef, FFI_ArrowSchema)>,
    output_schema: SchemaRef,
    /// The connection holding the state; `None` once it broke.
    conn: Mutex<Option<Conn>>,
    next_group: AtomicI64,
}

impl Aggregate {
    fn name(&self) -> String {
        format!("{}()", self.target.function_name)
    }

    /// One call on the pinned connection; the worker's own error keeps the connection (and the
    /// state), any other failure loses both.
    fn call(&self, method: &str, request: &[u8]) -> Outcome<Vec<u8>> {
        let during = format!("{method} of {}", self.name());
        let worker = &self.attached.worker;
        let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut conn) = slot.take() else {
            return Err(Failure::new(
                FailureCode::Worker,
                format!(
                    "{}: the connection holding the state of {} was lost earlier in this query",
                    worker.label(),
                    self.name()
                ),
            ));
        };
        match conn.client.call(method, &request_batch(request)) {
            Ok(reply) => {
                *slot = Some(conn);
                result_bytes(reply, method).map_err(|e| {
                    Failure::new(
                        FailureCode::Worker,
                        format!(
                            "{}: unreadable answer to {during}: {}",
                            worker.label(),
                            e.message
                        ),
                    )
                })
            }
            Err(ClientError::Remote(report)) => {
                *slot = Some(conn);
                Err(Failure::new(
                    FailureCode::Remote,
                    format!("{during}: {}: {}", report.error_type, report.message),
                ))
            }
            Err(error) => Err(worker.broken(conn, &error, &during)),
        }
    }

    fn request(&self, batch: RecordBatch, output_schema: Option<SchemaRef>) -> BatchRequest {
        BatchRequest {
            target: self.target.clone(),
            batch,
            output_schema,
        }
    }

    /// A fresh group id.
    pub fn new_group(&self) -> Outcome<i64> {
        let id = self.next_group.fetch_add(1, Ordering::Relaxed);
        if id >= GROUPS_MAX {
            return Err(Failure::invalid(format!(
                "{}: more than {GROUPS_MAX} aggregate states in one query",
                self.name()
            )));
        }
        Ok(id)
    }

    /// Folds `values` (the bound input columns; `None` for no columns) into `groups`, row by row.
    pub fn update(&self, groups: Vec<i64>, values: Option<RecordBatch>) -> Outcome<()> {
        let rows = groups.len();
        let mut fields = vec![Field::new(contract::GROUP_COLUMN, DataType::Int64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(groups))];
        if let Some(values) = values {
            if values.num_rows() != rows {
                return Err(Failure::invalid(format!(
                    "update: {} group ids for {} rows",
                    rows,
                    values.num_rows()
                )));
            }
            fields.extend(values.schema().fields().iter().map(|f| f.as_ref().clone()));
            columns.extend(values.columns().iter().cloned());
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        let request = self.request(batch, None).encode(contract::METHOD_UPDATE);
        self.call(contract::METHOD_UPDATE, &request).map(|_| ())
    }

    /// Merges each source group into its target.
    pub fn combine(&self, sources: Vec<i64>, targets: Vec<i64>) -> Outcome<()> {
        let batch = contract::ids_batch(&contract::MERGE_SCHEMA, vec![sources, targets]);
        let request = self.request(batch, None).encode(contract::METHOD_COMBINE);
        self.call(contract::METHOD_COMBINE, &request).map(|_| ())
    }

    /// One result per group, in order, checked against the bound output.
    pub fn finalize(&self, groups: Vec<i64>) -> Outcome<RecordBatch> {
        let rows = groups.len();
        let batch = contract::ids_batch(&contract::GROUP_IDS_SCHEMA, vec![groups]);
        let request = self
            .request(batch, Some(self.output_schema.clone()))
            .encode(contract::METHOD_FINALIZE);
        let answer = self.call(contract::METHOD_FINALIZE, &request)?;
        let wrong = |why: String| {
            Failure::new(
                FailureCode::Worker,
                format!("{}: {} {why}", self.attached.worker.label(), self.name()),
            )
        };
        let result = contract::decode_finalize_response(&answer).map_err(|e| wrong(e.message))?;
        if result.num_rows() != rows || result.num_columns() != 1 {
            return Err(wrong(format!(
                "finalized {} group(s) into {} row(s) of {} column(s); one row per group, one column, is required",
                rows,
                result.num_rows(),
                result.num_columns()
            )));
        }
        let want = self.output_schema.field(0);
        if !same_layout(result.column(0).data_type(), want.data_type()) {
            return Err(wrong(format!(
                "answered {}, but bound to {}",
                result.column(0).data_type(),
                want.data_type()
            )));
        }
        Ok(RecordBatch::try_new(
            self.output_schema.clone(),
            vec![result.column(0).clone()],
        )?)
    }
}

impl Drop for Aggregate {
    fn drop(&mut self) {
        let slot = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            return;
        }
        let batch = contract::ids_batch(&contract::GROUP_IDS_SCHEMA, vec![vec![0]]);
        let request = self
            .request(batch, None)
            .encode(contract::METHOD_DESTRUCTOR);
        let done = fd_io::with_deadline(DESTRUCTOR_DEADLINE, || {
            self.call(contract::METHOD_DESTRUCTOR, &request)
        });
        let slot = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
        if let (
            Ok(_)
            | Err(Failure {
                code: FailureCode::Remote,
                ..
            }),
            Some(conn),
        ) = (done, slot.take())
        {
            self.attached.worker.checkin(conn);
        }
    }
}

/// `aggregate_bind` on a connection that then stays with the execution.
pub fn bind(
    attached: &Arc<Attached>,
    function: usize,
    arguments: RawArguments,
    input_schema: Option<SchemaRef>,
) -> Outcome<Aggregate> {
    let desc = attached.function(function)?;
    if desc.kind != Kind::Aggregate {
        return Err(Failure::invalid(format!(
            "{}() is not an aggregate",
            desc.name
        )));
    }
    let target = Target {
        function_name: desc.name.clone(),
        execution_id: Vec::new(),
        attach_opaque_data: Some(attached.found.attach_opaque_data.clone()),
        schema_path: Some(desc.schema_path.clone()),
    };
    let request = contract::BindRequest {
        target: target.clone(),
        arguments,
        input_schema: input_schema.clone(),
    };
    let worker = &attached.worker;
    let during = format!("bind of {}()", desc.name);
    let mut conn = worker.checkout()?;
    let reply = match conn
        .client
        .call(contract::METHOD_BIND, &request_batch(&request.encode()))
    {
        Ok(reply) => reply,
        Err(error) => return Err(worker.failure(conn, &error, &during)),
    };
    let unreadable = |why: String| {
        Failure::new(
            FailureCode::Worker,
            format!("{}: unreadable answer to {during}: {why}", worker.label()),
        )
    };
    let decoded = result_bytes(reply, contract::METHOD_BIND)
        .and_then(|bytes| contract::decode_bind_response(&bytes));
    let (output_schema, execution_id) = match decoded {
        Ok(answer) => answer,
        Err(e) => {
            worker.checkin(conn);
            return Err(unreadable(e.message));
        }
    };
    if output_schema.fields().len() != 1 {
        worker.checkin(conn);
        return Err(unreadable(format!(
            "an aggregate's output has one column, got {}",
            output_schema.fields().len()
        )));
    }
    let input = match input_schema {
        Some(schema) => {
            let ffi = FFI_ArrowSchema::try_from(schema.as_ref())?;
            Some((schema, ffi))
        }
        None => None,
    };
    Ok(Aggregate {
        attached: attached.clone(),
        target: Target {
            execution_id,
            ..target
        },
        input,
        output_schema,
        conn: Mutex::new(Some(conn)),
        next_group: AtomicI64::new(0),
    })
}

/// The group ids behind `ids[..count]`.
///
/// # Safety
/// `ids` valid for `count` reads (or null when `count` is 0).
unsafe fn ids_of(ids: *const i64, count: usize, what: &str) -> Outcome<Vec<i64>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ids.is_null() {
        return Err(Failure::invalid(format!("{what} is null")));
    }
    // SAFETY: by this function's contract.
    Ok(unsafe { std::slice::from_raw_parts(ids, count) }.to_vec())
}

/// Binds aggregate `function` of `worker`: `arguments_schema`/`arguments` as `quiver_bind_call`
/// (the constant arguments), `input_schema` the value columns (null: none).
///
/// # Safety
/// As `quiver_bind_call`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiver_aggregate_bind(
    worker: *const Attached,
    function: usize,
    arguments_schema: *const FFI_ArrowSchema,
    arguments: *mut FFI_ArrowArray,
    input_schema: *const FFI_ArrowSchema,
    interrupt: Interrupt,
    out: *mut *mut Aggregate,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        if worker.is_null() {
            return Err(Failure::invalid("worker is null"));
        }
        // SAFETY: a live handle from quiver_worker_open: borrow one more reference.
        let attached = unsafe {
            Arc::increment_strong_count(worker);
            Arc::from_raw(worker)
        };
        let raw = if arguments.is_null() {
            RawArguments::default()
        } else {
            // SAFETY: by this function's contract.
            let schema = unsafe { arguments_schema.as_ref() }
                .ok_or_else(|| Failure::invalid("arguments_schema is null"))?;
            // SAFETY: by this function's contract.
            crate::bind::arguments_of(&unsafe {
                arrow_c::import_batch(arguments, schema, "arguments")?
            })?
        };
        let input = if input_schema.is_null() {
            None
        } else {
            // SAFETY: by this function's contract.
            Some(unsafe { arrow_c::import_schema(input_schema, "input_schema")? })
        };
        let bound = bind(&attached, function, raw, input)?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, Box::into_raw(Box::new(bound)), "out") }
    })
}

/// The bound one-column output schema (the caller releases it).
///
/// # Safety
/// `aggregate` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_output_schema(
    aggregate: *const Aggregate,
    out: *mut FFI_ArrowSchema,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let aggregate = unsafe { handle(aggregate, "aggregate")? };
        // SAFETY: by this function's contract.
        unsafe { arrow_c::export_schema(&aggregate.output_schema, out) }
    })
}

/// A fresh group id into `*out` (a state's whole content on DuckDB's side).
///
/// # Safety
/// `aggregate` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_new_group(
    aggregate: *const Aggregate,
    out: *mut i64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let aggregate = unsafe { handle(aggregate, "aggregate")? };
        let id = aggregate.new_group()?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, id, "out") }
    })
}

/// `aggregate_update`: row `i` of `values` (a batch of the bound input schema, taken; null when
/// the function has no value columns) belongs to group `groups[i]`.
///
/// # Safety
/// `aggregate` a live handle; `groups` valid for `count` reads; `values` null or a valid array.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_update(
    aggregate: *const Aggregate,
    groups: *const i64,
    count: usize,
    values: *mut FFI_ArrowArray,
    interrupt: Interrupt,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let aggregate = unsafe { handle(aggregate, "aggregate")? };
        // SAFETY: by this function's contract.
        let groups = unsafe { ids_of(groups, count, "groups")? };
        let values = match (&aggregate.input, values.is_null()) {
            (_, true) => None,
            (Some((_, ffi)), false) => {
                // SAFETY: by this function's contract.
                Some(unsafe { arrow_c::import_batch(values, ffi, "values")? })
            }
            (None, false) => {
                return Err(Failure::invalid(
                    "values given to an aggregate bound without input columns",
                ))
            }
        };
        aggregate.update(groups, values)
    })
}

/// `aggregate_combine`: merges `sources[i]` into `targets[i]`.
///
/// # Safety
/// `aggregate` a live handle; `sources`/`targets` valid for `count` reads each.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_combine(
    aggregate: *const Aggregate,
    sources: *const i64,
    targets: *const i64,
    count: usize,
    interrupt: Interrupt,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let aggregate = unsafe { handle(aggregate, "aggregate")? };
        // SAFETY: by this function's contract.
        let (sources, targets) = unsafe {
            (
                ids_of(sources, count, "sources")?,
                ids_of(targets, count, "targets")?,
            )
        };
        aggregate.combine(sources, targets)
    })
}

/// `aggregate_finalize`: one row per group of `groups`, into `out` (a struct array of the output
/// schema; the caller releases it).
///
/// # Safety
/// `aggregate` a live handle; `groups` valid for `count` reads; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_finalize(
    aggregate: *const Aggregate,
    groups: *const i64,
    count: usize,
    interrupt: Interrupt,
    out: *mut FFI_ArrowArray,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let aggregate = unsafe { handle(aggregate, "aggregate")? };
        // SAFETY: by this function's contract.
        let groups = unsafe { ids_of(groups, count, "groups")? };
        let result = aggregate.finalize(groups)?;
        // SAFETY: by this function's contract.
        unsafe { arrow_c::export_batch(result, out) }
    })
}

/// Frees an aggregate: `aggregate_destructor` (best effort, bounded), its connection back to the
/// pool.
///
/// # Safety
/// `aggregate` null or a handle from [`quiver_aggregate_bind`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_aggregate_free(aggregate: *mut Aggregate) {
    if !aggregate.is_null() {
        // SAFETY: by this function's contract.
        drop(unsafe { Box::from_raw(aggregate) });
    }
}
