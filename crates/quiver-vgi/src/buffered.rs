//! Buffered table functions (`table_buffering`): the sink `init` opens a call, each
//! `table_buffering_process` stores one input batch, `table_buffering_combine` answers one
//! finalize id, the finalize `init` runs the body over the whole input, and
//! `table_buffering_destructor` forgets the call. A call's batches stay in this process, keyed by
//! execution id: quiver's engine and vgi-python's Client send a whole buffered call on one
//! connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::DataType;
use quiver_rpc::{field, CallContext, Method, Service, StreamOutput, StreamSetup, StreamState};
use quiver_vgi_contract::buffering::{self, CombineRequest, ProcessRequest};
use quiver_vgi_contract::{errors, ipc, methods, InitRequest};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::bind::Bound;
use crate::execution::mint_id;
use crate::function::Body;
use crate::table::conform;

/// Most buffered calls one process holds open at once.
pub const CALLS_MAX: usize = 1024;

/// The buffered calls open in this process.
#[derive(Default)]
pub struct BufferedCalls {
    calls: Mutex<HashMap<Vec<u8>, Call>>,
}

struct Call {
    bound: Arc<Bound>,
    batches: Vec<RecordBatch>,
}

impl BufferedCalls {
    fn with<T>(&self, id: &[u8], body: impl FnOnce(&mut Call) -> T) -> Result<T, ErrorReport> {
        let mut calls = self.calls.lock().expect("buffered calls lock");
        let call = calls.get_mut(id).ok_or_else(|| {
            errors::not_found(format!(
                "no buffered call is open for execution {}",
                hex(id)
            ))
        })?;
        Ok(body(call))
    }
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn header(execution: &[u8]) -> RecordBatch {
    quiver_vgi_contract::GlobalInitResponse {
        execution_id: execution.to_vec(),
        opaque_data: None,
        max_workers: 1,
    }
    .encode()
}

/// The sink `init`: opens the call; its stream carries no data.
pub fn sink(
    calls: &BufferedCalls,
    bound: Bound,
    _request: &InitRequest,
) -> Result<StreamSetup, ErrorReport> {
    let execution = mint_id().to_vec();
    let output = bound.output_schema.clone();
    {
        let mut open = calls.calls.lock().expect("buffered calls lock");
        if open.len() >= CALLS_MAX {
            return Err(errors::invalid_argument(format!(
                "more than {CALLS_MAX} buffered calls are open in this worker"
            )));
        }
        open.insert(
            execution.clone(),
            Call {
                bound: Arc::new(bound),
                batches: Vec::new(),
            },
        );
    }
    Ok(StreamSetup::producer(
        output.clone(),
        Batches {
            batches: Vec::new(),
            name: String::new(),
            output,
        },
    )
    .with_header(header(&execution)))
}

/// A finalize `init`: the body over the whole input, as a producer.
pub fn output(
    calls: &BufferedCalls,
    bound: Bound,
    request: &InitRequest,
) -> Result<StreamSetup, ErrorReport> {
    let name = bound.function.name.clone();
    let execution = request.execution_id.clone().ok_or_else(|| {
        errors::invalid_argument(format!(
            "{name}(): a buffered finalize init carries its execution_id"
        ))
    })?;
    let (call_bound, batches) = calls.with(&execution, |call| {
        (call.bound.clone(), call.batches.clone())
    })?;
    let Body::Buffered { body, .. } = &call_bound.function.body else {
        unreachable!("kind TableBuffering has a buffered body");
    };
    let mut produced = body(&call_bound.args, &batches)?;
    produced.reverse();
    let output = bound.output_schema.clone();
    Ok(StreamSetup::producer(
        output.clone(),
        Batches {
            batches: produced,
            name,
            output,
        },
    )
    .with_header(header(&execution)))
}

/// A producer of batches made in advance (emitted last to first).
struct Batches {
    batches: Vec<RecordBatch>,
    name: String,
    output: arrow_schema::SchemaRef,
}

impl StreamState for Batches {
    fn process(
        &mut self,
        _tick: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        match self.batches.pop() {
            Some(batch) => output.emit(conform(&self.name, &self.output, batch)?),
            None => output.finish(),
        }
        Ok(())
    }
}

fn result(bytes: Vec<u8>) -> Option<ArrayRef> {
    Some(Arc::new(BinaryArray::from(vec![bytes.as_slice()])) as ArrayRef)
}

/// Registers `table_buffering_process`, `_combine` and `_destructor`.
pub fn register(service: &mut Service, calls: Arc<BufferedCalls>) {
    let params = || vec![field("request", DataType::Binary, false)];
    let result_field = || Some(field("result", DataType::Binary, false));
    let c = calls.clone();
    service.add(Method::unary(
        methods::TABLE_BUFFERING_PROCESS,
        params(),
        result_field(),
        move |params, _| {
            let request = ProcessRequest::decode(params.bytes("request")?)?;
            let (_, batches) = ipc::decode_batches(&request.input_batch, "input_batch")?;
            let id = request.target.execution_id.clone();
            c.with(&id, |call| call.batches.extend(batches))?;
            Ok(result(buffering::process_response(&id)))
        },
    ));
    let c = calls.clone();
    service.add(Method::unary(
        methods::TABLE_BUFFERING_COMBINE,
        params(),
        result_field(),
        move |params, _| {
            let request = CombineRequest::decode(params.bytes("request")?)?;
            let id = request.target.execution_id;
            c.with(&id, |_| ())?;
            // One finalize stream reads the whole input.
            Ok(result(buffering::combine_response(&[id])))
        },
    ));
    service.add(Method::unary(
        methods::TABLE_BUFFERING_DESTRUCTOR,
        params(),
        result_field(),
        move |params, _| {
            let target = buffering::decode_destructor_request(params.bytes("request")?)?;
            calls
                .calls
                .lock()
                .expect("buffered calls lock")
                .remove(&target.execution_id);
            Ok(result(buffering::destructor_response()))
        },
    ));
}
