//! `ArrowInserter` and `RowInserter`: all-or-nothing inserts (`quiver_client`'s inserters) fed
//! from JS. An Arrow inserter takes IPC streams (apache-arrow writes them without a copy); a row
//! inserter converts each row's values on the JS thread, checked against the column's type at
//! once, and hands chunks of [`limits::ROW_CHUNK_ROWS`] rows to a blocking task that owns the
//! client's `RowInserter` for the insert's life.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use napi::bindgen_prelude::{BigInt, Buffer, Unknown};
use napi::ValueType;
use napi_derive::napi;
use quiver_client::{AsyncArrowInserter, AsyncConnection, Connection};
use quiver_server_protocol::InsertMode;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::error::{invalid, to_js};
use crate::ipc;
use crate::limits;
use crate::staged::{self, ColumnBuffers};

struct ArrowState {
    /// Taken when the insert opens.
    connection: Option<AsyncConnection>,
    table: String,
    mode: InsertMode,
    inserter: Option<AsyncArrowInserter>,
    rows: u64,
    ended: bool,
}

/// An insert of Arrow batches into one table; nothing is visible until `finish`.
#[napi]
pub struct ArrowInserter {
    state: Arc<Mutex<ArrowState>>,
    /// Batches `stage` made, sent by the next `write_staged`.
    staged: std::sync::Mutex<Vec<RecordBatch>>,
}

impl ArrowInserter {
    pub(crate) fn new(connection: AsyncConnection, table: String, mode: InsertMode) -> Self {
        ArrowInserter {
            state: Arc::new(Mutex::new(ArrowState {
                connection: Some(connection),
                table,
                mode,
                inserter: None,
                rows: 0,
                ended: false,
            })),
            staged: std::sync::Mutex::new(Vec::new()),
        }
    }
}

#[napi]
impl ArrowInserter {
    /// Appends the batches of one IPC stream; returns the rows written so far.
    #[napi]
    pub async fn write(&self, stream: Buffer) -> napi::Result<f64> {
        let (schema, batches) = ipc::decode(stream.to_vec())?;
        self.send(schema, batches).await
    }

    /// Copies one apache-arrow batch's buffers for the next `write_staged`; false (and nothing
    /// staged) when a column's type is not one `crate::staged` takes.
    #[napi]
    pub fn stage(
        &self,
        schema: Buffer,
        num_rows: u32,
        columns: Vec<ColumnBuffers>,
    ) -> napi::Result<bool> {
        let Some(schema) = staged::schema(schema)? else {
            return Ok(false);
        };
        let batch = staged::batch(&schema, num_rows, &columns)?;
        let mut staged = self.staged.lock().map_err(|_| invalid("a call panicked"))?;
        if staged.len() == ipc::DECODED_BATCHES_MAX {
            return Err(invalid("too many batches staged: write them first"));
        }
        staged.push(batch);
        Ok(true)
    }

    /// Appends the staged batches; returns the rows written so far.
    #[napi]
    pub async fn write_staged(&self) -> napi::Result<f64> {
        let batches =
            std::mem::take(&mut *self.staged.lock().map_err(|_| invalid("a call panicked"))?);
        let Some(first) = batches.first() else {
            return Ok(self.state.lock().await.rows as f64);
        };
        let schema = first.schema();
        self.send(schema, batches).await
    }
}

impl ArrowInserter {
    async fn send(&self, schema: SchemaRef, batches: Vec<RecordBatch>) -> napi::Result<f64> {
        let mut state = self.state.lock().await;
        if state.ended {
            return Err(invalid("the insert has ended"));
        }
        if state.inserter.is_none() {
            let connection = state
                .connection
                .take()
                .expect("an unopened insert has its connection");
            let opened = connection
                .arrow_inserter(&state.table, &schema, state.mode)
                .await;
            match opened {
                Ok(inserter) => state.inserter = Some(inserter),
                Err(error) => {
                    state.ended = true;
                    return Err(to_js(error));
                }
            }
        }
        for batch in batches {
            let rows = batch.num_rows() as u64;
            let inserter = state.inserter.as_mut().expect("opened above");
            if let Err(error) = inserter.write(batch).await {
                // The client's inserter has ended: the server rolls back.
                state.inserter = None;
                state.ended = true;
                return Err(to_js(error));
            }
            state.rows += rows;
        }
        Ok(state.rows as f64)
    }
}

#[napi]
impl ArrowInserter {
    /// Commits; returns the rows inserted.
    #[napi]
    pub async fn finish(&self) -> napi::Result<f64> {
        let mut state = self.state.lock().await;
        if state.ended {
            return Err(invalid("the insert has ended"));
        }
        state.ended = true;
        let inserter = state
            .inserter
            .take()
            .ok_or_else(|| invalid("nothing was written: the insert has no schema"))?;
        Ok(inserter.finish().await.map_err(to_js)? as f64)
    }

    /// Gives up: the server rolls back every row written.
    #[napi]
    pub async fn abort(&self) -> napi::Result<()> {
        let mut state = self.state.lock().await;
        state.ended = true;
        state.inserter = None;
        Ok(())
    }
}

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

    fn cell(&self, column: usize, value: &Unknown) -> napi::Result<Cell> {
        let field = self.schema.field(column);
        let kind = value.get_type()?;
        let wrong = || {
            invalid(format!(
                "column '{}' is {}, not a {kind:?} value",
                field.name(),
                field.data_type()
            ))
        };
        if matches!(kind, ValueType::Null | ValueType::Undefined) {
            if !field.is_nullable() {
                return Err(invalid(format!(
                    "column '{}' is not nullable",
                    field.name()
                )));
            }
            return Ok(Cell::Null);
        }
        Ok(match (field.data_type(), kind) {
            (DataType::Boolean, ValueType::Boolean) => {
                Cell::Boolean(unsafe { value.cast::<bool>()? })
            }
            (DataType::Utf8, ValueType::String) => Cell::Text(unsafe { value.cast::<String>()? }),
            (DataType::Float32 | DataType::Float64, ValueType::Number) => {
                Cell::Float(unsafe { value.cast::<f64>()? })
            }
            (DataType::Int16 | DataType::Int32 | DataType::Int64, ValueType::Number) => {
                let number = unsafe { value.cast::<f64>()? };
                if number.fract() != 0.0 || number.abs() > 2f64.powi(53) {
                    return Err(invalid(format!(
                        "column '{}' is {}, and {number} is not an integer",
                        field.name(),
                        field.data_type()
                    )));
                }
                integer(field, number as i64)?
            }
            (DataType::Int16 | DataType::Int32 | DataType::Int64, ValueType::BigInt) => {
                let (number, lossless) = unsafe { value.cast::<BigInt>()? }.get_i64();
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
    #[napi]
    pub fn add_row(&mut self, values: Vec<Unknown>) -> napi::Result<()> {
        let columns = self.schema.fields().len();
        if values.len() != columns {
            return Err(invalid(format!(
                "a row of {} values, the insert has {columns} columns",
                values.len()
            )));
        }
        if self.chunks.is_none() {
            return Err(invalid("the insert has ended"));
        }
        // Converted before any is kept, so a refused row leaves nothing half added.
        let row = values
            .iter()
            .enumerate()
            .map(|(column, value)| self.cell(column, value))
            .collect::<napi::Result<Vec<Cell>>>()?;
        self.pending.extend(row);
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
