//! Methods that exist to test the edges of a reply: payloads sized by the caller
//! (to overshoot a transport's response cap), per-batch custom metadata, and a
//! result that only external storage can carry.

use std::sync::Arc;

use arrow_array::{BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{Method, Service, StreamSetup};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::stream_kit::{
    add_exchange, add_producer, exchange, index_value_schema, int, producer, value_schema,
};
use crate::types::single;

/// The largest payload or batch these methods build on request, so a caller's
/// number cannot make the worker allocate without bound.
const MAX_REQUESTED_BYTES: i64 = 1 << 30;
/// The most rows one oversized or annotated batch holds (8 bytes per int64 row).
const MAX_REQUESTED_ROWS: i64 = MAX_REQUESTED_BYTES / 8;
/// The label every annotated batch carries; non-ASCII on purpose, so metadata
/// encoding is exercised (the same text as the reference's `_types.py`).
const ANNOTATED_EMIT_LABEL: &str = "\u{00fc}n\u{00ef}code-\u{03bb}";

/// Registers the sized and annotated methods.
pub fn register(service: &mut Service) {
    service.add(Method::unary(
        "oversized_unary",
        vec![int("target_bytes")],
        Some(Field::new("result", DataType::Binary, false)),
        |params, _| {
            let target = params.i64("target_bytes")?;
            let size = checked_size(target, MAX_REQUESTED_BYTES, "target_bytes")?;
            Ok(single(BinaryArray::from(vec![vec![0u8; size].as_slice()])))
        },
    ));
    service.add(Method::unary(
        "published_string",
        vec![
            Field::new("value", DataType::Utf8, false),
            Field::new("include_sha256", DataType::Boolean, false),
        ],
        Some(Field::new("result", DataType::Utf8, false)),
        // This worker has no external storage (quiver's server refuses
        // external-location batches, crates/quiver-rpc/src/server.rs), which is
        // the reference's answer without `--fake-storage`.
        |_, _| {
            Err(ErrorReport::new(
                "RuntimeError",
                "published_string requires external storage",
            ))
        },
    ));
    add_producer(
        service,
        Method::stream(
            "produce_oversized_batch",
            vec![int("rows_per_batch")],
            None,
            |params, _| {
                let rows = checked_rows(
                    params.i64("rows_per_batch")?,
                    MAX_REQUESTED_ROWS,
                    "rows_per_batch",
                )?;
                Ok(StreamSetup::producer(
                    index_value_schema(),
                    producer(move |tick, _, out, _| {
                        if tick == 0 {
                            out.emit(index_value_rows(rows));
                        } else {
                            out.finish();
                        }
                        Ok(())
                    }),
                ))
            },
        ),
    );
    add_exchange(
        service,
        Method::stream(
            "exchange_oversized",
            vec![int("rows_per_batch")],
            None,
            |params, _| {
                let rows = checked_rows(
                    params.i64("rows_per_batch")?,
                    MAX_REQUESTED_ROWS,
                    "rows_per_batch",
                )?;
                Ok(StreamSetup::exchange(
                    value_schema(),
                    index_value_schema(),
                    exchange(move |_, _, out, _| {
                        out.emit(index_value_rows(rows));
                        Ok(())
                    }),
                ))
            },
        ),
    );
    add_producer(service, produce_annotated_batches());
}

/// `count` batches of `rows_per_batch` rows, each with metadata naming its index.
fn produce_annotated_batches() -> Method {
    Method::stream(
        "produce_annotated_batches",
        vec![int("count"), int("rows_per_batch")],
        None,
        |params, _| {
            let count = params.i64("count")?;
            let rows = checked_rows(
                params.i64("rows_per_batch")?,
                MAX_REQUESTED_ROWS,
                "rows_per_batch",
            )?;
            let schema = annotated_schema();
            let output = Arc::clone(&schema);
            Ok(StreamSetup::producer(
                schema,
                producer(move |tick, _, out, _| {
                    if tick >= count {
                        out.finish();
                        return Ok(());
                    }
                    let base = tick * 1_000_000;
                    let values: Int64Array = (0..rows as i64).map(|row| base + row).collect();
                    let batch = RecordBatch::try_new(Arc::clone(&output), vec![Arc::new(values)])
                        .expect("one int64 column");
                    let mut metadata = BatchMetadata::new();
                    metadata.insert("conformance.batch_index", tick.to_string());
                    metadata.insert("conformance.batch_total", count.to_string());
                    metadata.insert("conformance.emit_label", ANNOTATED_EMIT_LABEL);
                    out.emit_with_metadata(batch, metadata);
                    Ok(())
                }),
            ))
        },
    )
}

/// `value: int64`, nullable.
fn annotated_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Int64,
        true,
    )]))
}

/// `{index: i, value: i * 10}` for `i` in `0..rows`.
fn index_value_rows(rows: usize) -> RecordBatch {
    let rows = rows as i64;
    let index: Int64Array = (0..rows).collect();
    let value: Int64Array = (0..rows).map(|i| i * 10).collect();
    RecordBatch::try_new(index_value_schema(), vec![Arc::new(index), Arc::new(value)])
        .expect("columns match schema")
}

/// A caller's size as a `usize`, refused above `limit`. A negative size is
/// refused too, as the reference's `oversized_unary` does.
fn checked_size(value: i64, limit: i64, name: &str) -> Result<usize, ErrorReport> {
    if value < 0 {
        return Err(ErrorReport::new(
            "ValueError",
            format!("{name} must be non-negative"),
        ));
    }
    checked_rows(value, limit, name)
}

/// A caller's row count: a negative one is no rows (the reference builds rows
/// with Python's `range`, which is empty then); above `limit` it is refused.
fn checked_rows(value: i64, limit: i64, name: &str) -> Result<usize, ErrorReport> {
    if value > limit {
        return Err(ErrorReport::new(
            "ValueError",
            format!("{name} must be at most {limit}"),
        ));
    }
    Ok(usize::try_from(value.max(0)).expect("clamped to non-negative"))
}
