//! `init`: start, join or finalize an execution, and hand the stream to the
//! right kind. The header (`GlobalInitResponse`) is built here; the server
//! writes it before reading any input, and an error here becomes the error
//! stream that takes the header's place.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use quiver_rpc::{field, CallContext, Method, Params, Service, StreamSetup, StreamState};
use quiver_vgi_contract::enums::init_phase;
use quiver_vgi_contract::schemas;
use quiver_vgi_contract::{errors, methods};
use quiver_vgi_contract::{GlobalInitResponse, InitRequest};
use quiver_wire::{ErrorReport, LogLevel, LogRecord};

use crate::bind::{bind_call, Bound};
use crate::buffered;
use crate::carry::{self, Reader, Request};
use crate::catalog::Catalog;
use crate::declarations::FunctionKind;
use crate::execution::{hex, mint_id, parse_id, ExecutionId, Executions};
use crate::filters::Filters;
use crate::function::Body;
use crate::in_out_state::InOutInit;
use crate::limits::MAX_WORKERS_UNBOUNDED;
use crate::logging::{self, Level};
use crate::plan;
use crate::projection::Projection;
use crate::scalar::ScalarStream;
use crate::scan::ScanInit;
use crate::table::{TableCarry, TableStream};
use crate::table_in_out::{FinalizeStream, InputStream, StashTarget};

/// What every init needs from the worker.
pub struct InitContext {
    /// The functions.
    pub catalog: Arc<Catalog>,
    /// Shared execution state of this process.
    pub executions: Arc<Executions>,
    /// The buffered calls open in this process.
    pub buffered: Arc<buffered::BufferedCalls>,
}

/// Registers `init`.
pub fn register(service: &mut Service, context: Arc<InitContext>) {
    let params = vec![field("request", DataType::Binary, false)];
    let header = Some(schemas::GLOBAL_INIT_RESPONSE.clone());
    let resuming = context.clone();
    service.add(
        Method::stream(methods::INIT, params, header, move |params, ctx| {
            init(&context, params, ctx)
        })
        .with_resume(move |snapshot| carry::resume(&resuming, snapshot)),
    );
}

fn init(
    context: &InitContext,
    params: &Params,
    ctx: &mut CallContext<'_>,
) -> Result<StreamSetup, ErrorReport> {
    let raw = params.bytes("request")?;
    let request = InitRequest::decode(raw)?;
    let bound = bind_call(&context.catalog, &request.bind_call)?;
    check_output_schema(&bound, &request)?;
    let name = bound.function.name.clone();
    if logging::enabled(Level::Debug) {
        let role = match &request.execution_id {
            None => "primary".to_string(),
            Some(id) => format!("secondary init of execution {}", hex(id)),
        };
        let phase = request.phase.as_deref().unwrap_or("-");
        logging::log(Level::Debug, format!("init {name}() {role} phase={phase}"));
    }
    match (bound.function.kind, request.phase.as_deref()) {
        (FunctionKind::Scalar, None) => scalar(bound, &request, raw),
        (FunctionKind::Table, None) => table(context, bound, &request, raw, ctx),
        (FunctionKind::TableInOut, Some(init_phase::INPUT)) => {
            input(context, bound, &request, raw, ctx)
        }
        (FunctionKind::TableInOut, Some(init_phase::FINALIZE)) => finalize(context, bound, &request),
        (FunctionKind::TableBuffering, Some(init_phase::TABLE_BUFFERING)) => {
            buffered::sink(&context.buffered, bound, &request)
        }
        (FunctionKind::TableBuffering, Some(init_phase::TABLE_BUFFERING_FINALIZE)) => {
            buffered::output(&context.buffered, bound, &request)
        }
        (FunctionKind::TableBuffering, None) => Err(errors::invalid_argument(format!(
            "{name}() is a buffered table function: init takes phase TABLE_BUFFERING or \
             TABLE_BUFFERING_FINALIZE"
        ))),
        (FunctionKind::Aggregate, _) => Err(errors::invalid_argument(format!(
            "{name}() is an aggregate function: it is called with aggregate_update, not init"
        ))),
        (FunctionKind::TableInOut, None) => Err(errors::invalid_argument(format!(
            "{name}() is a table-in-out function: it requires an input row stream (init phase INPUT)"
        ))),
        (kind, Some(phase)) => Err(errors::invalid_argument(format!(
            "init phase {phase} does not apply to {name}(), {}",
            kind.describe()
        ))),
    }
}

