//! `bind`: a function call's arguments (and input columns) to the worker, its output schema back.
//! The result is the `quiver_bind` handle every init of the call starts from.

use std::ffi::c_char;
use std::sync::Arc;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_vgi_contract::enums::function_type;
use quiver_vgi_contract::{
    ipc, methods, schemas, BindRequest, InitRequest, RawArguments, RowBuilder, RowReader,
};

use crate::arrow_c;
use crate::attached::Attached;
use crate::catalog::{result_bytes, FunctionDesc, Kind};
use crate::ffi::{
    guard, guard_interruptible, handle, write_out, Failure, FailureCode, Interrupt, Outcome,
};
use crate::stream::request_batch;

/// A bound call.
pub struct Bound {
    /// The worker and its catalog.
    pub attached: Arc<Attached>,
    /// Which function.
    pub function: usize,
    /// The arguments as sent.
    pub arguments: RawArguments,
    /// The input columns' schema (scalar, table-in-out).
    pub input_schema: Option<SchemaRef>,
    /// The unprojected output schema the worker answered.
    pub output_schema: SchemaRef,
    /// `BindResponse.opaque_data`, echoed on every init.
    pub opaque_data: Option<Vec<u8>>,
}

impl Bound {
    /// The function bound.
    pub fn desc(&self) -> &FunctionDesc {
        &self.attached.found.functions[self.function]
    }

    /// "numbers()", for messages.
    pub fn call_name(&self) -> String {
        format!("{}()", self.desc().name)
    }

    /// The `BindRequest` of this call (sent again inside every `InitRequest`).
    pub fn bind_request(&self) -> BindRequest {
        let desc = self.desc();
        BindRequest {
            function_name: desc.name.clone(),
            arguments: RawArguments {
                positional: self.arguments.positional.clone(),
                named: self.arguments.named.clone(),
            },
            function_type: match desc.kind {
                Kind::Scalar => function_type::SCALAR.into(),
                Kind::Table | Kind::TableInOut => function_type::TABLE.into(),
                Kind::TableBuffering => function_type::TABLE_BUFFERING.into(),
                Kind::Aggregate => quiver_vgi_contract::aggregate::FUNCTION_TYPE.into(),
            },
            input_schema: self.input_schema.clone(),
            attach_opaque_data: Some(self.attached.found.attach_opaque_data.clone()),
            schema_path: Some(desc.schema_path.clone()),
        }
    }

    /// A primary `InitRequest` for this call, to be completed by the kind.
    pub fn init_request(&self) -> InitRequest {
        InitRequest {
            bind_call: self.bind_request(),
            output_schema: self.output_schema.clone(),
            bind_opaque_data: self.opaque_data.clone(),
            projection_ids: None,
            pushdown_filters: None,
            phase: None,
            split_tokens: None,
            finalize_state_id: None,
            execution_id: None,
            init_opaque_data: None,
            substream_id: None,
        }
    }
}

/// Splits a one-row batch with columns `positional_<i>` / `named_<name>` into `RawArguments`.
pub fn arguments_of(batch: &RecordBatch) -> Outcome<RawArguments> {
    let mut positional: Vec<(usize, arrow_array::ArrayRef)> = Vec::new();
    let mut named = Vec::new();
    if batch.num_rows() != 1 {
        return Err(Failure::invalid(format!(
            "arguments: expected one row, got {}",
            batch.num_rows()
        )));
    }
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if let Some(index) = field.name().strip_prefix("positional_") {
            let index: usize = index
                .parse()
                .map_err(|_| Failure::invalid(format!("bad argument name {}", field.name())))?;
            positional.push((index, column.clone()));
        } else if let Some(name) = field.name().strip_prefix("named_") {
            named.push((name.to_string(), column.clone()));
        } else {
            return Err(Failure::invalid(format!(
                "bad argument name {}",
                field.name()
            )));
        }
    }
    positional.sort_by_key(|(i, _)| *i);
    if positional
        .iter()
        .enumerate()
        .any(|(want, (got, _))| want != *got)
    {
        return Err(Failure::invalid(
            "positional arguments must be numbered 0..n",
        ));
    }
    Ok(RawArguments {
        positional: positional.into_iter().map(|(_, v)| v).collect(),
        named,
    })
}

