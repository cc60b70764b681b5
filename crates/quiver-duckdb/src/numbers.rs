//! `quiver_numbers(n)`: the integers 0..n-1 made in Rust and handed to DuckDB as an
//! `ArrowArrayStream`; the in-process ceiling (no worker, no transport) that `./quiver bench vgi`
//! measures worker scans against. Built only with the `bench-functions` feature, which only the
//! bench flavour of the extension enables (`QUIVER_BENCH_FUNCTIONS=1 extension/build.sh`).

use std::ffi::c_char;
use std::sync::Arc;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Int64Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use crate::ffi::{guard, Failure};

/// Rows per batch when the caller passes `batch_rows <= 0`: 64 DuckDB vectors, 1 MiB of `int64`.
pub const NUMBERS_BATCH_ROWS_DEFAULT: i64 = 64 * 2048;
/// Upper bound on `batch_rows`, so a caller cannot make us allocate an unbounded batch.
pub const NUMBERS_BATCH_ROWS_MAX: i64 = 1 << 24;

/// Exports the schema of `quiver_numbers` into `out`: one non-nullable `int64` column `n`.
///
/// # Safety
/// `out` must point to writable memory for one `ArrowSchema`; `err` to `err_cap` writable bytes
/// (or be null with `err_cap == 0`). On success the caller owns `*out` and must call its `release`.
#[no_mangle]
pub unsafe extern "C" fn quiver_numbers_schema(
    out: *mut FFI_ArrowSchema,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        if out.is_null() {
            return Err(Failure::invalid("quiver_numbers_schema: out is null"));
        }
        let schema = FFI_ArrowSchema::try_from(numbers_schema().as_ref())?;
        // SAFETY: `out` is non-null and, by the contract above, valid for one write.
        unsafe { std::ptr::write(out, schema) };
        Ok(())
    })
}

/// Exports a stream of the numbers `0..n` (column `n`, `int64`) into `out`, `batch_rows` rows per
/// batch (`<= 0` picks [`NUMBERS_BATCH_ROWS_DEFAULT`]). Batches are built lazily as the consumer
/// pulls them, so memory stays at one batch however large `n` is.
///
/// # Safety
/// `out` must point to writable memory for one `ArrowArrayStream`; `err` as in
/// [`quiver_numbers_schema`]. On success the caller owns `*out` and must call its `release`.
#[no_mangle]
pub unsafe extern "C" fn quiver_numbers_stream(
    n: i64,
    batch_rows: i64,
    out: *mut FFI_ArrowArrayStream,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        if out.is_null() {
            return Err(Failure::invalid("quiver_numbers_stream: out is null"));
        }
        let reader = NumbersReader::new(n, batch_rows).map_err(Failure::invalid)?;
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // SAFETY: `out` is non-null and, by the contract above, valid for one write.
        unsafe { std::ptr::write(out, stream) };
        Ok(())
    })
}

fn numbers_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
}

/// Yields `0..end` as `int64` batches of at most `batch_rows` rows.
struct NumbersReader {
    schema: SchemaRef,
    next: i64,
    end: i64,
    batch_rows: i64,
}

impl NumbersReader {
    fn new(end: i64, batch_rows: i64) -> Result<Self, String> {
        if end < 0 {
            return Err(format!("quiver_numbers: n must be >= 0, got {end}"));
        }
        let batch_rows = if batch_rows <= 0 {
            NUMBERS_BATCH_ROWS_DEFAULT
        } else {
            batch_rows
        };
        if batch_rows > NUMBERS_BATCH_ROWS_MAX {
            return Err(format!(
                "quiver_numbers: batch_rows must be <= {NUMBERS_BATCH_ROWS_MAX}, got {batch_rows}"
            ));
        }
        Ok(Self {
            schema: numbers_schema(),
            next: 0,
            end,
            batch_rows,
        })
    }
}

impl Iterator for NumbersReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let stop = self.end.min(self.next.saturating_add(self.batch_rows));
        let values = Int64Array::from_iter_values(self.next..stop);
        self.next = stop;
        Some(RecordBatch::try_new(
            self.schema.clone(),
            vec![Arc::new(values)],
        ))
    }
}

impl RecordBatchReader for NumbersReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{FailureCode, QUIVER_OK};
    use arrow_array::cast::AsArray;
    use arrow_array::ffi_stream::RecordBatchStreamReader;
    use arrow_array::types::Int64Type;
    use std::ffi::CStr;
    use std::mem::MaybeUninit;

    fn error_text(buf: &[c_char]) -> String {
        // SAFETY: write_error always NUL-terminates inside the buffer.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn stream_round_trips_through_the_c_data_interface() {
        let mut stream = MaybeUninit::<FFI_ArrowArrayStream>::uninit();
        let mut err = [0 as c_char; 256];
        // SAFETY: valid out pointer and error buffer.
        let code = unsafe {
            quiver_numbers_stream(
                10_001,
                1000,
                stream.as_mut_ptr(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(code, QUIVER_OK, "{}", error_text(&err));
        // SAFETY: initialised by the successful call above.
        let mut stream = unsafe { stream.assume_init() };
        // SAFETY: a valid stream, consumed once.
        let reader = unsafe { RecordBatchStreamReader::from_raw(&mut stream) }.unwrap();
        assert_eq!(reader.schema(), numbers_schema());
        let (mut rows, mut sum, mut batches) = (0i64, 0i64, 0);
        for batch in reader {
            let batch = batch.unwrap();
            let values = batch.column(0).as_primitive::<Int64Type>();
            assert_eq!(values.value(0), rows);
            rows += values.len() as i64;
            sum += values.values().iter().sum::<i64>();
            batches += 1;
        }
        assert_eq!((rows, sum, batches), (10_001, 10_001 * 10_000 / 2, 11));
    }

    #[test]
    fn schema_exports() {
        let mut schema = MaybeUninit::<FFI_ArrowSchema>::uninit();
        // SAFETY: valid out pointer; no error buffer.
        let code = unsafe { quiver_numbers_schema(schema.as_mut_ptr(), std::ptr::null_mut(), 0) };
        assert_eq!(code, QUIVER_OK);
        // SAFETY: initialised by the successful call above.
        let schema = unsafe { schema.assume_init() };
        assert_eq!(Schema::try_from(&schema).unwrap(), *numbers_schema());
    }

    #[test]
    fn invalid_arguments_are_reported_not_panicked() {
        let mut stream = MaybeUninit::<FFI_ArrowArrayStream>::uninit();
        let mut err = [0 as c_char; 32];
        // SAFETY: valid out pointer and error buffer.
        let code = unsafe {
            quiver_numbers_stream(-1, 0, stream.as_mut_ptr(), err.as_mut_ptr(), err.len())
        };
        assert_eq!(FailureCode::from_c(code), Some(FailureCode::Invalid));
        assert_eq!(error_text(&err), "quiver_numbers: n must be >= 0,"); // truncated to 31 bytes
                                                                         // SAFETY: null out pointer is rejected before any write.
        let code = unsafe {
            quiver_numbers_stream(1, 0, std::ptr::null_mut(), err.as_mut_ptr(), err.len())
        };
        assert_eq!(FailureCode::from_c(code), Some(FailureCode::Invalid));
    }
}