/// The engine echoes the bind's output schema; projection ids index into it,
/// so it must be the one this worker answered.
fn check_output_schema(bound: &Bound, request: &InitRequest) -> Result<(), ErrorReport> {
    let ours = bound.output_schema.fields();
    let theirs = request.output_schema.fields();
    let same = ours.len() == theirs.len()
        && ours
            .iter()
            .zip(theirs)
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if same {
        return Ok(());
    }
    Err(errors::invalid_argument(format!(
        "{}(): InitRequest.output_schema does not match what bind answered",
        bound.function.name
    )))
}

fn header(execution: &ExecutionId, max_workers: i64) -> RecordBatch {
    GlobalInitResponse {
        execution_id: execution.to_vec(),
        opaque_data: None,
        max_workers,
    }
    .encode()
}

/// The execution id of a primary init (fresh) or a secondary one (echoed).
fn execution_id(request: &InitRequest) -> Result<(ExecutionId, bool), ErrorReport> {
    match &request.execution_id {
        None => Ok((mint_id(), true)),
        Some(bytes) => Ok((parse_id(bytes)?, false)),
    }
}

fn projection(bound: &Bound, request: &InitRequest) -> Result<Projection, ErrorReport> {
    if bound.function.caps.projection_pushdown {
        Projection::new(&bound.output_schema, request.projection_ids.as_deref())
    } else {
        Ok(Projection::all(&bound.output_schema))
    }
}

/// The pushed-down filters; `ctx` hears which predicates are left to the engine (at `init`; a
/// resumed turn parses the same filters again and says nothing).
fn filters(
    bound: &Bound,
    request: &InitRequest,
    ctx: Option<&mut CallContext<'_>>,
) -> Result<Filters, ErrorReport> {
    let Some(bytes) = &request.pushdown_filters else {
        return Ok(Filters::none());
    };
    let filters = Filters::parse(
        bytes,
        &bound.output_schema,
        bound.function.caps.filter_pushdown,
    )?;
    let Some(ctx) = ctx else {
        return Ok(filters);
    };
    for (id, reason) in filters.declined() {
        ctx.log(LogRecord::new(
            LogLevel::Debug,
            format!(
                "{}(): advisory predicate {id:?} left to the engine: {reason}",
                bound.function.name
            ),
        ));
    }
    Ok(filters)
}

fn scalar(bound: Bound, request: &InitRequest, raw: &[u8]) -> Result<StreamSetup, ErrorReport> {
    let (execution, _) = execution_id(request)?;
    let max_workers = bound
        .function
        .caps
        .max_workers
        .map_or(MAX_WORKERS_UNBOUNDED, i64::from);
    let input_schema = bound
        .input_schema
        .clone()
        .expect("bind checked a scalar's input schema");
    let output_schema = bound.output_schema.clone();
    let stream = ScalarStream::new(&bound.function, bound.args, output_schema.clone())
        .carrying(Request::from(raw));
    Ok(StreamSetup::exchange(input_schema, output_schema, stream)
        .with_header(header(&execution, max_workers)))
}

fn table(
    context: &InitContext,
    bound: Bound,
    request: &InitRequest,
    raw: &[u8],
    ctx: &mut CallContext<'_>,
) -> Result<StreamSetup, ErrorReport> {
    let Body::Table {
        work, scan, resume, ..
    } = &bound.function.body
    else {
        unreachable!("kind Table has a table body");
    };
    let split = split_of(&bound, request)?;
    let projection = projection(&bound, request)?;
    let filters = filters(&bound, request, Some(ctx))?;
    let (execution, is_primary) = execution_id(request)?;
    // A split stands alone: it shares no work with other connections.
    let is_primary = is_primary || split.is_some();
    if is_primary {
        logging::log(
            Level::Debug,
            format!(
                "{}(): execution {} started",
                bound.function.name,
                hex(&execution)
            ),
        );
    }
    let shared = match (work, is_primary) {
        _ if split.is_some() => None,
        (None, _) => None,
        (Some(work), true) => Some(context.executions.start(execution, work(&bound.args)?)?),
        (Some(_), false) => Some(context.executions.join(execution)?),
    };
    let state = scan(&ScanInit {
        args: &bound.args,
        output_schema: &bound.output_schema,
        is_primary,
        split: split.as_deref(),
    })?;
    // A carried counter is the primary's alone, so such a scan runs on one connection.
    let max_workers = if split.is_some() || (work.is_some() && context.executions.is_carried()) {
        1
    } else {
        i64::from(bound.function.caps.max_workers.unwrap_or(1))
    };
    let output_schema = projection.schema().clone();
    let carry = resume.is_some().then(|| TableCarry {
        request: Request::from(raw),
        execution,
        is_primary,
    });
    let stream = TableStream::new(
        &bound.function.name,
        state,
        bound.args,
        bound.output_schema,
        shared,
        filters,
        projection,
    )
    .carrying(carry);
    Ok(StreamSetup::producer(output_schema, stream).with_header(header(&execution, max_workers)))
}

