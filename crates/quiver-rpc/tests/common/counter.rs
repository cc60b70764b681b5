//! The counting producer the HTTP tests stream: `count` carries its state in its cursor token,
//! `held_count` keeps it in the server between turns.
#![allow(dead_code)] // each test file uses a part of it

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{field, Method, StreamKind, StreamOutput, StreamSetup, StreamState};
use quiver_wire::{BatchMetadata, ErrorReport};

/// Counts from `next` up to `end`, one row per step; fails at `fail_at` when set; sleeps `pause`
/// before each step. Its snapshot is `next` and `end`, two big-endian integers.
#[derive(Clone)]
pub struct Count {
    pub next: i64,
    pub end: i64,
    pub fail_at: Option<i64>,
    pub pause: Duration,
}

impl StreamState for Count {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        output: &mut StreamOutput,
        _: &mut quiver_rpc::CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if !self.pause.is_zero() {
            std::thread::sleep(self.pause);
        }
        if self.fail_at == Some(self.next) {
            return Err(ErrorReport::new("ValueError", format!("no {}", self.next)));
        }
        if self.next >= self.end {
            output.finish();
            return Ok(());
        }
        let column: ArrayRef = Arc::new(Int64Array::from(vec![self.next]));
        output.emit(RecordBatch::try_new(count_schema(), vec![column]).expect("one column"));
        self.next += 1;
        Ok(())
    }

    fn snapshot(&self) -> Option<Vec<u8>> {
        let mut bytes = self.next.to_be_bytes().to_vec();
        bytes.extend_from_slice(&self.end.to_be_bytes());
        Some(bytes)
    }
}

/// The counter without a snapshot: its state stays in the server between turns.
pub struct Held(pub Count);

impl StreamState for Held {
    fn process(
        &mut self,
        input: &RecordBatch,
        metadata: &BatchMetadata,
        output: &mut StreamOutput,
        ctx: &mut quiver_rpc::CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        self.0.process(input, metadata, output, ctx)
    }
}

pub fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
}

pub fn count_params() -> Vec<Field> {
    vec![field("end", DataType::Int64, false)]
}

/// A counter from 0 to `end`, at full speed, never failing.
pub fn counter(end: i64) -> Count {
    Count {
        next: 0,
        end,
        fail_at: None,
        pause: Duration::ZERO,
    }
}

/// `count(end)`: a producer whose state travels in its cursor token.
pub fn count_method() -> Method {
    Method::stream("count", count_params(), None, |params, _| {
        Ok(StreamSetup::producer(
            count_schema(),
            counter(params.i64("end")?),
        ))
    })
    .with_stream_kind(StreamKind::Producer)
    .with_resume(|bytes| {
        if bytes.len() != 16 {
            return Err(ErrorReport::new("ValueError", "a count state is 16 bytes"));
        }
        let int = |at: usize| i64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let mut state = counter(int(8));
        state.next = int(0);
        Ok(Box::new(state) as Box<dyn StreamState>)
    })
}

/// `held_count(end)`: the same producer held by the server that opened it.
pub fn held_count_method() -> Method {
    Method::stream("held_count", count_params(), None, |params, _| {
        Ok(StreamSetup::producer(
            count_schema(),
            Held(counter(params.i64("end")?)),
        ))
    })
    .with_stream_kind(StreamKind::Producer)
}
