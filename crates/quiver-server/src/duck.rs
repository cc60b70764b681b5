//! Safe handles over the DuckDB operations table (`ffi::Ops`): a session's connection, its
//! prepared statements and result cursors. Each handle frees its C++ object when dropped; a
//! handle made from a session must drop before the session does (the session's owner sees to it).

use std::ffi::c_char;
use std::ptr;
use std::sync::Arc;

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use quiver_server_protocol::errors;
use quiver_wire::ErrorReport;

use crate::ffi::{Ops, RawCursor, RawError, RawPrepared, RawSession, NO_COUNT, OK};

/// An error DuckDB raised: its exception type name and message.
#[derive(Debug, Clone)]
pub struct DuckError {
    /// DuckDB's type name (`Catalog`, `Parser`, `Interrupt`, ...).
    pub type_name: String,
    /// DuckDB's message.
    pub message: String,
}

/// Runs one DuckDB operation with a fresh error buffer: `Ok` when it returned [`OK`], else the error
/// it wrote.
fn checked(call: impl FnOnce(&mut RawError) -> i32) -> Result<(), DuckError> {
    let mut err = RawError::new();
    if call(&mut err) != OK {
        return Err(DuckError::from_raw(&err));
    }
    Ok(())
}

impl DuckError {
    fn from_raw(raw: &RawError) -> DuckError {
        DuckError {
            type_name: type_name(&raw.type_name()),
            message: raw.message(),
        }
    }

    /// Whether the statement was interrupted (cancel, stop).
    pub fn is_interrupt(&self) -> bool {
        self.type_name == "Interrupt"
    }

    /// The protocol's typed error.
    pub fn report(&self) -> ErrorReport {
        errors::sql(&self.type_name, self.message.clone())
    }
}

/// DuckDB names most exception types in words (`Out of Range`) but a few in capitals
/// (`INTERRUPT`); the protocol's type names are built from the words, so capitals become one word.
fn type_name(duckdb: &str) -> String {
    if duckdb.chars().any(|c| c.is_ascii_lowercase()) {
        return duckdb.to_string();
    }
    let mut chars = duckdb.chars();
    chars
        .next()
        .map(|first| first.to_string() + &chars.as_str().to_ascii_lowercase())
        .unwrap_or_default()
}

fn internal(message: impl Into<String>) -> DuckError {
    DuckError {
        type_name: "Internal".into(),
        message: message.into(),
    }
}

fn arrow_error(error: ArrowError) -> DuckError {
    internal(format!("arrow: {error}"))
}

/// Batches offered to DuckDB as an Arrow C stream (parameters, an insert's rows).
pub fn batch_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> FFI_ArrowArrayStream {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    FFI_ArrowArrayStream::new(Box::new(reader))
}

/// One batch offered to DuckDB as an Arrow C stream.
pub fn one_batch_stream(batch: RecordBatch) -> FFI_ArrowArrayStream {
    batch_stream(batch.schema(), vec![batch])
}

fn stream_ptr(stream: &mut Option<FFI_ArrowArrayStream>) -> *mut FFI_ArrowArrayStream {
    stream.as_mut().map_or(ptr::null_mut(), |s| s as *mut _)
}

fn rows_changed(value: i64) -> Option<i64> {
    (value != NO_COUNT).then_some(value)
}

/// One session's DuckDB connection.
pub struct DuckSession {
    ops: Arc<Ops>,
    raw: *mut RawSession,
}

// SAFETY: a session is used by one thread at a time (the header's convention); `&mut self` on
// every operation enforces it. Interrupts go through `InterruptHandle`.
unsafe impl Send for DuckSession {}

/// What may interrupt a session from another thread: the raw handle, valid while its session lives
/// (the registry guarantees it by removing the handle before the session closes).
#[derive(Clone, Copy)]
pub struct InterruptHandle {
    ops: *const Ops,
    raw: *mut RawSession,
}