/// The payload of the split a planned scan's init redeems (`None` for an unplanned scan).
fn split_of(bound: &Bound, request: &InitRequest) -> Result<Option<Vec<u8>>, ErrorReport> {
    let Body::Table { splits, .. } = &bound.function.body else {
        unreachable!("kind Table has a table body");
    };
    match &request.split_tokens {
        Some(tokens) => Ok(Some(plan::redeem(bound, &request.bind_call, tokens)?)),
        None if splits.is_some() => Err(errors::invalid_argument(format!(
            "{}() plans its scan into splits: call table_function_plan, then init with \
             split_tokens",
            bound.function.name
        ))),
        None => Ok(None),
    }
}

/// Table-in-out parallelism: the function's limit, except that on stdio a
/// function with a finalize stays on one connection, because the engine
/// finalizes on the primary only and the other substreams' states would be in
/// other processes.
fn in_out_max_workers(context: &InitContext, bound: &Bound) -> i64 {
    let caps = bound.function.caps;
    if caps.has_finalize && context.executions.is_cross_process() {
        return 1;
    }
    i64::from(caps.max_workers.unwrap_or(1))
}

fn input(
    context: &InitContext,
    bound: Bound,
    request: &InitRequest,
    raw: &[u8],
    ctx: &mut CallContext<'_>,
) -> Result<StreamSetup, ErrorReport> {
    let Body::TableInOut { state, resume, .. } = &bound.function.body else {
        unreachable!("kind TableInOut has a table-in-out body");
    };
    let projection = projection(&bound, request)?;
    let filters = filters(&bound, request, Some(ctx))?;
    let (execution, _) = execution_id(request)?;
    let input_schema = bound
        .input_schema
        .clone()
        .expect("bind checked the input schema");
    let state = state(&InOutInit {
        args: &bound.args,
        input_schema: &input_schema,
        output_schema: &bound.output_schema,
    })?;
    let stash = bound.function.caps.has_finalize.then(|| StashTarget {
        executions: context.executions.clone(),
        execution,
        substream: request.substream_id.clone().unwrap_or_default(),
    });
    let max_workers = in_out_max_workers(context, &bound);
    let output_schema = projection.schema().clone();
    // A state waiting for FINALIZE stays in this process; any other may travel.
    let carry = (resume.is_some() && stash.is_none()).then(|| Request::from(raw));
    let stream = InputStream::new(
        &bound.function.name,
        state,
        bound.output_schema.clone(),
        filters,
        projection,
        stash,
    )
    .carrying(carry);
    Ok(StreamSetup::exchange(input_schema, output_schema, stream)
        .with_header(header(&execution, max_workers)))
}

fn finalize(
    context: &InitContext,
    bound: Bound,
    request: &InitRequest,
) -> Result<StreamSetup, ErrorReport> {
    let name = &bound.function.name;
    let Some(execution) = &request.execution_id else {
        return Err(errors::invalid_argument(format!(
            "{name}(): a FINALIZE init must carry the execution_id of its INPUT phase"
        )));
    };
    let execution = parse_id(execution)?;
    let substream = request.substream_id.clone().unwrap_or_default();
    let states = if bound.function.caps.has_finalize {
        let states = context.executions.take_stashed(&execution, &substream);
        if states.is_empty() {
            logging::log(
                Level::Warn,
                format!(
                    "{name}(): FINALIZE of execution {} found no state",
                    hex(&execution)
                ),
            );
        }
        states
    } else {
        Vec::new()
    };
    let projection = projection(&bound, request)?;
    let max_workers = in_out_max_workers(context, &bound);
    let output_schema = projection.schema().clone();
    let stream = FinalizeStream::new(name, states, bound.output_schema.clone(), projection);
    Ok(StreamSetup::producer(output_schema, stream).with_header(header(&execution, max_workers)))
}

