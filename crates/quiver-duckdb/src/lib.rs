//! The Rust core of quiver's DuckDB extension.
//!
//! The extension (`extension/`) is thin C++ glue compiled against DuckDB's headers; everything with
//! behaviour lives here, behind a small C ABI declared by hand in `extension/include/quiver_core.h`.
//! Data crosses that boundary only as Arrow C Data Interface structs (`ArrowSchema`,
//! `ArrowArrayStream`), which the glue hands to DuckDB's own Arrow scan: Rust owns the buffers,
//! DuckDB reads them in place and releases them through the callbacks arrow-rs installs.
//!
//! Conventions of every exported function:
//! - returns [`QUIVER_OK`] (0) on success, a non-zero `QUIVER_ERR_*` code otherwise;
//! - on failure writes a NUL-terminated message (truncated to fit) into `err[..err_cap]`;
//! - never unwinds into C++: panics are caught and reported as [`QUIVER_ERR_INTERNAL`].
//!
//! The first slice is deliberately tiny: [`quiver_core_version`] proves the link, and
//! [`quiver_numbers_stream`] proves the data path Rust → Arrow C data → DuckDB `DataChunk`.

#![warn(missing_docs)]

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Int64Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

/// Version of the C ABI in `quiver_core.h`; bump on any change to a signature or convention.
pub const QUIVER_CORE_ABI_VERSION: u32 = 1;

/// Success.
pub const QUIVER_OK: i32 = 0;
/// The caller passed an invalid argument (message in `err`).
pub const QUIVER_ERR_INVALID: i32 = 1;
/// A bug inside the core: a panic or an arrow-rs error that should not happen (message in `err`).
pub const QUIVER_ERR_INTERNAL: i32 = 2;

/// Rows per batch when the caller passes `batch_rows <= 0`: 64 DuckDB vectors, 1 MiB of `int64`.
pub const NUMBERS_BATCH_ROWS_DEFAULT: i64 = 64 * 2048;
/// Upper bound on `batch_rows`, so a caller cannot make us allocate an unbounded batch.
pub const NUMBERS_BATCH_ROWS_MAX: i64 = 1 << 24;

static VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("version contains a NUL"),
    };

/// The C ABI version the core was built with ([`QUIVER_CORE_ABI_VERSION`]); the glue refuses a mismatch.
#[no_mangle]
pub extern "C" fn quiver_core_abi_version() -> u32 {
    QUIVER_CORE_ABI_VERSION
}

/// The core's version (the workspace version, e.g. `0.1.0`) as a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn quiver_core_version() -> *const c_char {
    VERSION.as_ptr()
}

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
            return Err((
                QUIVER_ERR_INVALID,
                "quiver_numbers_schema: out is null".to_string(),
            ));
        }
        let schema = FFI_ArrowSchema::try_from(numbers_schema().as_ref()).map_err(internal)?;
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
            return Err((
                QUIVER_ERR_INVALID,
                "quiver_numbers_stream: out is null".to_string(),
            ));
        }
        let reader =
            NumbersReader::new(n, batch_rows).map_err(|message| (QUIVER_ERR_INVALID, message))?;
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

fn internal(error: ArrowError) -> (i32, String) {
    (QUIVER_ERR_INTERNAL, error.to_string())
}

/// Runs `body`, turning its error or panic into a return code and a message in `err`.
fn guard(
    err: *mut c_char,
    err_cap: usize,
    body: impl FnOnce() -> Result<(), (i32, String)>,
) -> i32 {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err((
            QUIVER_ERR_INTERNAL,
            format!("panic in quiver core: {message}"),
        ))
    });
    match outcome {
        Ok(()) => QUIVER_OK,
        Err((code, message)) => {
            write_error(err, err_cap, &message);
            code
        }
    }
}

/// Copies `message` into `err[..err_cap]`, truncated at a UTF-8 boundary, always NUL-terminated.
fn write_error(err: *mut c_char, err_cap: usize, message: &str) {
    if err.is_null() || err_cap == 0 {
        return;
    }
    let mut len = message.len().min(err_cap - 1);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: the caller promised `err_cap` writable bytes at `err`; we write `len + 1 <= err_cap`.
    unsafe {
        std::ptr::copy_nonoverlapping(message.as_ptr(), err.cast::<u8>(), len);
        *err.add(len) = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::ffi_stream::RecordBatchStreamReader;
    use arrow_array::types::Int64Type;
    use std::mem::MaybeUninit;

    fn error_text(buf: &[c_char]) -> String {
        // SAFETY: write_error always NUL-terminates inside the buffer.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn version_is_the_workspace_version() {
        // SAFETY: quiver_core_version returns a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(quiver_core_version()) };
        assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(quiver_core_abi_version(), QUIVER_CORE_ABI_VERSION);
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
        assert_eq!(
            unsafe { quiver_numbers_schema(schema.as_mut_ptr(), std::ptr::null_mut(), 0) },
            QUIVER_OK
        );
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
        assert_eq!(code, QUIVER_ERR_INVALID);
        assert_eq!(error_text(&err), "quiver_numbers: n must be >= 0,"); // truncated to 31 bytes
                                                                         // SAFETY: null out pointer is rejected before any write.
        let code = unsafe {
            quiver_numbers_stream(1, 0, std::ptr::null_mut(), err.as_mut_ptr(), err.len())
        };
        assert_eq!(code, QUIVER_ERR_INVALID);
    }
}