/// Calls `bind` on the worker.
pub fn bind(
    attached: &Arc<Attached>,
    function: usize,
    arguments: RawArguments,
    input_schema: Option<SchemaRef>,
) -> Outcome<Bound> {
    let desc = attached.function(function)?;
    let during = format!("bind of {}()", desc.name);
    let mut bound = Bound {
        attached: attached.clone(),
        function,
        arguments,
        input_schema,
        output_schema: Arc::new(arrow_schema::Schema::empty()),
        opaque_data: None,
    };
    let request = request_batch(&bound.bind_request().encode());
    let reply = attached
        .worker
        .with_conn(&during, |client| client.call(methods::BIND, &request))?;
    let unreadable = |why: String| {
        Failure::new(
            FailureCode::Worker,
            format!(
                "{}: unreadable answer to {during}: {why}",
                attached.worker.label()
            ),
        )
    };
    let bytes = result_bytes(reply, methods::BIND).map_err(|e| unreadable(e.message))?;
    let answer = ipc::decode_row(&bytes, "BindResponse").map_err(|e| unreadable(e.message))?;
    let row = RowReader::new(&answer, "BindResponse");
    let schema_bytes = row
        .bytes("output_schema")
        .map_err(|e| unreadable(e.message))?
        .ok_or_else(|| unreadable("no output_schema".into()))?;
    bound.output_schema =
        ipc::decode_schema(schema_bytes, "output_schema").map_err(|e| unreadable(e.message))?;
    bound.opaque_data = row
        .bytes("opaque_data")
        .map_err(|e| unreadable(e.message))?
        .map(<[u8]>::to_vec);
    if desc.kind == Kind::Scalar && bound.output_schema.fields().len() != 1 {
        return Err(unreadable(format!(
            "a scalar's output has one column, got {}",
            bound.output_schema.fields().len()
        )));
    }
    Ok(bound)
}

/// `table_function_cardinality`: `(estimate, max)`, each `None` when unknown (also when the
/// worker does not implement the method).
pub fn cardinality(bound: &Bound) -> Outcome<(Option<i64>, Option<i64>)> {
    let request = RowBuilder::new(schemas::CARDINALITY_REQUEST.clone())
        .bytes("bind_call", Some(&bound.bind_request().encode()))
        .bytes("bind_opaque_data", bound.opaque_data.as_deref())
        .finish();
    let during = format!("cardinality of {}", bound.call_name());
    let reply = match bound.attached.worker.with_conn(&during, |client| {
        client.call(
            methods::TABLE_FUNCTION_CARDINALITY,
            &request_batch(&ipc::encode_batch(&request)),
        )
    }) {
        Ok(reply) => reply,
        // Optional method: any worker-raised error reads as "unknown".
        Err(failure) if failure.code == FailureCode::Remote => return Ok((None, None)),
        Err(failure) => return Err(failure),
    };
    let Ok(bytes) = result_bytes(reply, methods::TABLE_FUNCTION_CARDINALITY) else {
        return Ok((None, None));
    };
    let Ok(answer) = ipc::decode_row(&bytes, "TableCardinality") else {
        return Ok((None, None));
    };
    let row = RowReader::new(&answer, "TableCardinality");
    Ok((
        row.int("estimate").ok().flatten(),
        row.int("max").ok().flatten(),
    ))
}

/// Binds function `index` of `worker`.
///
/// `arguments_schema`/`arguments`: a one-row struct batch with columns `positional_<i>` and
/// `named_<name>` (both null: no arguments); the array is taken, the schema borrowed.
/// `input_schema` (may be null): the input columns of a scalar or table-in-out call, borrowed.
///
/// # Safety
/// Pointers valid as described; `out` valid for one write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiver_bind_call(
    worker: *const Attached,
    function: usize,
    arguments_schema: *const FFI_ArrowSchema,
    arguments: *mut FFI_ArrowArray,
    input_schema: *const FFI_ArrowSchema,
    interrupt: Interrupt,
    out: *mut *mut Bound,
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
            arguments_of(&unsafe { arrow_c::import_batch(arguments, schema, "arguments")? })?
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

/// The unprojected output schema of a bound call (the caller releases it).
///
/// # Safety
/// `bound` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_bind_output_schema(
    bound: *const Bound,
    out: *mut FFI_ArrowSchema,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let bound = unsafe { handle(bound, "bind")? };
        // SAFETY: by this function's contract.
        unsafe { arrow_c::export_schema(&bound.output_schema, out) }
    })
}

/// The worker's row-count estimate and bound for a table call; -1 where unknown.
///
/// # Safety
/// `bound` a live handle; `estimate`/`max` valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn quiver_bind_cardinality(
    bound: *const Bound,
    interrupt: Interrupt,
    estimate: *mut i64,
    max: *mut i64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let bound = unsafe { handle(bound, "bind")? };
        let (e, m) = cardinality(bound)?;
        // SAFETY: by this function's contract.
        unsafe {
            write_out(estimate, e.unwrap_or(-1), "estimate")?;
            write_out(max, m.unwrap_or(-1), "max")
        }
    })
}

/// Frees a bound call.
///
/// # Safety
/// `bound` null or a handle from [`quiver_bind_call`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_bind_free(bound: *mut Bound) {
    if !bound.is_null() {
        // SAFETY: by this function's contract.
        drop(unsafe { Box::from_raw(bound) });
    }
}
