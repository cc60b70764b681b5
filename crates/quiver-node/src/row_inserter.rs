//! `RowInserter`: an all-or-nothing insert of rows. Each row's values are read on the JS thread
//! with N-API's C calls (a few per value) and checked against the column's type at once; chunks
//! of [`limits::ROW_CHUNK_ROWS`] rows go to a blocking task that owns the client's
//! `RowInserter` for the insert's life.

use std::ffi::c_char;
use std::ptr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use napi::bindgen_prelude::Unknown;
use napi::{check_status, sys, Env, JsValue};
use napi_derive::napi;
use quiver_client::{AsyncConnection, Connection};
use quiver_server_protocol::InsertMode;
use tokio::task::JoinHandle;

use crate::error::{invalid, to_js};
use crate::limits;

/// A column of a row insert.
#[napi(object)]
pub struct ColumnSpec {
    /// The column's name.
    pub name: String,
    /// `boolean`, `int16`, `int32`, `int64`, `float32`, `float64` or `utf8`.
    #[napi(js_name = "type")]
    pub data_type: String,
    /// Whether it takes nulls (default true).
    pub nullable: Option<bool>,
}

fn data_type(name: &str) -> napi::Result<DataType> {
    Ok(match name {
        "boolean" => DataType::Boolean,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "utf8" => DataType::Utf8,
        other => {
            return Err(invalid(format!(
                "column type '{other}' is not one of boolean, int16, int32, int64, float32, \
                 float64, utf8"
            )))
        }
    })
}

