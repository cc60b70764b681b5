//! `numbers(n BIGINT [, batch_rows := BIGINT])`: the integers 0..n-1 as column
//! `n`, generated in parallel by every connection of the scan.
//!
//! Connections claim row ranges from the execution's shared counter, so each
//! value is produced exactly once however many connections the engine opens.
//! A batch is one tight loop: over shared memory it is written straight into
//! the segment and crosses without a copy; over a pipe into a reused buffer, at
//! 4M rows (32 MB) a few milliseconds and no page faults after the first batch.
//! Behind a load balancer the scan resumes on any replica: its position is the
//! counter, which travels in the stream's token.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_buffer::{Buffer, MutableBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_vgi::{Arg, Function, OutputBuffer, Scan, ScanInit, TableFunction};
use quiver_wire::ErrorReport;

/// Largest batch a caller may ask for: 64M rows, 512 MiB.
pub const BATCH_ROWS_MAX: i64 = 64 << 20;

/// The `numbers` function, with `batch_rows` rows per batch unless the caller
/// names another size, and up to `max_workers` connections per scan.
pub fn numbers(batch_rows: i64, max_workers: u32) -> Function {
    assert!(
        (1..=BATCH_ROWS_MAX).contains(&batch_rows),
        "batch_rows out of range"
    );
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    TableFunction::new("numbers")
        .doc("The integers 0..n-1 as column n, generated in parallel across the scan's connections")
        .arg(
            Arg::new("n", DataType::Int64)
                .doc("How many rows (0..n-1)")
                .min(0),
        )
        .arg(
            Arg::named("batch_rows", DataType::Int64)
                .doc("Rows per batch")
                .min(1)
                .max(BATCH_ROWS_MAX)
                .default_i64(batch_rows),
        )
        .output(schema.clone())
        .projection_pushdown()
        .filter_pushdown()
        .max_workers(max_workers)
        .shared_work(|args| Ok(args.i64("n")? as u64))
        .cardinality(|args| Ok(Some(args.i64("n")? as u64)))
        .resume({
            let schema = schema.clone();
            move |init, _| NumbersScan::new(&schema, init)
        })
        .scan(move |init| NumbersScan::new(&schema, init))
        .comment("The integers 0..n-1, generated in parallel")
        .tag("vgi.category", "generators")
        .category("generators")
        .example(
            "SELECT sum(n) FROM allinone.main.numbers(1000)",
            "The sum of 0..999: 499500",
        )
}

/// One connection's share of a scan.
struct NumbersScan {
    schema: SchemaRef,
    batch_rows: u64,
    /// The previous batch's buffer, reused once the transport has let go of it.
    recycled: Option<Buffer>,
}

impl NumbersScan {
    fn new(schema: &SchemaRef, init: &ScanInit<'_>) -> Result<NumbersScan, ErrorReport> {
        Ok(NumbersScan {
            schema: schema.clone(),
            batch_rows: init.args.i64("batch_rows")? as u64,
            recycled: None,
        })
    }
}

impl quiver_vgi::TableScan for NumbersScan {
    /// The position is the shared counter's, which the SDK carries: nothing of its own.
    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(Vec::new())
    }

    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        let Some(rows) = scan.claim(self.batch_rows)? else {
            return Ok(None);
        };
        let column = match scan.output_buffer(byte_len(&rows)) {
            Some(buffer) => fill_shared(buffer, rows),
            None => self.fill(rows),
        };
        let batch = RecordBatch::try_new(self.schema.clone(), vec![Arc::new(column)])
            .expect("one int64 column");
        Ok(Some(batch))
    }
}

fn byte_len(rows: &Range<u64>) -> usize {
    usize::try_from(rows.end - rows.start).expect("a batch fits in memory") * size_of::<i64>()
}

/// `rows` written straight into the connection's shared memory, so the batch crosses without a
/// copy (the region goes to the engine with the batch; nothing is recycled).
fn fill_shared(mut buffer: OutputBuffer, rows: Range<u64>) -> Int64Array {
    let values = buffer.typed_data_mut::<i64>();
    write_range(values, rows.start as i64);
    let count = values.len();
    Int64Array::new(ScalarBuffer::new(buffer.into_buffer(), 0, count), None)
}

fn write_range(values: &mut [i64], start: i64) {
    for (offset, value) in values.iter_mut().enumerate() {
        *value = start + offset as i64;
    }
}

impl NumbersScan {
    /// `rows` as an int64 array, written into the recycled buffer when nobody
    /// else holds it any more (the common case: the last batch has been sent).
    fn fill(&mut self, rows: Range<u64>) -> Int64Array {
        let count = usize::try_from(rows.end - rows.start).expect("a batch fits in memory");
        assert!(count as u64 <= self.batch_rows);
        let bytes = count * size_of::<i64>();
        let mut buffer = match self.recycled.take().map(Buffer::into_mutable) {
            Some(Ok(buffer)) if buffer.capacity() >= bytes => buffer,
            _ => MutableBuffer::with_capacity(bytes),
        };
        buffer.resize(bytes, 0);
        buffer.truncate(bytes);
        write_range(buffer.typed_data_mut::<i64>(), rows.start as i64);
        let buffer: Buffer = buffer.into();
        self.recycled = Some(buffer.clone());
        Int64Array::new(ScalarBuffer::new(buffer, 0, count), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_ranges_and_reuses_its_buffer() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let mut scan = NumbersScan {
            schema,
            batch_rows: 1000,
            recycled: None,
        };
        let first = scan.fill(0..1000);
        assert_eq!(first.value(999), 999);
        let address = first.values().inner().as_ptr();
        drop(first);
        let second = scan.fill(1000..1500);
        assert_eq!(second.len(), 500);
        assert_eq!((second.value(0), second.value(499)), (1000, 1499));
        assert_eq!(
            second.values().inner().as_ptr(),
            address,
            "the buffer is reused"
        );
        // Still referenced elsewhere: a fresh buffer, the old values intact.
        let third = scan.fill(5..10);
        assert_eq!(second.value(0), 1000);
        assert_eq!(third.values().as_ref(), &[5, 6, 7, 8, 9]);
    }
}
