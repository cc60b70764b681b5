//! The table-in-out `init` streams.
//!
//! INPUT is an exchange: per input batch the function emits any number of
//! batches; the first goes back at once, each further one waits for the
//! engine's `CONTINUE` tick and the batch before it carries
//! `vgi.status = HAVE_MORE_OUTPUT`. FINALIZE is a producer over what the
//! function's `finalize` emits, one batch per tick. Between the two, the
//! substream's state waits in the process's [`Executions`] registry. An INPUT
//! stream without a finalize travels in its token when its state can say where it
//! stands (`carry.rs`), its pending output with it.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::{CallContext, StreamOutput, StreamState};
use quiver_vgi_contract::errors;
use quiver_vgi_contract::{CONTINUE, HAVE_MORE_OUTPUT, STATUS_KEY};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::carry::{self, Request, Writer};
use crate::execution::{ExecutionId, Executions};
use crate::filters::Filters;
use crate::in_out_state::{Emitter, InOutState};
use crate::limits::OUTPUT_BATCHES_PER_INPUT_MAX;
use crate::projection::Projection;
use crate::table::conform;

/// Output batches waiting to be sent, already filtered and projected.
struct Pending {
    name: String,
    output_schema: SchemaRef,
    filters: Filters,
    projection: Projection,
    queue: VecDeque<RecordBatch>,
}

impl Pending {
    fn push_all(&mut self, emitted: Emitter) -> Result<(), ErrorReport> {
        if emitted.overflowed {
            return Err(errors::resource_exhausted(format!(
                "{}() emitted more than {OUTPUT_BATCHES_PER_INPUT_MAX} batches for one input",
                self.name
            )));
        }
        for batch in emitted.batches {
            let batch = conform(&self.name, &self.output_schema, batch)?;
            let batch = self.filters.apply(batch)?;
            self.queue.push_back(self.projection.apply(batch));
        }
        Ok(())
    }
}

/// Where an INPUT substream's state goes for its FINALIZE.
pub struct StashTarget {
    /// The registry of this process.
    pub executions: Arc<Executions>,
    /// The execution.
    pub execution: ExecutionId,
    /// The substream within it.
    pub substream: Vec<u8>,
}

/// One connection's INPUT stream.
pub struct InputStream {
    state: Option<Box<dyn InOutState>>,
    pending: Pending,
    stash: Option<StashTarget>,
    failed: bool,
    request: Option<Request>,
}

impl InputStream {
    /// A stream over `state`; with `stash`, the state is kept for FINALIZE when
    /// the input ends cleanly.
    pub fn new(
        name: &str,
        state: Box<dyn InOutState>,
        output_schema: SchemaRef,
        filters: Filters,
        projection: Projection,
        stash: Option<StashTarget>,
    ) -> InputStream {
        let pending = Pending {
            name: name.to_string(),
            output_schema,
            filters,
            projection,
            queue: VecDeque::new(),
        };
        InputStream {
            state: Some(state),
            pending,
            stash,
            failed: false,
            request: None,
        }
    }

    /// Lets the stream travel in its token: `request` is the `init` it was opened with.
    pub fn carrying(mut self, request: Option<Request>) -> InputStream {
        self.request = request;
        self
    }

    /// Restores the output a carried stream still owed (an IPC stream; empty for none).
    pub fn with_pending(mut self, bytes: &[u8]) -> Result<InputStream, ErrorReport> {
        if !bytes.is_empty() {
            let (schema, batches) =
                quiver_vgi_contract::ipc::decode_batches(bytes, "pending output")?;
            if &schema != self.pending.projection.schema() {
                return Err(errors::invalid_argument(
                    "carried stream state: pending output of another schema",
                ));
            }
            self.pending.queue = batches.into();
        }
        Ok(self)
    }

    fn step(
        &mut self,
        input: &RecordBatch,
        metadata: &BatchMetadata,
        output: &mut StreamOutput,
    ) -> Result<(), ErrorReport> {
        let name = &self.pending.name;
        if metadata.get(STATUS_KEY) == Some(CONTINUE) {
            if input.num_rows() != 0 {
                return Err(errors::invalid_argument(format!(
                    "{name}(): a CONTINUE tick must have zero rows"
                )));
            }
            if self.pending.queue.is_empty() {
                return Err(errors::invalid_argument(format!(
                    "{name}(): CONTINUE while no output is pending"
                )));
            }
        } else {
            if !self.pending.queue.is_empty() {
                return Err(errors::invalid_argument(format!(
                    "{name}(): new input while output is pending (send CONTINUE first)"
                )));
            }
            let mut emitted = Emitter::new();
            self.state
                .as_mut()
                .expect("state lives until drop")
                .process(input, &mut emitted)?;
            self.pending.push_all(emitted)?;
        }
        let batch = self.pending.queue.pop_front();
        let batch = batch
            .unwrap_or_else(|| RecordBatch::new_empty(self.pending.projection.schema().clone()));
        if self.pending.queue.is_empty() {
            output.emit(batch);
        } else {
            output.emit_with_metadata(
                batch,
                BatchMetadata::from_pairs([(STATUS_KEY, HAVE_MORE_OUTPUT)]),
            );
        }
        Ok(())
    }
}

impl StreamState for InputStream {
    fn process(
        &mut self,
        input: &RecordBatch,
        metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let result = self.step(input, metadata, output);
        self.failed |= result.is_err();
        result
    }

    fn on_cancel(&mut self) {
        self.failed = true;
    }

    /// The `init` request, the function's own state and the output still pending.
    fn snapshot(&self) -> Option<Vec<u8>> {
        let request = self.request.as_ref()?;
        if self.stash.is_some() || self.failed {
            return None;
        }
        let state = self.state.as_ref()?.snapshot()?;
        let pending = if self.pending.queue.is_empty() {
            Vec::new()
        } else {
            let batches: Vec<RecordBatch> = self.pending.queue.iter().cloned().collect();
            quiver_vgi_contract::ipc::encode_batches(self.pending.projection.schema(), &batches)
        };
        Writer::new(carry::INPUT, request)
            .blob(&state)
            .blob(&pending)
            .finish()
    }
}

impl Drop for InputStream {
    /// The server drops the stream when the engine closes its input: that is
    /// the end of the INPUT phase, and the state moves to the registry.
    fn drop(&mut self) {
        if self.failed {
            return;
        }
        if let (Some(target), Some(state)) = (self.stash.take(), self.state.take()) {
            target
                .executions
                .stash(target.execution, target.substream, state);
        }
    }
}

/// One connection's FINALIZE stream.
pub struct FinalizeStream {
    states: Vec<Box<dyn InOutState>>,
    pending: Pending,
    started: bool,
}

impl FinalizeStream {
    /// A stream finalizing `states` (possibly none: then it ends at once).
    pub fn new(
        name: &str,
        states: Vec<Box<dyn InOutState>>,
        output_schema: SchemaRef,
        projection: Projection,
    ) -> FinalizeStream {
        let pending = Pending {
            name: name.to_string(),
            output_schema,
            filters: Filters::none(),
            projection,
            queue: VecDeque::new(),
        };
        FinalizeStream {
            states,
            pending,
            started: false,
        }
    }
}

impl StreamState for FinalizeStream {
    fn process(
        &mut self,
        _tick: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if !self.started {
            self.started = true;
            for state in &mut self.states {
                let mut emitted = Emitter::new();
                state.finalize(&mut emitted)?;
                self.pending.push_all(emitted)?;
            }
        }
        match self.pending.queue.pop_front() {
            Some(batch) => output.emit(batch),
            None => output.finish(),
        }
        Ok(())
    }
}
