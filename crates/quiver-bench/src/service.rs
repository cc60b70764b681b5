//! `BenchService` 1.0.0: the methods every workload calls, and the batches they move.
//!
//! The Python peer (`bench/peers/vgi_rpc_bench.py`) defines the same protocol with
//! vgi-rpc; both sides hand out pre-built batches so that what is measured is the
//! RPC path, not batch construction.

use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{field, CallContext, Method, Service, StreamOutput, StreamSetup, StreamState};
use quiver_wire::{BatchMetadata, ErrorReport};

/// Protocol name on the wire.
pub const PROTOCOL_NAME: &str = "BenchService";
/// Protocol version on the wire.
pub const PROTOCOL_VERSION: &str = "1.0.0";

/// Rows in a small batch (three columns: int64, float64, utf8).
pub const SMALL_ROWS: usize = 1024;
/// Rows in a large batch: 2M int64 values, 16 MiB of column data.
pub const LARGE_ROWS: usize = 2 * 1024 * 1024;
/// Column bytes of a large batch.
pub const LARGE_BYTES: u64 = LARGE_ROWS as u64 * 8;

/// Schema of the small batches: `id` int64, `value` float64, `name` utf8.
pub fn small_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
    ]))
}

/// Schema of the large batches: one int64 column `x`.
pub fn large_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]))
}

/// Schema of the sink's one-row reply: `rows` int64.
pub fn rows_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "rows",
        DataType::Int64,
        false,
    )]))
}

/// The shared small batch: ids 0.., values id × 0.5, names `row-<id>`.
pub fn small_batch() -> RecordBatch {
    static BATCH: OnceLock<RecordBatch> = OnceLock::new();
    BATCH
        .get_or_init(|| {
            let ids: Int64Array = (0..SMALL_ROWS as i64).collect();
            let values: Float64Array = (0..SMALL_ROWS).map(|i| i as f64 * 0.5).collect();
            let names: StringArray = (0..SMALL_ROWS).map(|i| Some(format!("row-{i}"))).collect();
            let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(values), Arc::new(names)];
            RecordBatch::try_new(small_schema(), columns).expect("small batch matches its schema")
        })
        .clone()
}

/// The shared large batch: `x` = 0..2M.
pub fn large_batch() -> RecordBatch {
    static BATCH: OnceLock<RecordBatch> = OnceLock::new();
    BATCH
        .get_or_init(|| {
            let x: Int64Array = (0..LARGE_ROWS as i64).collect();
            RecordBatch::try_new(large_schema(), vec![Arc::new(x)])
                .expect("large batch matches its schema")
        })
        .clone()
}

/// Sum of a large batch's `x` column (what a consumer that reads every value does).
pub fn sum_x(batch: &RecordBatch) -> i64 {
    batch
        .column(0)
        .as_primitive::<Int64Type>()
        .values()
        .iter()
        .fold(0i64, |acc, v| acc.wrapping_add(*v))
}

/// The one-row `{a, b}` argument batch of `add`.
pub fn add_params(a: f64, b: f64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Float64, false),
        Field::new("b", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from(vec![a])),
        Arc::new(Float64Array::from(vec![b])),
    ];
    RecordBatch::try_new(schema, columns).expect("add params match their schema")
}

/// The one-row `{count}` argument batch of the producers.
pub fn count_params(count: u64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::Int64,
        false,
    )]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![count as i64]))])
        .expect("count params")
}

/// The zero-argument batch.
pub fn no_params() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

/// The service: `add`, `produce`, `echo`, `produce_large`, `sink`, `echo_large`.
pub fn service() -> Service {
    let mut service = Service::new(PROTOCOL_NAME, PROTOCOL_VERSION);
    service.add(Method::unary(
        "add",
        vec![
            field("a", DataType::Float64, false),
            field("b", DataType::Float64, false),
        ],
        Some(field("result", DataType::Float64, false)),
        |params, _| {
            let sum = params.f64("a")? + params.f64("b")?;
            Ok(Some(Arc::new(Float64Array::from(vec![sum])) as ArrayRef))
        },
    ));
    service.add(
        Method::stream(
            "produce",
            vec![field("count", DataType::Int64, false)],
            None,
            |params, _| {
                let remaining = count_arg(params.i64("count")?)?;
                Ok(StreamSetup::producer(
                    small_schema(),
                    Repeat {
                        batch: small_batch(),
                        remaining,
                    },
                ))
            },
        )
        .with_doc("Emits `count` 1K-row batches, one per tick."),
    );
    service.add(
        Method::stream(
            "produce_large",
            vec![field("count", DataType::Int64, false)],
            None,
            |params, _| {
                let remaining = count_arg(params.i64("count")?)?;
                Ok(StreamSetup::producer(
                    large_schema(),
                    Repeat {
                        batch: large_batch(),
                        remaining,
                    },
                ))
            },
        )
        .with_doc("Emits `count` 16 MiB batches, one per tick."),
    );
    service.add(
        Method::stream("echo", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(small_schema(), small_schema(), Echo))
        })
        .with_doc("Returns every input batch as it came."),
    );
    service.add(
        Method::stream("echo_large", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(large_schema(), large_schema(), Echo))
        })
        .with_doc("Returns every 16 MiB input batch as it came."),
    );
    service.add(
        Method::stream("sink", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(large_schema(), rows_schema(), Sink))
        })
        .with_doc("Answers every input batch with its row count (one row)."),
    );
    service
}

fn count_arg(count: i64) -> Result<u64, ErrorReport> {
    u64::try_from(count).map_err(|_| ErrorReport::new("ValueError", "count must not be negative"))
}

/// Emits the same batch `remaining` times, then finishes.
struct Repeat {
    batch: RecordBatch,
    remaining: u64,
}

impl StreamState for Repeat {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        output: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.remaining == 0 {
            output.finish();
        } else {
            self.remaining -= 1;
            output.emit(self.batch.clone());
        }
        Ok(())
    }
}

/// Sends each input back.
struct Echo;

impl StreamState for Echo {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        output: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        output.emit(input.clone());
        Ok(())
    }
}

/// Answers each input with its row count.
struct Sink;

impl StreamState for Sink {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        output: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let rows = Int64Array::from(vec![input.num_rows() as i64]);
        output.emit(RecordBatch::try_new(rows_schema(), vec![Arc::new(rows)]).expect("rows batch"));
        Ok(())
    }
}
