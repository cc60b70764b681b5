//! `quiver_stream`: an open `init` stream as the glue holds it, whatever the kind — ticked for
//! batches (table scans, FINALIZE) or fed input batches (scalar, table-in-out INPUT).

use std::ffi::c_char;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_vgi_contract::{CONTINUE, HAVE_MORE_OUTPUT, STATUS_KEY};
use quiver_wire::BatchMetadata;

use crate::arrow_c;
use crate::ffi::{
    guard, guard_interruptible, handle_mut, write_out, Failure, FailureCode, Interrupt, Outcome,
};
use crate::stream::Stream;

/// The input side of an exchange stream: its schema, as Rust and as the C struct DuckDB's
/// arrays are read against.
pub struct Input {
    schema: SchemaRef,
    pub(crate) ffi: FFI_ArrowSchema,
    /// Scalar: every output batch has exactly the input's rows.
    rows_must_match: bool,
}

impl Input {
    /// The input of a scalar (`rows_must_match`) or table-in-out call.
    pub fn new(schema: SchemaRef, rows_must_match: bool) -> Outcome<Input> {
        let ffi = FFI_ArrowSchema::try_from(schema.as_ref())?;
        Ok(Input {
            schema,
            ffi,
            rows_must_match,
        })
    }
}

/// Where a producer handle finds its next stream once one ends: the splits of a planned scan,
/// the finalize ids of a buffered call. The batches of all of them read as one stream.
pub trait StreamSource: Send {
    /// Ends `finished` (the stream that just ended, if any) and opens the next; `None` when
    /// there is no more.
    fn next(&mut self, finished: Option<Stream>) -> Outcome<Option<Stream>>;
}

/// An open stream and what its kind needs.
pub struct StreamHandle {
    stream: Option<Stream>,
    input: Option<Input>,
    /// Table-in-out: the encoded FINALIZE init, sent on the same connection after the input ends.
    pub finalize: Option<Vec<u8>>,
    /// A producer made of several streams in turn.
    source: Option<Box<dyn StreamSource>>,
}

impl StreamHandle {
    /// A handle on `stream`, with its input when it is an exchange.
    pub fn new(stream: Stream, input: Option<Input>) -> StreamHandle {
        StreamHandle {
            stream: Some(stream),
            input,
            finalize: None,
            source: None,
        }
    }

    /// A producer reading the streams of `source` one after another.
    pub fn chained(source: Box<dyn StreamSource>) -> StreamHandle {
        StreamHandle {
            stream: None,
            input: None,
            finalize: None,
            source: Some(source),
        }
    }

    /// A heap handle for the glue.
    pub fn boxed(stream: Stream, input: Option<Input>) -> *mut StreamHandle {
        Box::into_raw(Box::new(StreamHandle::new(stream, input)))
    }

    fn stream(&mut self) -> Outcome<&mut Stream> {
        self.stream
            .as_mut()
            .ok_or_else(|| Failure::invalid("the stream was already finished"))
    }

    /// The next batch of a producer; `None` at the end.
    pub fn next_batch(&mut self) -> Outcome<Option<RecordBatch>> {
        let Some(source) = self.source.as_mut() else {
            return self.stream()?.next_batch();
        };
        loop {
            if let Some(stream) = self.stream.as_mut() {
                if let Some(batch) = stream.next_batch()? {
                    return Ok(Some(batch));
                }
            }
            // An empty stream is not the end: the next split or finalize id may have rows.
            match source.next(self.stream.take())? {
                Some(next) => self.stream = Some(next),
                None => {
                    self.source = None;
                    return Ok(None);
                }
            }
        }
    }

    /// One exchange: `batch` in (or a CONTINUE tick when `None`); the output and whether the
    /// worker has more output for the same input.
    pub fn exchange(&mut self, batch: Option<RecordBatch>) -> Outcome<(RecordBatch, bool)> {
        let input = self
            .input
            .as_ref()
            .ok_or_else(|| Failure::invalid("not an exchange stream"))?;
        let (batch, metadata) = match batch {
            Some(batch) => (batch, BatchMetadata::new()),
            None => (
                RecordBatch::new_empty(input.schema.clone()),
                BatchMetadata::from_pairs([(STATUS_KEY, CONTINUE)]),
            ),
        };
        let rows_in = batch.num_rows();
        let rows_must_match = input.rows_must_match;
        let stream = self.stream()?;
        let Some((output, metadata)) = stream.exchange(&batch, metadata)? else {
            return Err(Failure::new(
                FailureCode::Worker,
                format!(
                    "{} ended {} before answering an input batch",
                    stream.worker().label(),
                    stream.during
                ),
            ));
        };
        if rows_must_match && output.num_rows() != rows_in {
            return Err(Failure::new(
                FailureCode::Worker,
                format!(
                    "{} answered {} rows for {rows_in} input rows during {}",
                    stream.worker().label(),
                    output.num_rows(),
                    stream.during
                ),
            ));
        }
        let more = metadata.get(STATUS_KEY) == Some(HAVE_MORE_OUTPUT);
        Ok((output, more))
    }

