//! `split_numbers(n, splits := k)`, a scan planned into `k` contiguous ranges of 0..n-1 (one
//! split each, redeemed on whichever connection is free), and `row_count(TABLE)`, a buffered
//! table function: one row, the number of rows of its whole input. The Python and Java example
//! workers declare the same two.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_vgi::{
    errors, Arg, Function, Scan, ScanInit, TableFunction, TableInOutFunction, TableScan,
};
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

/// `split_numbers`.
pub fn split_numbers() -> Function {
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    TableFunction::new("split_numbers")
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
        .resume(|init, position| {
            let (_, end) = split_of(init)?;
            let next =
                i64::from_be_bytes(position.try_into().map_err(|_| {
                    errors::invalid_argument("a split_numbers position is 8 bytes")
                })?);
            Ok(SplitScan { next, end })
        })
        .scan(|init| {
            let (next, end) = split_of(init)?;
            Ok(SplitScan { next, end })
        })
        .comment("The integers 0..n-1, planned into splits that run in parallel")
        .tag("vgi.category", "generators")
        .category("generators")
        .example(
            "SELECT sum(n) FROM allinone.main.split_numbers(1000, splits := 8)",
            "The sum of 0..999: 499500",
        )
}

fn split_of(init: &ScanInit<'_>) -> Result<(i64, i64), ErrorReport> {
    let payload = init
        .split
        .ok_or_else(|| errors::invalid_argument("split_numbers() reads only planned splits"))?;
    range_of(payload)
}

/// One split's scan: `next..end` still to emit; `next` is all it carries between turns.
struct SplitScan {
    next: i64,
    end: i64,
}

impl TableScan for SplitScan {
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        if self.next >= self.end {
            return Ok(None);
        }
        let stop = self.end.min(self.next + BATCH_ROWS);
        let column = Int64Array::from_iter_values(self.next..stop);
        self.next = stop;
        Ok(Some(
            RecordBatch::try_new(scan.output_schema().clone(), vec![Arc::new(column)])
                .expect("one int64 column"),
        ))
    }

    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(self.next.to_be_bytes().to_vec())
    }
}

/// `row_count`.
pub fn row_count() -> Function {
    let counted = Arc::new(Schema::new(vec![Field::new("rows", DataType::Int64, true)]));
    TableInOutFunction::new("row_count")
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
        })
        .comment("Counts the rows of its whole input table")
        .tag("vgi.category", "tables")
        .category("tables")
        .example(
            "SELECT * FROM allinone.main.row_count((SELECT * FROM range(10)))",
            "Ten rows counted at once: 10",
        )
}
