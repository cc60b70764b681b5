//! The stream calls of [`App`]: `/init` opens one (a producer's first turn runs at once),
//! `/exchange` runs one more turn or a cancel, and a turn steps the stream into the response.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use quiver_wire::{empty_schema, keys, BatchMetadata, ErrorReport, LogRecord};

use super::super::output::{step, write_items, write_stream, Stamp};
use super::super::streams::{OpenStream, StreamTable};
use super::{malformed, App, Refused, Reply, TURN_TIME_MAX};
use crate::conform;
use crate::context::CallContext;
use crate::method::Method;
use crate::params::Params;
use crate::server::origin;

impl App {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open(
        &self,
        binding: &str,
        method: &Method,
        body: &Arc<crate::method::StreamBody>,
        params: &Params,
        metadata: &BatchMetadata,
        stamp: Stamp,
        turn_bytes: Option<u64>,
    ) -> Reply {
        let mut ctx = CallContext::new(&method.name, metadata);
        let setup = body(params, &mut ctx).and_then(|setup| conform::check_header(method, setup));
        let mut logs = ctx.take_logs();
        let mut out = Vec::new();
        let mut setup = match setup {
            Ok(setup) => setup,
            Err(report) => {
                let report = report.with_synthesized_traceback(&origin(method, metadata));
                write_stream(&mut out, &empty_schema(), &stamp, &logs, |writer, out| {
                    stamp.record(writer, out, &report.to_record())
                });
                return stamp.reply(out, true, None);
            }
        };
        if let (Some(schema), Some(header)) = (&method.header_schema, setup.header.take()) {
            let logs = std::mem::take(&mut logs);
            write_stream(&mut out, schema, &stamp, &logs, |writer, out| {
                writer.write(&header, &BatchMetadata::new(), out)
            });
        }
        let stream = OpenStream {
            call_id: StreamTable::new_call_id(),
            turn: 0,
            request_id: stamp.request_id.clone(),
            input_schema: setup.input_schema.clone(),
            output_schema: setup.output_schema.clone(),
            state: setup.state,
        };
        let call_token = self.streams.call_token(binding, &stream);
        let output_schema = stream.output_schema.clone();
        if stream.is_producer(method) {
            // Over HTTP a producer's first turn runs inside /init, its tick carrying the /init
            // request's own metadata.
            let tick = RecordBatch::new_empty(empty_schema());
            let user = user_metadata(metadata);
            let turn = Turn {
                binding,
                method,
                input: &tick,
                input_metadata: &user,
                call_token: Some(&call_token),
                stamp: &stamp,
                logs: &logs,
                bytes: turn_bytes,
            };
            let (failed, parked) = self.turn(stream, &turn, &mut out);
            let mut reply = stamp.reply(out, failed, parked);
            reply.soft_cap = turn_bytes.is_some();
            return reply;
        }
        let call_id = stream.call_id;
        let cursor = self.streams.park(binding, method, stream);
        let tokens = BatchMetadata::from_pairs([
            (keys::STREAM_STATE, cursor),
            (keys::CALL_STATE, call_token),
        ]);
        write_stream(&mut out, &output_schema, &stamp, &logs, |writer, out| {
            writer.write(&RecordBatch::new_empty(output_schema.clone()), &tokens, out)
        });
        stamp.reply(out, false, Some(call_id))
    }

    pub(super) fn exchange(
        &self,
        binding: &str,
        method: &Method,
        body: Vec<u8>,
        turn_bytes: Option<u64>,
    ) -> Result<Reply, Refused> {
        let mut batches = self.stream(body)?;
        if batches.is_empty() {
            return Err(Refused(
                400,
                malformed("an /exchange request carries one batch".into()),
            ));
        }
        let (batch, metadata) = batches.swap_remove(0);
        let cursor = metadata.get(keys::STREAM_STATE).ok_or_else(|| {
            Refused(
                400,
                ErrorReport::new("RuntimeError", "Missing state token in exchange request"),
            )
        })?;
        let call = metadata.get(keys::CALL_STATE).ok_or_else(|| {
            Refused(
                400,
                ErrorReport::new("RuntimeError", "Missing call token in exchange request"),
            )
        })?;
        let call = self
            .streams
            .open_call_token(binding, call)
            .map_err(|report| Refused(400, report))?;
        let mut stream = self
            .streams
            .take(binding, method, cursor, &call)
            .map_err(|report| Refused(400, report))?;
        let stamp = Stamp::new(&self.server, &stream.request_id);
        if metadata.contains(keys::CANCEL) && batch.num_rows() == 0 {
            stream.state.on_cancel();
            let mut out = Vec::new();
            write_stream(&mut out, &stream.output_schema, &stamp, &[], |_, _| Ok(()));
            return Ok(stamp.reply(out, false, None));
        }
        let user = user_metadata(&metadata);
        let producer = stream.is_producer(method);
        let turn = Turn {
            binding,
            method,
            input: &batch,
            input_metadata: &user,
            call_token: None,
            stamp: &stamp,
            logs: &[],
            bytes: turn_bytes,
        };
        let mut out = Vec::new();
        let (failed, parked) = self.turn(stream, &turn, &mut out);
        let mut reply = stamp.reply(out, failed, parked);
        reply.soft_cap = producer && turn_bytes.is_some();
        Ok(reply)
    }

