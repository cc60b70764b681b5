//! Buffered table functions (`table_buffering`): the worker sees its whole input before it
//! answers (the exchange is in `quiver_vgi_contract::buffering`).
//!
//! One call holds one connection from its sink `init` to its last finalize stream, so a worker
//! may keep the input in its process; the scan's threads send their batches through it in turn.
//! Threads register as they start ([`BufferedCall::enter`]) and leave when their input ended
//! ([`BufferedCall::leave`]); the last to leave combines and reads the finalize streams, the
//! others produce nothing. A thread that starts after the combine finds the input exhausted.

use std::collections::VecDeque;
use std::ffi::c_char;
use std::sync::{Arc, Mutex};

use arrow_array::ffi::FFI_ArrowArray;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::{Client, RpcError};
use quiver_transport::fd_io;
use quiver_vgi_contract::buffering::{self, CombineRequest, ProcessRequest, Target};
use quiver_vgi_contract::enums::init_phase;
use quiver_vgi_contract::{ipc, methods, InitRequest};

use crate::arrow_c;
use crate::bind::Bound;
use crate::calls::{Input, StreamHandle, StreamSource};
use crate::catalog::result_bytes;
use crate::ffi::{guard, guard_interruptible, handle, write_out, Failure, Interrupt, Outcome};
use crate::stream::{request_batch, Stream, CANCEL_DEADLINE};
use crate::worker::{Conn, Worker};

/// One buffered call, shared by the threads of its query.
pub struct BufferedCall {
    worker: Arc<Worker>,
    target: Target,
    input: Input,
    output: SchemaRef,
    during: String,
    state: Mutex<Sink>,
}

/// What the sink side holds between batches.
struct Sink {
    /// The call's connection; `None` once handed to the finalize streams (or lost to a failure).
    conn: Option<Conn>,
    state_ids: Vec<Vec<u8>>,
    batches: i64,
    /// Threads registered and not yet left.
    active: usize,
    combined: bool,
    /// The finalize `init`, its `finalize_state_id` set per stream.
    finalize: Option<InitRequest>,
}

impl BufferedCall {
    /// Opens the sink: `init` with phase `TABLE_BUFFERING`, whose header names the execution.
    pub fn start(bound: &Bound) -> Outcome<BufferedCall> {
        let input_schema = bound
            .input_schema
            .clone()
            .ok_or_else(|| Failure::invalid("a buffered call is bound with its input schema"))?;
        let worker = bound.attached.worker.clone();
        let mut init = bound.init_request();
        init.phase = Some(init_phase::TABLE_BUFFERING.into());
        let during = format!("the buffered call of {}", bound.call_name());
        let sink = Stream::open(&worker, &init.encode(), during.clone())?;
        let execution_id = sink.header.execution_id.clone();
        let conn = sink.close_keeping_connection()?;
        init.phase = Some(init_phase::TABLE_BUFFERING_FINALIZE.into());
        init.execution_id = Some(execution_id.clone());
        let desc = bound.desc();
        Ok(BufferedCall {
            target: Target {
                function_name: desc.name.clone(),
                schema_path: Some(desc.schema_path.clone()),
                execution_id,
                attach_opaque_data: Some(bound.attached.found.attach_opaque_data.clone()),
            },
            worker,
            input: Input::new(input_schema, false)?,
            output: bound.output_schema.clone(),
            during,
            state: Mutex::new(Sink {
                conn: Some(conn),
                state_ids: Vec::new(),
                batches: 0,
                active: 0,
                combined: false,
                finalize: Some(init),
            }),
        })
    }

    /// A thread of the query joins the call.
    pub fn enter(&self) {
        self.state.lock().expect("buffered lock").active += 1;
    }

    /// Stores one input batch with the worker (`table_buffering_process`).
    pub fn sink(&self, batch: &RecordBatch) -> Outcome<()> {
        let mut sink = self.state.lock().expect("buffered lock");
        let request = ProcessRequest {
            target: self.target.clone(),
            input_batch: ipc::encode_batch(batch),
            batch_index: Some(sink.batches),
        };
        let bytes = self.unary(
            &mut sink,
            methods::TABLE_BUFFERING_PROCESS,
            &request.encode(),
        )?;
        let state_id = buffering::decode_process_response(&bytes)
            .map_err(|e| self.unreadable(methods::TABLE_BUFFERING_PROCESS, &e.message))?;
        if sink.state_ids.len() == buffering::STATE_IDS_MAX {
            return Err(Failure::invalid(format!(
                "{}: more than {} input batches",
                self.during,
                buffering::STATE_IDS_MAX
            )));
        }
        sink.state_ids.push(state_id);
        sink.batches += 1;
        Ok(())
    }

    /// A thread's input ended. The last thread to leave combines and gets the output stream;
    /// every other one gets `None`.
    pub fn leave(&self) -> Outcome<Option<StreamHandle>> {
        let mut sink = self.state.lock().expect("buffered lock");
        sink.active = sink.active.saturating_sub(1);
        if sink.active > 0 || sink.combined {
            return Ok(None);
        }
        sink.combined = true;
        let request = CombineRequest {
            target: self.target.clone(),
            state_ids: std::mem::take(&mut sink.state_ids),
        };
        let bytes = self.unary(
            &mut sink,
            methods::TABLE_BUFFERING_COMBINE,
            &request.encode(),
        )?;
        let ids = buffering::decode_combine_response(&bytes)
            .map_err(|e| self.unreadable(methods::TABLE_BUFFERING_COMBINE, &e.message))?;
        let finalize = Finalize {
            worker: self.worker.clone(),
            conn: sink.conn.take(),
            ids: ids.into(),
            init: sink.finalize.take().expect("one combine"),
            target: self.target.clone(),
            output: self.output.clone(),
            during: self.during.replace("buffered call", "buffered output"),
        };
        Ok(Some(StreamHandle::chained(Box::new(finalize))))
    }