// SAFETY: ops->interrupt is callable from any thread while the session lives.
unsafe impl Send for InterruptHandle {}
// SAFETY: as above.
unsafe impl Sync for InterruptHandle {}

impl InterruptHandle {
    /// Interrupts the running statement, if any.
    ///
    /// # Safety
    /// The session this handle came from is still open.
    pub unsafe fn interrupt(&self) {
        // SAFETY: per this function's contract; ops outlives every session.
        unsafe { ((*self.ops).interrupt)(self.raw) }
    }
}

impl DuckSession {
    /// A new connection to the served database.
    pub fn open(ops: Arc<Ops>) -> Result<DuckSession, DuckError> {
        let mut raw = ptr::null_mut();
        checked(|err| (ops.open_session)(ops.db, &mut raw, err))?;
        assert!(!raw.is_null(), "open_session succeeded without a session");
        Ok(DuckSession { ops, raw })
    }

    /// The handle another thread may interrupt this session with.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle {
            ops: Arc::as_ptr(&self.ops),
            raw: self.raw,
        }
    }

    /// Whether a `BEGIN` of this session is open.
    pub fn in_transaction(&mut self) -> bool {
        (self.ops.in_transaction)(self.raw) != 0
    }

    /// Runs `sql`; `parameters` rows execute it once each; `input` is what
    /// `quiver_server_batch()` scans. Rows changed, if the statement counts them.
    pub fn execute(
        &mut self,
        sql: &str,
        parameters: Option<FFI_ArrowArrayStream>,
        input: Option<FFI_ArrowArrayStream>,
    ) -> Result<Option<i64>, DuckError> {
        let (mut parameters, mut input) = (parameters, input);
        let mut rows = NO_COUNT;
        checked(|err| {
            (self.ops.execute)(
                self.raw,
                sql.as_ptr().cast::<c_char>(),
                sql.len(),
                stream_ptr(&mut parameters),
                stream_ptr(&mut input),
                &mut rows,
                err,
            )
        })?;
        Ok(rows_changed(rows))
    }

    /// Starts a query whose result is read batch by batch.
    pub fn query(
        &mut self,
        sql: &str,
        parameters: Option<FFI_ArrowArrayStream>,
        batch_rows: i64,
    ) -> Result<Cursor, DuckError> {
        let mut parameters = parameters;
        let mut raw = ptr::null_mut();
        checked(|err| {
            (self.ops.query)(
                self.raw,
                sql.as_ptr().cast::<c_char>(),
                sql.len(),
                stream_ptr(&mut parameters),
                batch_rows,
                &mut raw,
                err,
            )
        })?;
        Cursor::new(Arc::clone(&self.ops), raw)
    }

    /// Prepares one statement: the handle, its parameter count and its result schema.
    pub fn prepare(&mut self, sql: &str) -> Result<(Prepared, i64, Option<SchemaRef>), DuckError> {
        let mut raw = ptr::null_mut();
        let mut parameter_count = 0;
        let mut schema = FFI_ArrowSchema::empty();
        checked(|err| {
            (self.ops.prepare)(
                self.raw,
                sql.as_ptr().cast::<c_char>(),
                sql.len(),
                &mut raw,
                &mut parameter_count,
                &mut schema,
                err,
            )
        })?;
        let prepared = Prepared {
            ops: Arc::clone(&self.ops),
            raw,
        };
        let result_schema = if schema.release().is_none() {
            None
        } else {
            Some(Arc::new(Schema::try_from(&schema).map_err(arrow_error)?))
        };
        Ok((prepared, parameter_count, result_schema))
    }
}

impl Drop for DuckSession {
    fn drop(&mut self) {
        (self.ops.close_session)(self.raw);
    }
}

/// A prepared statement of one session.
pub struct Prepared {
    ops: Arc<Ops>,
    raw: *mut RawPrepared,
}

// SAFETY: used by its session's thread only, like the session.
unsafe impl Send for Prepared {}

