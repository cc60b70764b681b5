//! A worker whose table function is planned into splits: `split_numbers(n, splits := k)`, the
//! integers 0..n-1 as column `n` in `k` contiguous ranges, one split each. The engine asks for
//! the plan (`table_function_plan`), then redeems each split on whichever connection is free;
//! each redemption reads only its own range. Beside it, the buffered table function
//! `row_count(TABLE)`: one row, the number of rows of the whole input. The same functions as the
//! Python SDK's example.
//!
//! ```sh
//! cargo build --release -p quiver-vgi --example split_numbers
//! ```
//! `ATTACH 'target/release/examples/split_numbers' AS s (TYPE quiver)`, then
//! `SELECT count(*) FROM s.split_numbers(1000000, splits := 64)`.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_vgi::{Arg, Scan, TableFunction, TableInOutFunction, Worker};
use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;

/// Rows per batch a split emits.
const BATCH_ROWS: i64 = 1 << 20;

/// `[0, n)` in `k` contiguous ranges (the first `n % k` one row longer), as 16-byte payloads.
fn ranges(n: i64, k: i64) -> Vec<Vec<u8>> {
    let (base, extra) = (n / k, n % k);
    let mut lo = 0;
    (0..k)
        .map(|i| {
            let hi = lo + base + i64::from(i < extra);
            let payload = [lo.to_le_bytes(), hi.to_le_bytes()].concat();
            lo = hi;
            payload
        })
        .collect()
}

fn range_of(payload: &[u8]) -> Result<(i64, i64), ErrorReport> {
    let bytes: [u8; 16] = payload
        .try_into()
        .map_err(|_| errors::invalid_argument("a split_numbers payload is 16 bytes"))?;
    let [lo, hi] =
        [0, 8].map(|at| i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")));
    Ok((lo, hi))
}

fn main() {
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let split_numbers = TableFunction::new("split_numbers")
        .doc("The integers 0..n-1 as column n, planned into splits: each init reads one range")
        .arg(
            Arg::new("n", DataType::Int64)
                .doc("how many numbers")
                .min(0),
        )
        .arg(
            Arg::named("splits", DataType::Int64)
                .doc("how many splits")
                .min(1)
                .max(1_000_000)
                .default_i64(4),
        )
        .output(schema.clone())
        .projection_pushdown()
        .max_workers(8)
        .splits(|args| Ok(ranges(args.i64("n")?, args.i64("splits")?)))
        .scan(move |init| {
            let payload = init.split.ok_or_else(|| {
                errors::invalid_argument("split_numbers() reads only planned splits")
            })?;
            let (mut next, end) = range_of(payload)?;
            let schema = schema.clone();
            Ok(move |_: &mut Scan<'_>| {
                if next >= end {
                    return Ok(None);
                }
                let stop = end.min(next + BATCH_ROWS);
                let column = Int64Array::from_iter_values(next..stop);
                next = stop;
                Ok(Some(
                    RecordBatch::try_new(schema.clone(), vec![Arc::new(column)])
                        .expect("one int64 column"),
                ))
            })
        });
    let counted = Arc::new(Schema::new(vec![Field::new("rows", DataType::Int64, true)]));
    let row_count = TableInOutFunction::new("row_count")
        .doc("One row: how many rows the whole input has (a buffered table function)")
        .arg(Arg::table("data").doc("the rows to count"))
        .output(counted.clone())
        .buffered(move |_, batches| {
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            let column = Int64Array::from(vec![rows as i64]);
            Ok(vec![RecordBatch::try_new(
                counted.clone(),
                vec![Arc::new(column)],
            )
            .expect("one int64 column")])
        });
    Worker::new("split_numbers")
        .function(split_numbers)
        .function(row_count)
        .run();
}
