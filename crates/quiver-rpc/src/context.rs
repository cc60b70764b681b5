//! What a method body sees besides its arguments: the request's metadata and a way
//! to send logs to the client.

use quiver_wire::{BatchMetadata, LogLevel, LogRecord};

/// Per-call context handed to method bodies.
pub struct CallContext<'a> {
    /// The method being called.
    pub method: &'a str,
    /// Custom metadata of the request batch (or of the current input batch for
    /// stream steps).
    pub request_metadata: &'a BatchMetadata,
    pub(crate) logs: Vec<LogRecord>,
}

impl<'a> CallContext<'a> {
    pub(crate) fn new(method: &'a str, request_metadata: &'a BatchMetadata) -> Self {
        Self {
            method,
            request_metadata,
            logs: Vec::new(),
        }
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
