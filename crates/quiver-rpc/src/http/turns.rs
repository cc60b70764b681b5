//! A stream call over HTTP on the client side: the tokens between turns and the answers a
//! response carried that the caller has not taken yet.
//!
//! `/init` answers with the header (if any) and the first output stream: for a producer its
//! first turn (batches, then a zero-row batch carrying the cursor and the call token, or no
//! token once it finished); for an exchange only that token batch. Each `/exchange` answers one
//! turn: an exchange's one data batch carries the next cursor in its metadata; a producer's turn
//! is any number of batches (as many as the server's turn budget holds) followed by a zero-row
//! token batch; no cursor means the stream ended. A producer's ticks are answered from the
//! queued batches, and only an empty queue sends the next `/exchange`.

use std::collections::VecDeque;

use arrow_array::RecordBatch;
use quiver_wire::{keys, BatchMetadata, ErrorReport};

/// The client's view of one HTTP stream call between its requests.
#[derive(Default)]
pub(crate) struct HttpTurns {
    pub protocol: Option<String>,
    pub method: String,
    cursor: Option<String>,
    call: Option<String>,
    answers: VecDeque<(RecordBatch, BatchMetadata)>,
    error: Option<ErrorReport>,
    /// The last response carried no cursor: nothing follows what is buffered.
    ended: bool,
}

impl HttpTurns {
    pub fn new(protocol: Option<String>, method: &str) -> HttpTurns {
        HttpTurns {
            protocol,
            method: method.to_string(),
            ..HttpTurns::default()
        }
    }

    /// Starts reading one response's output stream.
    pub fn begin_response(&mut self) {
        self.ended = true;
    }

    /// Takes one non-log batch of a response; `ticked`: the request was a producer's tick.
    pub fn absorb(&mut self, batch: RecordBatch, mut metadata: BatchMetadata, ticked: bool) {
        let cursor = metadata.remove(keys::STREAM_STATE);
        let call = metadata.remove(keys::CALL_STATE);
        let sentinel = call.is_some() || (ticked && cursor.is_some() && batch.num_rows() == 0);
        if let Some(cursor) = cursor {
            self.cursor = Some(cursor);
            self.ended = false;
        }
        if call.is_some() {
            self.call = call;
        }
        if !sentinel {
            self.answers.push_back((batch, metadata));
        }
    }

    /// Records a response's error: the stream is over.
    pub fn fail(&mut self, report: ErrorReport) {
        self.error = Some(report);
        self.ended = true;
    }

    /// Whether the next send must go on the wire: nothing is queued (a producer's turn answers
    /// many ticks; an exchange's answer is taken before its next send) and the stream goes on.
    pub fn needs_request(&self) -> bool {
        self.answers.is_empty() && !self.ended && self.error.is_none()
    }

    /// The metadata of the next request: the caller's, plus the tokens.
    pub fn tokens(&self, mut metadata: BatchMetadata) -> BatchMetadata {
        if let Some(cursor) = &self.cursor {
            metadata.insert(keys::STREAM_STATE, cursor.as_str());
        }
        if let Some(call) = &self.call {
            metadata.insert(keys::CALL_STATE, call.as_str());
        }
        metadata
    }

    /// Whether the server still holds the stream open (a cancel must reach it).
    pub fn open_on_server(&self) -> bool {
        !self.ended && self.error.is_none() && self.cursor.is_some()
    }

    /// The next answer: a batch, the stream's error, or `Ok(None)` at its end; `Err(None)`
    /// when a response carried no answer at all.
    pub fn next_answer(
        &mut self,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, Option<ErrorReport>> {
        if let Some(answer) = self.answers.pop_front() {
            return Ok(Some(answer));
        }
        if let Some(report) = self.error.take() {
            return Err(Some(report));
        }
        if self.ended {
            return Ok(None);
        }
        Err(None)
    }
}