    /// Ends the stream in step; the connection goes back to the pool.
    pub fn close(&mut self) -> Outcome<()> {
        match self.stream.take() {
            Some(stream) => stream.close(),
            None => Ok(()),
        }
    }

    /// Table-in-out: ends the INPUT stream and opens its FINALIZE stream on the same connection;
    /// `None` when the function has no finalize.
    pub fn finalize(&mut self) -> Outcome<Option<StreamHandle>> {
        let Some(request) = self.finalize.take() else {
            self.close()?;
            return Ok(None);
        };
        let stream = self
            .stream
            .take()
            .ok_or_else(|| Failure::invalid("the stream was already finished"))?;
        let worker = stream.worker().clone();
        let during = stream.during.replace("input", "finalize");
        let output = stream.output().cloned();
        let conn = stream.close_keeping_connection()?;
        let mut finalize = Stream::open_on(&worker, conn, &request, during)?;
        if let Some(output) = output {
            finalize = finalize.expecting(output);
        }
        Ok(Some(StreamHandle::new(finalize, None)))
    }
}

/// The next batch of a producer stream (table scan, FINALIZE) into `out`; `*end` is set to 1
/// (and `out` left untouched) when the worker finished.
///
/// # Safety
/// `stream` a live handle; `out`/`end` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_stream_next(
    stream: *mut StreamHandle,
    interrupt: Interrupt,
    out: *mut FFI_ArrowArray,
    end: *mut i32,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let stream = unsafe { handle_mut(stream, "stream")? };
        match stream.next_batch()? {
            // SAFETY: by this function's contract.
            Some(batch) => unsafe {
                write_out(end, 0, "end")?;
                arrow_c::export_batch(batch, out)
            },
            // SAFETY: by this function's contract.
            None => unsafe { write_out(end, 1, "end") },
        }
    })
}

/// One exchange on a scalar or table-in-out INPUT stream: `input` (a struct array of the bind's
/// input schema; taken) in, the answer in `out`. `input` null sends a CONTINUE tick (after an
/// answer with `*more` set). `*more` is set to 1 when the worker has more output for this input.
///
/// # Safety
/// `stream` a live handle; `input` null or a valid array; `out`/`more` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_stream_exchange(
    stream: *mut StreamHandle,
    input: *mut FFI_ArrowArray,
    interrupt: Interrupt,
    out: *mut FFI_ArrowArray,
    more: *mut i32,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        let stream = unsafe { handle_mut(stream, "stream")? };
        let batch = if input.is_null() {
            None
        } else {
            let schema = &stream
                .input
                .as_ref()
                .ok_or_else(|| Failure::invalid("not an exchange stream"))?
                .ffi;
            // SAFETY: by this function's contract, `input` is an array of the input schema.
            Some(unsafe { arrow_c::import_batch(input, schema, "input")? })
        };
        let (output, has_more) = stream.exchange(batch)?;
        // SAFETY: by this function's contract.
        unsafe {
            write_out(more, i32::from(has_more), "more")?;
            arrow_c::export_batch(output, out)
        }
    })
}

/// Table-in-out: ends the INPUT stream (its handle is freed) and returns the FINALIZE stream in
/// `*out` (null when the function has no finalize).
///
/// # Safety
/// `stream` a live handle, not used after this call; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_stream_finalize(
    stream: *mut StreamHandle,
    interrupt: Interrupt,
    out: *mut *mut StreamHandle,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        if stream.is_null() {
            return Err(Failure::invalid("stream is null"));
        }
        // SAFETY: by this function's contract, ownership comes back to us.
        let mut input = unsafe { Box::from_raw(stream) };
        let finalize = input.finalize()?;
        let handle = finalize.map_or(std::ptr::null_mut(), |f| Box::into_raw(Box::new(f)));
        // SAFETY: by this function's contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Ends a stream in step: our input's end, then the worker's. The connection goes back to the
/// pool. Freeing without closing cancels instead.
///
/// # Safety
/// `stream` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_stream_close(
    stream: *mut StreamHandle,
    interrupt: Interrupt,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        // SAFETY: by this function's contract.
        unsafe { handle_mut(stream, "stream")? }.close()
    })
}

/// Frees a stream; one still open is cancelled (bounded wait) or its connection closed.
///
/// # Safety
/// `stream` null or a handle not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_stream_free(stream: *mut StreamHandle) {
    let _ = guard(std::ptr::null_mut(), 0, || {
        if !stream.is_null() {
            // SAFETY: by this function's contract.
            drop(unsafe { Box::from_raw(stream) });
        }
        Ok(())
    });
}