    /// Runs one turn and appends its output stream to `out`, the next cursor included: whether
    /// it failed, and the call id when the stream goes on. An exchange steps once; a producer
    /// once too, or, given a byte budget, until it finishes, fails, or the turn's bytes or time
    /// run out.
    fn turn(
        &self,
        mut stream: OpenStream,
        turn: &Turn<'_>,
        out: &mut Vec<u8>,
    ) -> (bool, Option<[u8; 16]>) {
        let (binding, method, stamp) = (turn.binding, turn.method, turn.stamp);
        let producer = stream.is_producer(method);
        let output_schema = stream.output_schema.clone();
        let started = Instant::now();
        let budget = turn
            .bytes
            .map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
        let no_metadata = BatchMetadata::new();
        let mut input_metadata = turn.input_metadata;
        let mut failed = false;
        let mut parked = None;
        write_stream(out, &output_schema, stamp, turn.logs, |writer, out| loop {
            let (items, finished) = match step(method, &mut stream, turn.input, input_metadata) {
                Ok(step) => step,
                Err(report) => {
                    // Batches already written stay: the client takes them, then the error.
                    failed = true;
                    let report = report.with_synthesized_traceback(binding);
                    return stamp.record(writer, out, &report.to_record());
                }
            };
            // The request's metadata is the first step's; the steps after it see a bare tick.
            input_metadata = &no_metadata;
            if !producer {
                let call_id = stream.call_id;
                let cursor = (!finished).then(|| self.streams.park(binding, method, stream));
                parked = cursor.as_ref().map(|_| call_id);
                return write_items(writer, out, stamp, items, cursor.as_deref());
            }
            write_items(writer, out, stamp, items, None)?;
            if finished {
                return Ok(());
            }
            if budget.is_some_and(|budget| out.len() < budget) && started.elapsed() < TURN_TIME_MAX
            {
                continue;
            }
            let call_id = stream.call_id;
            let cursor = self.streams.park(binding, method, stream);
            parked = Some(call_id);
            let mut tokens = BatchMetadata::from_pairs([(keys::STREAM_STATE, cursor.as_str())]);
            if let Some(call_token) = turn.call_token {
                tokens.insert(keys::CALL_STATE, call_token);
            }
            writer.write(&RecordBatch::new_empty(output_schema.clone()), &tokens, out)?;
            return Ok(());
        });
        (failed, parked)
    }
}

/// What one stream turn runs on, besides the stream itself.
struct Turn<'a> {
    binding: &'a str,
    method: &'a Method,
    /// The request's batch: an exchange's input, or a producer's tick (every step's tick).
    input: &'a RecordBatch,
    /// The request's own metadata, which the turn's first step sees.
    input_metadata: &'a BatchMetadata,
    /// Rides on the first cursor, in the `/init` response alone.
    call_token: Option<&'a str>,
    stamp: &'a Stamp,
    /// Records to write ahead of the turn's output (the `/init` call's own logs).
    logs: &'a [LogRecord],
    /// A producer turn ends once its body reaches this many bytes; `None`: after one step.
    bytes: Option<u64>,
}

fn user_metadata(metadata: &BatchMetadata) -> BatchMetadata {
    let mut user = BatchMetadata::new();
    for (key, value) in metadata.iter() {
        if key != keys::STREAM_STATE && key != keys::CALL_STATE && key != keys::CANCEL {
            user.insert(key, value);
        }
    }
    user
}
