//! What a method body sees besides its arguments: the request's metadata and a way
//! to send logs to the client.

use quiver_wire::{BatchMetadata, LogLevel, LogRecord};

use quiver_shm::OutputBuffer;

use crate::output::OutputSpace;

/// Per-call context handed to method bodies.
pub struct CallContext<'a> {
    /// The method being called.
    pub method: &'a str,
    /// Custom metadata of the request batch (or of the current input batch for
    /// stream steps).
    pub request_metadata: &'a BatchMetadata,
    pub(crate) logs: Vec<LogRecord>,
    output: OutputSpace,
}

impl<'a> CallContext<'a> {
    pub(crate) fn new(method: &'a str, request_metadata: &'a BatchMetadata) -> Self {
        Self {
            method,
            request_metadata,
            logs: Vec::new(),
            output: OutputSpace::default(),
        }
    }

    /// Lets the call build its output in `output` (the connection's segment).
    pub(crate) fn with_output(mut self, output: OutputSpace) -> Self {
        self.output = output;
        self
    }

    /// Memory in the connection's shared-memory segment for one buffer of a batch this call will
    /// send; `None` without a segment, below the size worth one, or when the segment is full
    /// (build on the heap then). A batch whose buffers all come from one such call, and that
    /// nothing else still holds when it is sent, crosses without a copy: build the arrays over
    /// [`OutputBuffer::into_buffer`] and emit them.
    pub fn output_buffer(&self, len_bytes: usize) -> Option<OutputBuffer> {
        self.output.buffer(len_bytes)
    }

    /// Sends a log record to the client, ahead of the reply it belongs to.
    pub fn log(&mut self, record: LogRecord) {
        self.logs.push(record);
    }

    /// Sends a plain message at `level`.
    pub fn log_message(&mut self, level: LogLevel, message: impl Into<String>) {
        self.logs.push(LogRecord::new(level, message));
    }

    pub(crate) fn take_logs(&mut self) -> Vec<LogRecord> {
        std::mem::take(&mut self.logs)
    }
}
