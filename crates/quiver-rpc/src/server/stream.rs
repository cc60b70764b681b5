//! A stream call on the server: the header, then one turn per input batch (a tick for a
//! producer, data for an exchange) until the state finishes, the client cancels or a turn fails.

use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use quiver_wire::{
    empty_schema, keys, BatchMetadata, ErrorReport, LogRecord, StreamReader, StreamWriter,
    WireError,
};

use super::{origin, Session};
use crate::conform;
use crate::context::CallContext;
use crate::link::ConnectionError;
use crate::method::{Method, OutputItem, StreamOutput, StreamSetup};
use crate::params::Params;

impl Session<'_> {
    pub(super) fn serve_stream(
        &mut self,
        method: &Method,
        body: &crate::method::StreamBody,
        params: &Params,
        request_metadata: &BatchMetadata,
    ) -> Result<(), ConnectionError> {
        let Some((mut setup, pending_logs)) =
            self.open_stream(method, body, params, request_metadata)?
        else {
            return self.drain_input();
        };
        let mut input = self.open_input()?;
        let output_schema = setup.output_schema.clone();
        let mut output = StreamWriter::begin(&output_schema, &mut self.out)?;
        for record in &pending_logs {
            self.write_record(&mut output, record)?;
        }
        loop {
            self.flush()?;
            let next = self
                .link
                .wait_for_peer(self.shm.as_mut(), |peer| input.next(peer));
            let next = match next {
                // The body was read past: answer with the limit, then drain as after any error.
                Err(error @ WireError::BodySkipped { .. }) => {
                    let report = ErrorReport::limit_exceeded(format!("input batch: {error}"))
                        .with_synthesized_traceback(&origin(method, request_metadata));
                    self.write_record(&mut output, &report.to_record())?;
                    break;
                }
                next => next?,
            };
            let Some((batch, metadata)) = next else {
                break;
            };
            if metadata.contains(keys::CANCEL) && batch.num_rows() == 0 {
                setup.state.on_cancel();
                break;
            }
            let (batch, metadata) = self.resolve_input(batch, metadata)?;
            let step = self.turn(method, &mut setup, &output_schema, batch, &metadata);
            let finished = match step {
                Ok((items, finished)) => {
                    self.write_items(&mut output, items)?;
                    finished
                }
                Err(report) => {
                    let report =
                        report.with_synthesized_traceback(&origin(method, request_metadata));
                    self.write_record(&mut output, &report.to_record())?;
                    true
                }
            };
            if finished {
                break;
            }
        }
        output.finish(&mut self.out);
        self.flush()?;
        if !input.is_finished() {
            self.link
                .wait_for_peer(self.shm.as_mut(), |peer| input.drain(peer))?;
        }
        Ok(())
    }

    /// Waits for the client to open the stream's input.
    fn open_input(&mut self) -> Result<StreamReader, ConnectionError> {
        let limits = self.limits();
        let input = self
            .link
            .wait_for_peer(self.shm.as_mut(), |peer| StreamReader::begin(peer, limits))?;
        input.ok_or_else(|| {
            WireError::Truncated("client closed before opening the stream input".into()).into()
        })
    }

    /// Runs the method's body and sends the header (or the refusal); `None` when it refused.
    fn open_stream(
        &mut self,
        method: &Method,
        body: &crate::method::StreamBody,
        params: &Params,
        request_metadata: &BatchMetadata,
    ) -> Result<Option<(StreamSetup, Vec<LogRecord>)>, ConnectionError> {
        let mut ctx = CallContext::new(&method.name, request_metadata);
        let setup = body(params, &mut ctx).and_then(|setup| conform::check_header(method, setup));
        let mut pending_logs = ctx.take_logs();
        let mut setup: StreamSetup = match setup {
            Ok(setup) => setup,
            Err(report) => {
                let report = report.with_synthesized_traceback(&origin(method, request_metadata));
                self.write_stream_with_logs(&empty_schema(), &pending_logs, None, Some(&report))?;
                self.flush()?;
                return Ok(None);
            }
        };
        if let (Some(header_schema), Some(header)) = (&method.header_schema, setup.header.take()) {
            let logs = std::mem::take(&mut pending_logs);
            self.write_stream_with_logs(header_schema, &logs, Some(header), None)?;
        }
        self.flush()?;
        Ok(Some((setup, pending_logs)))
    }

    /// One turn of the state over an input batch: its logs and conformed outputs, and whether
    /// the stream finished. The input is dropped on return, before anything is written, so an
    /// output passed back unchanged is its region's only holder (`ShmRoute::try_write`).
    fn turn(
        &mut self,
        method: &Method,
        setup: &mut StreamSetup,
        output_schema: &SchemaRef,
        batch: RecordBatch,
        metadata: &BatchMetadata,
    ) -> Result<(Vec<OutputItem>, bool), ErrorReport> {
        let batch = conform::conform_input(&setup.input_schema, batch)?;
        let output_space = self.shm.as_ref().map(|route| route.output_space());
        let mut ctx =
            CallContext::new(&method.name, metadata).with_output(output_space.unwrap_or_default());
        let mut step = StreamOutput::default();
        let started = Instant::now();
        let outcome = setup.state.process(&batch, metadata, &mut step, &mut ctx);
        self.add_process_time(started);
        let mut items: Vec<OutputItem> = ctx.take_logs().into_iter().map(OutputItem::Log).collect();
        outcome?;
        conform::check_step(&step, setup.is_producer())?;
        // Conform every output before writing any: a turn that fails sends only its error, never
        // part of its output.
        for item in step.items {
            items.push(match item {
                OutputItem::Batch(batch, metadata) => {
                    OutputItem::Batch(conform::conform_output(output_schema, batch)?, metadata)
                }
                log => log,
            });
        }
        Ok((items, step.finished))
    }

    /// Writes a turn's logs and batches, each batch through shared memory when it qualifies.
    fn write_items(
        &mut self,
        output: &mut StreamWriter,
        items: Vec<OutputItem>,
    ) -> Result<(), ConnectionError> {
        for item in items {
            match item {
                OutputItem::Log(record) => self.write_record(output, &record)?,
                OutputItem::Batch(batch, metadata) => {
                    let (batch, metadata) = self.route_output(batch, metadata)?;
                    output.write(&batch, &metadata, &mut self.out)?;
                }
            }
        }
        Ok(())
    }

    /// Reads and discards the input stream a client sends after a failed stream
    /// start, so the next request starts on a clean boundary.
    fn drain_input(&mut self) -> Result<(), ConnectionError> {
        let limits = self.limits();
        let drained =
            self.link.wait_for_peer(self.shm.as_mut(), |peer| {
                match StreamReader::begin(peer, limits)? {
                    Some(mut input) => input.drain(peer).map(|_| ()),
                    None => Ok(()),
                }
            });
        Ok(drained?)
    }
}
