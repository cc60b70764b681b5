//! How a call's or a turn's output becomes a response body: the stamp every log and error record
//! carries, one `process` step of a stream, and the Arrow stream the items are written into.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_wire::{keys, BatchMetadata, ErrorReport, LogRecord, StreamWriter, WireError};

use super::app::Reply;
use super::streams::OpenStream;
use crate::conform;
use crate::context::CallContext;
use crate::method::{Method, OutputItem, StreamOutput};
use crate::server::Server;

/// The server and request ids every log and error record of a call carries.
pub(super) struct Stamp {
    server_id: String,
    pub(super) request_id: String,
}

impl Stamp {
    pub(super) fn new(server: &Server, request_id: &str) -> Stamp {
        Stamp {
            server_id: server.config().server_id.clone(),
            request_id: request_id.to_string(),
        }
    }

    pub(super) fn record(
        &self,
        writer: &mut StreamWriter,
        out: &mut Vec<u8>,
        record: &LogRecord,
    ) -> Result<(), WireError> {
        let mut metadata = record.to_metadata();
        metadata.insert(keys::SERVER_ID, self.server_id.as_str());
        if !self.request_id.is_empty() {
            metadata.insert(keys::REQUEST_ID, self.request_id.as_str());
        }
        let empty = RecordBatch::new_empty(writer.schema().clone());
        writer.write(&empty, &metadata, out)
    }

    pub(super) fn reply(&self, body: Vec<u8>, failed: bool, parked: Option<[u8; 16]>) -> Reply {
        Reply {
            body,
            failed,
            parked,
            soft_cap: false,
            request_id: self.request_id.clone(),
        }
    }
}

/// One `process` step of `stream`: its logs and conformed batches, and whether it finished.
pub(super) fn step(
    method: &Method,
    stream: &mut OpenStream,
    input: &RecordBatch,
    input_metadata: &BatchMetadata,
) -> Result<(Vec<OutputItem>, bool), ErrorReport> {
    let producer = stream.is_producer(method);
    let batch = conform::conform_input(&stream.input_schema, input.clone())?;
    let mut ctx = CallContext::new(&method.name, input_metadata);
    let mut step = StreamOutput::default();
    let outcome = stream
        .state
        .process(&batch, input_metadata, &mut step, &mut ctx);
    let mut items: Vec<OutputItem> = ctx.take_logs().into_iter().map(OutputItem::Log).collect();
    outcome?;
    conform::check_step(&step, producer)?;
    for item in step.items {
        items.push(match item {
            OutputItem::Batch(batch, metadata) => OutputItem::Batch(
                conform::conform_output(&stream.output_schema, batch)?,
                metadata,
            ),
            log => log,
        });
    }
    Ok((items, step.finished))
}

/// Writes a step's logs and batches; `cursor`, an exchange's next one, rides on its batch.
pub(super) fn write_items(
    writer: &mut StreamWriter,
    out: &mut Vec<u8>,
    stamp: &Stamp,
    items: Vec<OutputItem>,
    cursor: Option<&str>,
) -> Result<(), WireError> {
    for item in items {
        match item {
            OutputItem::Log(record) => stamp.record(writer, out, &record)?,
            OutputItem::Batch(batch, mut metadata) => {
                if let Some(cursor) = cursor {
                    metadata.insert(keys::STREAM_STATE, cursor);
                }
                writer.write(&batch, &metadata, out)?;
            }
        }
    }
    Ok(())
}

/// Writes one complete stream on `schema`: `logs`, then what `fill` writes.
pub(super) fn write_stream(
    out: &mut Vec<u8>,
    schema: &SchemaRef,
    stamp: &Stamp,
    logs: &[LogRecord],
    fill: impl FnOnce(&mut StreamWriter, &mut Vec<u8>) -> Result<(), WireError>,
) {
    let written = (|| {
        let mut writer = StreamWriter::begin(schema, out)?;
        for record in logs {
            stamp.record(&mut writer, out, record)?;
        }
        fill(&mut writer, out)?;
        writer.finish(out);
        Ok::<(), WireError>(())
    })();
    // Writing into memory fails only on a batch the writer cannot encode; the conform checks
    // ran before, so this names a bug rather than a peer's mistake.
    if let Err(error) = written {
        panic!("encoding an HTTP reply in memory failed: {error}");
    }
}