/// Binds a carried stream's `init` request again, as `init` bound it.
fn rebind(
    context: &InitContext,
    request: &InitRequest,
    kind: FunctionKind,
) -> Result<Bound, ErrorReport> {
    let bound = bind_call(&context.catalog, &request.bind_call)?;
    check_output_schema(&bound, request)?;
    if bound.function.kind != kind {
        return Err(errors::invalid_argument(format!(
            "{}() is {}: a carried stream of another kind cannot resume on it",
            bound.function.name,
            bound.function.kind.describe()
        )));
    }
    Ok(bound)
}

fn not_resumable(bound: &Bound) -> ErrorReport {
    errors::invalid_argument(format!(
        "{}() does not resume carried streams on this worker",
        bound.function.name
    ))
}

/// A scalar stream's next turn, on any replica.
pub(crate) fn resume_scalar(
    context: &InitContext,
    raw: Request,
    request: &InitRequest,
) -> Result<Box<dyn StreamState>, ErrorReport> {
    let bound = rebind(context, request, FunctionKind::Scalar)?;
    let stream = ScalarStream::new(&bound.function, bound.args, bound.output_schema).carrying(raw);
    Ok(Box::new(stream))
}

/// A scan's next turn, on any replica: the fields are the ones [`TableStream`]'s snapshot wrote.
pub(crate) fn resume_table(
    context: &InitContext,
    raw: Request,
    request: &InitRequest,
    reader: &mut Reader<'_>,
) -> Result<Box<dyn StreamState>, ErrorReport> {
    let bound = rebind(context, request, FunctionKind::Table)?;
    let Body::Table {
        resume: Some(resume),
        ..
    } = &bound.function.body
    else {
        return Err(not_resumable(&bound));
    };
    let split = split_of(&bound, request)?;
    let projection = projection(&bound, request)?;
    let filters = filters(&bound, request, None)?;
    let execution = parse_id(reader.blob()?)?;
    let is_primary = reader.u8()? != 0;
    let shared = match reader.u8()? {
        0 => None,
        _ => {
            let (next, total) = (reader.u64()?, reader.u64()?);
            if next > total {
                return Err(errors::invalid_argument(
                    "carried stream state: a work counter past its end",
                ));
            }
            Some(context.executions.resume(execution, next, total))
        }
    };
    let (rows, batches) = (reader.u64()?, reader.u64()?);
    let state = resume(
        &ScanInit {
            args: &bound.args,
            output_schema: &bound.output_schema,
            is_primary,
            split: split.as_deref(),
        },
        reader.blob()?,
    )?;
    let carry = TableCarry {
        request: raw,
        execution,
        is_primary,
    };
    let stream = TableStream::new(
        &bound.function.name,
        state,
        bound.args,
        bound.output_schema,
        shared,
        filters,
        projection,
    )
    .carrying(Some(carry))
    .with_counts(rows, batches);
    Ok(Box::new(stream))
}

/// A table-in-out INPUT stream's next turn, on any replica: the fields are the ones
/// [`InputStream`]'s snapshot wrote.
pub(crate) fn resume_input(
    context: &InitContext,
    raw: Request,
    request: &InitRequest,
    reader: &mut Reader<'_>,
) -> Result<Box<dyn StreamState>, ErrorReport> {
    let bound = rebind(context, request, FunctionKind::TableInOut)?;
    let Body::TableInOut {
        resume: Some(resume),
        ..
    } = &bound.function.body
    else {
        return Err(not_resumable(&bound));
    };
    if bound.function.caps.has_finalize {
        return Err(not_resumable(&bound));
    }
    let projection = projection(&bound, request)?;
    let filters = filters(&bound, request, None)?;
    let input_schema = bound
        .input_schema
        .clone()
        .expect("bind checked the input schema");
    let state = resume(
        &InOutInit {
            args: &bound.args,
            input_schema: &input_schema,
            output_schema: &bound.output_schema,
        },
        reader.blob()?,
    )?;
    let stream = InputStream::new(
        &bound.function.name,
        state,
        bound.output_schema.clone(),
        filters,
        projection,
        None,
    )
    .carrying(Some(raw))
    .with_pending(reader.blob()?)?;
    Ok(Box::new(stream))
}
