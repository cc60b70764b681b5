//! `ArrowInserter`: an all-or-nothing insert (`quiver_client::AsyncArrowInserter`) fed from JS
//! with IPC streams, or with apache-arrow batches' own buffers (`crate::staged`).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use quiver_client::{AsyncArrowInserter, AsyncConnection, OutputSpace};
use quiver_server_protocol::InsertMode;
use tokio::sync::Mutex;

use crate::error::{invalid, to_js};
use crate::ipc;
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
    /// Where `stage` copies a batch's buffers (the connection's segment, when it has one).
    output: OutputSpace,
}

impl ArrowInserter {
    pub(crate) fn new(connection: AsyncConnection, table: String, mode: InsertMode) -> Self {
        ArrowInserter {
            output: connection.output_space().clone(),
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
        let batch = staged::batch(&schema, num_rows, &columns, &self.output)?;
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
