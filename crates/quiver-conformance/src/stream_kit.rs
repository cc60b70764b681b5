//! The building blocks of the conformance streams: producers and exchanges driven
//! by closures, and the schemas and batches several stream families share.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{
    CallContext, Method, Service, StreamKind, StreamOutput, StreamSetup, StreamState,
};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::streams::ON_CANCEL_CALLS;

/// One step of a producer: `(tick index, tick metadata, output, ctx)`.
type ProduceStep = dyn FnMut(i64, &BatchMetadata, &mut StreamOutput, &mut CallContext<'_>) -> Result<(), ErrorReport>
    + Send;
/// One step of an exchange: `(input, input metadata, output, ctx)`.
type ExchangeStep = dyn FnMut(
        &RecordBatch,
        &BatchMetadata,
        &mut StreamOutput,
        &mut CallContext<'_>,
    ) -> Result<(), ErrorReport>
    + Send;

/// A producer driven by a closure over the tick count.
pub(crate) struct Producer {
    tick: i64,
    step: Box<ProduceStep>,
    pub(crate) counts_cancel: bool,
}

impl StreamState for Producer {
    fn process(
        &mut self,
        _: &RecordBatch,
        metadata: &BatchMetadata,
        out: &mut StreamOutput,
        ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let tick = self.tick;
        self.tick += 1;
        (self.step)(tick, metadata, out, ctx)
    }

    fn on_cancel(&mut self) {
        if self.counts_cancel {
            ON_CANCEL_CALLS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// An exchange driven by a closure over each input.
pub(crate) struct Exchange {
    step: Box<ExchangeStep>,
    pub(crate) counts_cancel: bool,
}

impl StreamState for Exchange {
    fn process(
        &mut self,
        input: &RecordBatch,
        metadata: &BatchMetadata,
        out: &mut StreamOutput,
        ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        (self.step)(input, metadata, out, ctx)
    }

    fn on_cancel(&mut self) {
        if self.counts_cancel {
            ON_CANCEL_CALLS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

pub(crate) fn producer<F>(step: F) -> Producer
where
    F: FnMut(
            i64,
            &BatchMetadata,
            &mut StreamOutput,
            &mut CallContext<'_>,
        ) -> Result<(), ErrorReport>
        + Send
        + 'static,
{
    Producer {
        tick: 0,
        step: Box::new(step),
        counts_cancel: false,
    }
}

pub(crate) fn exchange<F>(step: F) -> Exchange
where
    F: FnMut(
            &RecordBatch,
            &BatchMetadata,
            &mut StreamOutput,
            &mut CallContext<'_>,
        ) -> Result<(), ErrorReport>
        + Send
        + 'static,
{
    Exchange {
        step: Box::new(step),
        counts_cancel: false,
    }
}

/// `index: int64, value: int64`, both nullable.
pub(crate) fn index_value_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("index", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]))
}

/// `value: float64`, nullable.
pub(crate) fn value_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Float64,
        true,
    )]))
}

pub(crate) fn index_value(index: i64) -> RecordBatch {
    RecordBatch::try_new(
        index_value_schema(),
        vec![
            Arc::new(Int64Array::from(vec![index])),
            Arc::new(Int64Array::from(vec![index * 10])),
        ],
    )
    .expect("columns match schema")
}

/// A producer of `{i, i*10}` for `count` ticks.
pub(crate) fn counting(count: i64) -> StreamSetup {
    StreamSetup::producer(
        index_value_schema(),
        producer(move |tick, _, out, _| {
            if tick >= count {
                out.finish();
            } else {
                out.emit(index_value(tick));
            }
            Ok(())
        }),
    )
}

/// Multiplies `value` by `factor`.
pub(crate) fn scaling(factor: f64) -> Exchange {
    exchange(move |input, _, out, _| {
        let values = input.column(0).as_primitive::<Float64Type>();
        let scaled: Float64Array = values.iter().map(|v| v.map(|v| v * factor)).collect();
        out.emit(
            RecordBatch::try_new(value_schema(), vec![Arc::new(scaled)]).expect("value column"),
        );
        Ok(())
    })
}

pub(crate) fn echo_input() -> Exchange {
    exchange(|input, _, out, _| {
        out.emit(input.clone());
        Ok(())
    })
}

pub(crate) fn int(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}

/// Adds a stream method that takes ticks and emits batches.
pub(crate) fn add_producer(service: &mut Service, method: Method) {
    service.add(method.with_stream_kind(StreamKind::Producer));
}

/// Adds a stream method that answers each input batch with one output batch.
pub(crate) fn add_exchange(service: &mut Service, method: Method) {
    service.add(method.with_stream_kind(StreamKind::Exchange));
}
