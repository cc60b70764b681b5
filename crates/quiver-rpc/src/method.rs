//! Method definitions: a name, Arrow schemas for what goes in and out, and a body.
//!
//! Definitions are schema-first: the schemas are what the wire carries and what a
//! peer's `__describe__` sees, so they are stated once, up front, and the server
//! checks every request and reply against them.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_wire::{empty_schema, BatchMetadata, ErrorReport, LogRecord};

use crate::context::CallContext;
use crate::params::Params;

/// Body of a unary method: arguments in, the `result` value out as a one-element
/// array (`None` for a void method).
pub type UnaryBody =
    dyn Fn(&Params, &mut CallContext<'_>) -> Result<Option<ArrayRef>, ErrorReport> + Send + Sync;

/// Body of a stream method: arguments in, the stream's shape and state out.
pub type StreamBody =
    dyn Fn(&Params, &mut CallContext<'_>) -> Result<StreamSetup, ErrorReport> + Send + Sync;

/// Rebuilds a stream's state from the bytes its [`StreamState::snapshot`] gave, so an HTTP
/// stream's next turn can run on any replica (see [`Method::with_resume`]).
pub type ResumeBody = dyn Fn(&[u8]) -> Result<Box<dyn StreamState>, ErrorReport> + Send + Sync;

/// The two method kinds of the wire; producers and exchanges are both streams,
/// told apart by their input schema (empty for a producer).
#[derive(Clone)]
pub enum Body {
    /// One request, one reply.
    Unary(Arc<UnaryBody>),
    /// One request, then lockstep input and output batches.
    Stream(Arc<StreamBody>),
}

/// What a stream method does with input, as reflection reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// Not declared (and always so for a unary method).
    Unknown,
    /// Takes ticks, emits batches until it finishes.
    Producer,
    /// Takes one input batch per output batch.
    Exchange,
}

/// A method a service offers.
#[derive(Clone)]
pub struct Method {
    /// Name on the wire.
    pub name: String,
    /// One column per parameter; the request batch has exactly this schema.
    pub params_schema: SchemaRef,
    /// Unary reply schema: one `result` field, or empty for void.
    pub result_schema: SchemaRef,
    /// Schema of the header a stream sends before its batches, if any.
    pub header_schema: Option<SchemaRef>,
    /// For a stream, whether it takes input; what reflection tells clients.
    pub stream_kind: StreamKind,
    /// Documentation shown to peers.
    pub doc: String,
    /// What the method does.
    pub body: Body,
    /// For a stream whose state can be serialised: how to rebuild it (HTTP only).
    pub resume: Option<Arc<ResumeBody>>,
}

impl Method {
    /// A unary method returning one `result` value of `result_type` (`None` for void).
    pub fn unary<F>(name: &str, params: Vec<Field>, result_type: Option<Field>, body: F) -> Method
    where
        F: Fn(&Params, &mut CallContext<'_>) -> Result<Option<ArrayRef>, ErrorReport>
            + Send
            + Sync
            + 'static,
    {
        let result_schema = match result_type {
            Some(field) => Arc::new(Schema::new(vec![field])),
            None => empty_schema(),
        };
        Method {
            name: name.to_string(),
            params_schema: Arc::new(Schema::new(params)),
            result_schema,
            header_schema: None,
            stream_kind: StreamKind::Unknown,
            doc: String::new(),
            body: Body::Unary(Arc::new(body)),
            resume: None,
        }
    }

    /// A stream method (producer or exchange, decided by the setup it returns).
    pub fn stream<F>(
        name: &str,
        params: Vec<Field>,
        header_schema: Option<SchemaRef>,
        body: F,
    ) -> Method
    where
        F: Fn(&Params, &mut CallContext<'_>) -> Result<StreamSetup, ErrorReport>
            + Send
            + Sync
            + 'static,
    {
        Method {
            name: name.to_string(),
            params_schema: Arc::new(Schema::new(params)),
            result_schema: empty_schema(),
            header_schema,
            stream_kind: StreamKind::Unknown,
            doc: String::new(),
            body: Body::Stream(Arc::new(body)),
            resume: None,
        }
    }

    /// Declares whether a stream method is a producer or an exchange. The body
    /// decides at call time (by the input schema of its [`StreamSetup`]); this
    /// states it ahead of the call, for clients that ask before calling.
    pub fn with_stream_kind(mut self, kind: StreamKind) -> Method {
        assert!(!self.is_unary(), "only a stream has a stream kind");
        self.stream_kind = kind;
        self
    }

    /// Lets this stream's state travel in its HTTP cursor token: `resume` rebuilds a state from
    /// the bytes [`StreamState::snapshot`] returned. Without it (or when a state returns `None`)
    /// an HTTP stream's state stays in the process that opened it.
    pub fn with_resume<F>(mut self, resume: F) -> Method
    where
        F: Fn(&[u8]) -> Result<Box<dyn StreamState>, ErrorReport> + Send + Sync + 'static,
    {
        assert!(!self.is_unary(), "only a stream has state to resume");
        self.resume = Some(Arc::new(resume));
        self
    }

    /// Sets the documentation.
    pub fn with_doc(mut self, doc: impl Into<String>) -> Method {
        self.doc = doc.into();
        self
    }

    /// Whether this is a unary method.
    pub fn is_unary(&self) -> bool {
        matches!(self.body, Body::Unary(_))
    }
}

/// The shape and state of a stream, returned by a stream method's body.
pub struct StreamSetup {
    /// The header batch (one row of the method's header schema), for methods
    /// that declare one.
    pub header: Option<RecordBatch>,
    /// Input schema; empty for a producer (the client sends zero-row ticks).
    pub input_schema: SchemaRef,
    /// Output schema.
    pub output_schema: SchemaRef,
    /// Called once per input batch or tick.
    pub state: Box<dyn StreamState>,
}

impl StreamSetup {
    /// A producer: ticks in, `output_schema` batches out.
    pub fn producer(output_schema: SchemaRef, state: impl StreamState + 'static) -> StreamSetup {
        StreamSetup {
            header: None,
            input_schema: empty_schema(),
            output_schema,
            state: Box::new(state),
        }
    }

    /// An exchange: `input_schema` batches in, one `output_schema` batch out per input.
    pub fn exchange(
        input_schema: SchemaRef,
        output_schema: SchemaRef,
        state: impl StreamState + 'static,
    ) -> Self {
        StreamSetup {
            header: None,
            input_schema,
            output_schema,
            state: Box::new(state),
        }
    }

    /// Adds a header batch.
    pub fn with_header(mut self, header: RecordBatch) -> StreamSetup {
        self.header = Some(header);
        self
    }

    /// Whether the client sends ticks rather than data.
    pub fn is_producer(&self) -> bool {
        self.input_schema.fields().is_empty()
    }
}

/// The per-call state of a stream.
pub trait StreamState: Send {
    /// Handles one input batch (a zero-row tick for producers), emitting exactly one
    /// output batch, or finishing the stream.
    fn process(
        &mut self,
        input: &RecordBatch,
        input_metadata: &BatchMetadata,
        output: &mut StreamOutput,
        ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport>;

    /// Called when the client cancels the stream.
    fn on_cancel(&mut self) {}

    /// The state as bytes the method's resume hook ([`Method::with_resume`]) rebuilds it from,
    /// so an HTTP stream's next turn can land on any replica; `None` keeps it in this process.
    fn snapshot(&self) -> Option<Vec<u8>> {
        None
    }
}

/// What one `process` step emitted.
#[derive(Default)]
pub struct StreamOutput {
    pub(crate) items: Vec<OutputItem>,
    pub(crate) batch_count: usize,
    pub(crate) finished: bool,
}

pub(crate) enum OutputItem {
    Log(LogRecord),
    Batch(RecordBatch, BatchMetadata),
}

impl StreamOutput {
    /// Emits the step's output batch.
    pub fn emit(&mut self, batch: RecordBatch) {
        self.emit_with_metadata(batch, BatchMetadata::new());
    }

    /// Emits the step's output batch with custom metadata.
    pub fn emit_with_metadata(&mut self, batch: RecordBatch, metadata: BatchMetadata) {
        self.batch_count += 1;
        self.items.push(OutputItem::Batch(batch, metadata));
    }

    /// Sends a log record before the batch.
    pub fn log(&mut self, record: LogRecord) {
        self.items.push(OutputItem::Log(record));
    }

    /// Ends the stream (producers): the server closes its output after this step.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Whether `finish` was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

/// A nullable-or-not field, shorthand for method definitions.
pub fn field(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}