    /// One unary call on the call's connection; a failure releases it.
    fn unary(&self, sink: &mut Sink, method: &str, request: &[u8]) -> Outcome<Vec<u8>> {
        let mut conn = sink.conn.take().ok_or_else(|| {
            Failure::worker(format!(
                "{}: the connection of {} was lost to an earlier failure",
                self.worker.label(),
                self.during
            ))
        })?;
        match unary_on(&mut conn.client, method, request) {
            Ok(bytes) => {
                sink.conn = Some(conn);
                Ok(bytes)
            }
            Err(error) => Err(self.worker.failure(conn, &error, &self.during)),
        }
    }

    fn unreadable(&self, method: &str, why: &str) -> Failure {
        Failure::worker(format!(
            "{} answered {method} unreadably during {}: {why}",
            self.worker.label(),
            self.during
        ))
    }
}

fn unary_on(client: &mut Client, method: &str, request: &[u8]) -> Result<Vec<u8>, RpcError> {
    let reply = client.call(method, &request_batch(request))?;
    result_bytes(reply, method).map_err(RpcError::Remote)
}

/// Best-effort cleanup, within the cancel deadline; the connection goes back only in step.
fn destruct(worker: &Worker, mut conn: Conn, target: &Target) {
    let request = buffering::destructor_request(target);
    let done = fd_io::with_deadline(CANCEL_DEADLINE, || {
        conn.client
            .call(
                methods::TABLE_BUFFERING_DESTRUCTOR,
                &request_batch(&request),
            )
            .map(|_| ())
    });
    match done {
        Ok(()) | Err(RpcError::Remote(_)) => worker.checkin(conn),
        Err(_) => drop(conn),
    }
}

impl Drop for BufferedCall {
    fn drop(&mut self) {
        let conn = self.state.lock().map(|mut s| s.conn.take()).unwrap_or(None);
        if let Some(conn) = conn {
            destruct(&self.worker, conn, &self.target);
        }
    }
}

/// The output: one finalize stream per id, in order, on the call's connection.
struct Finalize {
    worker: Arc<Worker>,
    conn: Option<Conn>,
    ids: VecDeque<Vec<u8>>,
    init: InitRequest,
    target: Target,
    output: SchemaRef,
    during: String,
}

impl StreamSource for Finalize {
    fn next(&mut self, finished: Option<Stream>) -> Outcome<Option<Stream>> {
        if let Some(stream) = finished {
            self.conn = Some(stream.close_keeping_connection()?);
        }
        let Some(id) = self.ids.pop_front() else {
            if let Some(conn) = self.conn.take() {
                destruct(&self.worker, conn, &self.target);
            }
            return Ok(None);
        };
        let conn = self.conn.take().ok_or_else(|| {
            Failure::worker(format!(
                "{}: the connection of {} is gone",
                self.worker.label(),
                self.during
            ))
        })?;
        self.init.finalize_state_id = Some(id);
        let request = self.init.encode();
        let stream = Stream::open_on(&self.worker, conn, &request, self.during.clone())?;
        Ok(Some(stream.expecting(self.output.clone())))
    }
}

/// Opens a buffered call (once per query, from the global state).
///
/// # Safety
/// `bound` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_buffered_start(
    bound: *const Bound,
    interrupt: Interrupt,
    out: *mut *mut BufferedCall,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let bound = unsafe { handle(bound, "bind")? };
        let call = BufferedCall::start(bound)?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, Box::into_raw(Box::new(call)), "out") }
    })
}

/// A thread joins the call (from its local state).
///
/// # Safety
/// `call` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_buffered_enter(
    call: *const BufferedCall,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        unsafe { handle(call, "buffered call")? }.enter();
        Ok(())
    })
}

/// Sends one input batch (a struct array of the bind's input schema; taken).
///
/// # Safety
/// `call` a live handle; `input` a valid array.
#[no_mangle]
pub unsafe extern "C" fn quiver_buffered_sink(
    call: *const BufferedCall,
    input: *mut FFI_ArrowArray,
    interrupt: Interrupt,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let call = unsafe { handle(call, "buffered call")? };
        // SAFETY: by this function's contract, `input` is an array of the input schema.
        let batch = unsafe { arrow_c::import_batch(input, &call.input.ffi, "input")? };
        call.sink(&batch)
    })
}

/// A thread's input ended: `*out` is the output stream for the last thread to leave, null for the
/// others.
///
/// # Safety
/// `call` a live handle; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_buffered_leave(
    call: *const BufferedCall,
    interrupt: Interrupt,
    out: *mut *mut StreamHandle,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let call = unsafe { handle(call, "buffered call")? };
        let stream = call
            .leave()?
            .map_or(std::ptr::null_mut(), |s| Box::into_raw(Box::new(s)));
        // SAFETY: by this function's contract.
        unsafe { write_out(out, stream, "out") }
    })
}

/// Frees a buffered call; one that never combined asks the worker to clean up (best effort).
///
/// # Safety
/// `call` null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_buffered_free(call: *mut BufferedCall) {
    let _ = guard(std::ptr::null_mut(), 0, || {
        if !call.is_null() {
            // SAFETY: by this function's contract.
            drop(unsafe { Box::from_raw(call) });
        }
        Ok(())
    });
}