impl Prepared {
    /// Executes it once per parameter row (once without parameters).
    pub fn execute(
        &mut self,
        parameters: Option<FFI_ArrowArrayStream>,
    ) -> Result<Option<i64>, DuckError> {
        let mut parameters = parameters;
        let mut rows = NO_COUNT;
        checked(|err| {
            (self.ops.execute_prepared)(self.raw, stream_ptr(&mut parameters), &mut rows, err)
        })?;
        Ok(rows_changed(rows))
    }

    /// Its parameters as a schema: one field per parameter, in order, named by position, of the
    /// type DuckDB expects (`Null` where DuckDB cannot infer one).
    pub fn parameter_schema(&mut self) -> Result<SchemaRef, DuckError> {
        let mut schema = FFI_ArrowSchema::empty();
        checked(|err| (self.ops.prepared_parameter_types)(self.raw, &mut schema, err))?;
        Ok(Arc::new(Schema::try_from(&schema).map_err(arrow_error)?))
    }

    /// Executes it and reads the result batch by batch.
    pub fn query(
        &mut self,
        parameters: Option<FFI_ArrowArrayStream>,
        batch_rows: i64,
    ) -> Result<Cursor, DuckError> {
        let mut parameters = parameters;
        let mut raw = ptr::null_mut();
        checked(|err| {
            (self.ops.query_prepared)(
                self.raw,
                stream_ptr(&mut parameters),
                batch_rows,
                &mut raw,
                err,
            )
        })?;
        Cursor::new(Arc::clone(&self.ops), raw)
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        (self.ops.close_prepared)(self.raw);
    }
}

/// A running query's result, read one batch at a time: DuckDB produces no more than the reader
/// asks for (plus what its own result buffer holds).
pub struct Cursor {
    ops: Arc<Ops>,
    raw: *mut RawCursor,
    schema: SchemaRef,
    ffi_schema: FFI_ArrowSchema,
}

// SAFETY: used by its session's thread only, like the session.
unsafe impl Send for Cursor {}

impl Cursor {
    fn new(ops: Arc<Ops>, raw: *mut RawCursor) -> Result<Cursor, DuckError> {
        assert!(!raw.is_null(), "a query succeeded without a cursor");
        let mut ffi_schema = FFI_ArrowSchema::empty();
        if let Err(error) = checked(|err| (ops.cursor_schema)(raw, &mut ffi_schema, err)) {
            (ops.cursor_close)(raw);
            return Err(error);
        }
        let schema = match Schema::try_from(&ffi_schema) {
            Ok(schema) => Arc::new(schema),
            Err(error) => {
                (ops.cursor_close)(raw);
                return Err(arrow_error(error));
            }
        };
        Ok(Cursor {
            ops,
            raw,
            schema,
            ffi_schema,
        })
    }

    /// The result's schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The next batch, or `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, DuckError> {
        let mut array = FFI_ArrowArray::empty();
        let mut end = 0;
        checked(|err| (self.ops.cursor_next)(self.raw, &mut array, &mut end, err))?;
        if end != 0 {
            return Ok(None);
        }
        // SAFETY: the C side filled `array` as a struct array of `ffi_schema`'s type.
        let data = unsafe { from_ffi(array, &self.ffi_schema) }.map_err(arrow_error)?;
        let columns = StructArray::from(data);
        if columns.null_count() != 0 {
            return Err(internal("a result batch has null rows at its top level"));
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns.columns().to_vec())
            .map_err(arrow_error)?;
        // Every door's results come through here: the spine's query streams and Flight SQL's DoGet.
        crate::metrics::metrics().batch_out(batch.num_rows(), batch.get_array_memory_size());
        Ok(Some(batch))
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        (self.ops.cursor_close)(self.raw);
    }
}

#[cfg(test)]
mod tests {
    use super::type_name;

    #[test]
    fn capitalised_type_names_become_words() {
        assert_eq!(type_name("INTERRUPT"), "Interrupt");
        assert_eq!(type_name("Out of Range"), "Out of Range");
        assert_eq!(type_name("Catalog"), "Catalog");
        assert_eq!(type_name(""), "");
    }
}