/// One value of a row, already checked against its column's type.
enum Cell {
    Null,
    Boolean(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

type Chunk = Vec<Cell>;

/// An insert of rows into one table; nothing is visible until `finish`.
#[napi]
pub struct RowInserter {
    schema: Arc<Schema>,
    /// Values of the rows not yet handed over, row after row.
    pending: Chunk,
    /// `None` once finished or failed.
    chunks: Option<SyncSender<Chunk>>,
    task: Option<JoinHandle<quiver_client::Result<u64>>>,
    rows: u64,
}

impl RowInserter {
    pub(crate) async fn open(
        connection: AsyncConnection,
        table: String,
        columns: Vec<ColumnSpec>,
        mode: InsertMode,
    ) -> napi::Result<RowInserter> {
        if columns.is_empty() {
            return Err(invalid("a row insert needs at least one column"));
        }
        let fields = columns
            .iter()
            .map(|column| {
                let nullable = column.nullable.unwrap_or(true);
                Ok(Field::new(
                    &column.name,
                    data_type(&column.data_type)?,
                    nullable,
                ))
            })
            .collect::<napi::Result<Vec<Field>>>()?;
        let schema = Arc::new(Schema::new(fields));
        let (chunks, received) = sync_channel::<Chunk>(limits::ROW_CHUNKS_QUEUED);
        let (opened_sender, opened) = tokio::sync::oneshot::channel();
        let task_schema = schema.clone();
        let task = tokio::spawn(async move {
            connection
                .run(move |c| insert_rows(c, &table, &task_schema, mode, received, opened_sender))
                .await
        });
        match opened.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(to_js(error)),
            Err(_) => {
                let error = match task.await {
                    Ok(Err(error)) => to_js(error),
                    _ => invalid("the insert task ended before opening"),
                };
                return Err(error);
            }
        }
        Ok(RowInserter {
            pending: Vec::with_capacity(limits::ROW_CHUNK_ROWS * schema.fields().len()),
            schema,
            chunks: Some(chunks),
            task: Some(task),
            rows: 0,
        })
    }

    fn cell(&self, column: usize, js: Raw, value: sys::napi_value) -> napi::Result<Cell> {
        let field = self.schema.field(column);
        let kind = js.type_of(value)?;
        let wrong = || {
            invalid(format!(
                "column '{}' is {}, not a {} value",
                field.name(),
                field.data_type(),
                type_name(kind)
            ))
        };
        if kind == sys::ValueType::napi_null || kind == sys::ValueType::napi_undefined {
            if !field.is_nullable() {
                return Err(invalid(format!(
                    "column '{}' is not nullable",
                    field.name()
                )));
            }
            return Ok(Cell::Null);
        }
        Ok(match (field.data_type(), kind) {
            (DataType::Boolean, sys::ValueType::napi_boolean) => Cell::Boolean(js.boolean(value)?),
            (DataType::Utf8, sys::ValueType::napi_string) => Cell::Text(js.string(value)?),
            (DataType::Float32 | DataType::Float64, sys::ValueType::napi_number) => {
                Cell::Float(js.number(value)?)
            }
            (DataType::Int16 | DataType::Int32 | DataType::Int64, sys::ValueType::napi_number) => {
                let number = js.number(value)?;
                if number.fract() != 0.0 || number.abs() > 2f64.powi(53) {
                    return Err(invalid(format!(
                        "column '{}' is {}, and {number} is not an integer",
                        field.name(),
                        field.data_type()
                    )));
                }
                integer(field, number as i64)?
            }
            (DataType::Int16 | DataType::Int32 | DataType::Int64, sys::ValueType::napi_bigint) => {
                let (number, lossless) = js.bigint(value)?;
                if !lossless {
                    return Err(invalid(format!(
                        "column '{}': a BigInt beyond int64",
                        field.name()
                    )));
                }
                integer(field, number)?
            }
            _ => return Err(wrong()),
        })
    }

    fn hand_over(&mut self) -> napi::Result<()> {
        let chunk = std::mem::replace(
            &mut self.pending,
            Vec::with_capacity(limits::ROW_CHUNK_ROWS * self.schema.fields().len()),
        );
        let sender = self
            .chunks
            .as_ref()
            .ok_or_else(|| invalid("the insert has ended"))?;
        // Waits while ROW_CHUNKS_QUEUED chunks are queued: the server sets the pace.
        if sender.send(chunk).is_err() {
            self.chunks = None;
            return Err(invalid(
                "the insert failed on the server: finish() reports why",
            ));
        }
        Ok(())
    }
}

/// `number` when it fits the integer column.
fn integer(field: &Field, number: i64) -> napi::Result<Cell> {
    let fits = match field.data_type() {
        DataType::Int16 => i16::try_from(number).is_ok(),
        DataType::Int32 => i32::try_from(number).is_ok(),
        _ => true,
    };
    if !fits {
        return Err(invalid(format!(
            "column '{}' is {}, and {number} does not fit",
            field.name(),
            field.data_type()
        )));
    }
    Ok(Cell::Int(number))
}

/// The insert's task: owns the client's row inserter while chunks arrive; the closed channel
/// (`finish`) commits.
fn insert_rows(
    connection: &mut Connection,
    table: &str,
    schema: &Schema,
    mode: InsertMode,
    chunks: Receiver<Chunk>,
    opened: tokio::sync::oneshot::Sender<quiver_client::Result<()>>,
) -> quiver_client::Result<u64> {
    let mut inserter = match connection.row_inserter(table, schema, mode) {
        Ok(inserter) => {
            let _ = opened.send(Ok(()));
            inserter
        }
        Err(error) => {
            let _ = opened.send(Err(error));
            return Ok(0);
        }
    };
    let columns = schema.fields().len();
    let mut finished = false;
    while let Ok(chunk) = chunks.recv() {
        if chunk.is_empty() {
            // The finish marker: an empty chunk (a real one always has a row).
            finished = true;
            break;
        }
        debug_assert_eq!(chunk.len() % columns, 0);
        for (index, cell) in chunk.into_iter().enumerate() {
            match (cell, schema.field(index % columns).data_type()) {
                (Cell::Null, _) => inserter.add_null()?,
                (Cell::Boolean(flag), _) => inserter.add_bool(flag)?,
                (Cell::Int(number), DataType::Int16) => inserter.add_i16(number as i16)?,
                (Cell::Int(number), DataType::Int32) => inserter.add_i32(number as i32)?,
                (Cell::Int(number), _) => inserter.add_i64(number)?,
                (Cell::Float(number), DataType::Float32) => inserter.add_f32(number as f32)?,
                (Cell::Float(number), _) => inserter.add_f64(number)?,
                (Cell::Text(text), _) => inserter.add_str(&text)?,
            }
            if index % columns == columns - 1 {
                inserter.end_row()?;
            }
        }
    }
    if !finished {
        // Dropped without finish: dropping the inserter rolls the insert back.
        return Err(quiver_client::Error::InvalidInput(
            "the insert was dropped before finish".into(),
        ));
    }
    inserter.finish()
}

#[napi]
impl RowInserter {
    /// Adds one row, one value per column in order; waits only when the server is behind.
    #[napi(ts_args_type = "values: Array<unknown>")]
    pub fn add_row(&mut self, env: Env, values: Unknown) -> napi::Result<()> {
        let js = Raw(env.raw());
        let row = values.raw();
        let columns = self.schema.fields().len();
        let given = js.array_length(row)?;
        if given != columns {
            return Err(invalid(format!(
                "a row of {given} values, the insert has {columns} columns"
            )));
        }
        if self.chunks.is_none() {
            return Err(invalid("the insert has ended"));
        }
        let kept = self.pending.len();
        for column in 0..columns {
            let cell = js
                .element(row, column)
                .and_then(|value| self.cell(column, js, value));
            match cell {
                Ok(cell) => self.pending.push(cell),
                Err(error) => {
                    // A refused row leaves nothing half added.
                    self.pending.truncate(kept);
                    return Err(error);
                }
            }
        }
        self.rows += 1;
        if self.pending.len() == limits::ROW_CHUNK_ROWS * columns {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Rows added so far.
    #[napi(getter)]
    pub fn rows(&self) -> f64 {
        self.rows as f64
    }

    /// Gives up: no row is inserted, and the connection is free again when this resolves.
    #[napi]
    pub async unsafe fn abort(&mut self) -> napi::Result<()> {
        self.pending.clear();
        // The closed channel ends the task without a finish marker: it drops the client's
        // inserter, which rolls the insert back.
        self.chunks = None;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        Ok(())
    }

    /// Sends the remaining rows and commits; returns the rows inserted.
    #[napi]
    pub async unsafe fn finish(&mut self) -> napi::Result<f64> {
        let task = self
            .task
            .take()
            .ok_or_else(|| invalid("the insert has ended"))?;
        let last = std::mem::take(&mut self.pending);
        if let Some(sender) = self.chunks.take() {
            // The last rows, then the finish marker (an empty chunk), sent where waiting on a
            // full queue blocks no runtime thread; a closed channel means the task failed, and
            // its result says why.
            let _ = tokio::task::spawn_blocking(move || {
                if !last.is_empty() {
                    sender.send(last)?;
                }
                sender.send(Vec::new())
            })
            .await;
        }
        let result = task.await.map_err(|error| invalid(error.to_string()))?;
        Ok(result.map_err(to_js)? as f64)
    }
}

/// N-API's C calls that read a row's values, without the checks and allocations of the safe
/// conversions (each value is read once, its type known from `type_of`).
#[derive(Clone, Copy)]
struct Raw(sys::napi_env);

impl Raw {
    fn array_length(self, array: sys::napi_value) -> napi::Result<usize> {
        let mut is_array = false;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_is_array(self.0, array, &mut is_array) })?;
        if !is_array {
            return Err(invalid("a row is an array of values"));
        }
        let mut length = 0;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_get_array_length(self.0, array, &mut length) })?;
        Ok(length as usize)
    }

    fn element(self, array: sys::napi_value, index: usize) -> napi::Result<sys::napi_value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_get_element(self.0, array, index as u32, &mut value) })?;
        Ok(value)
    }

    fn type_of(self, value: sys::napi_value) -> napi::Result<sys::napi_valuetype> {
        let mut kind = 0;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_typeof(self.0, value, &mut kind) })?;
        Ok(kind)
    }

    fn number(self, value: sys::napi_value) -> napi::Result<f64> {
        let mut number = 0.0;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_get_value_double(self.0, value, &mut number) })?;
        Ok(number)
    }

    fn boolean(self, value: sys::napi_value) -> napi::Result<bool> {
        let mut flag = false;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe { sys::napi_get_value_bool(self.0, value, &mut flag) })?;
        Ok(flag)
    }

    fn bigint(self, value: sys::napi_value) -> napi::Result<(i64, bool)> {
        let (mut number, mut lossless) = (0, false);
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe {
            sys::napi_get_value_bigint_int64(self.0, value, &mut number, &mut lossless)
        })?;
        Ok((number, lossless))
    }

    fn string(self, value: sys::napi_value) -> napi::Result<String> {
        let mut length = 0;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe {
            sys::napi_get_value_string_utf8(self.0, value, ptr::null_mut(), 0, &mut length)
        })?;
        let mut bytes = vec![0u8; length + 1];
        let mut written = 0;
        // SAFETY: `self.0` is the env of the call in progress and `value`/`array` belong to its scope; out-parameters are live locals.
        check_status!(unsafe {
            sys::napi_get_value_string_utf8(
                self.0,
                value,
                bytes.as_mut_ptr() as *mut c_char,
                bytes.len(),
                &mut written,
            )
        })?;
        bytes.truncate(written);
        // N-API writes UTF-8 (lone surrogates become U+FFFD).
        String::from_utf8(bytes).map_err(|error| invalid(error.to_string()))
    }
}

/// The JS name of a value's type, for errors.
fn type_name(kind: sys::napi_valuetype) -> &'static str {
    match kind {
        sys::ValueType::napi_number => "Number",
        sys::ValueType::napi_string => "String",
        sys::ValueType::napi_boolean => "Boolean",
        sys::ValueType::napi_bigint => "BigInt",
        sys::ValueType::napi_object => "Object",
        sys::ValueType::napi_symbol => "Symbol",
        sys::ValueType::napi_function => "Function",
        _ => "other",
    }
}
