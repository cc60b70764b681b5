//! `Connection`: one session on a quiver server (`quiver_client::AsyncConnection`). Calls on one
//! connection run in order; an open stream or inserter holds the connection until it ends, and
//! calls made meanwhile wait for it.

use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use quiver_client::{AsyncConnection, ConnectOptions as ClientOptions, Shm};
use quiver_server_protocol::InsertMode;

use crate::batches::Batches;
use crate::columns::Columns;
use crate::error::{invalid, to_js};
use crate::inserters::ArrowInserter;
use crate::ipc;
use crate::limits::{self, check_rows};
use crate::row_inserter::{ColumnSpec, RowInserter};
use crate::stream::QueryStream;

/// How to connect.
#[napi(object)]
pub struct ConnectOptions {
    /// The token TCP listeners require.
    pub token: Option<String>,
    /// Bytes of the shared-memory segment for this connection (Unix sockets only); 0 turns it
    /// off; absent: as `VGI_RPC_SHM_SIZE_BYTES` says.
    pub shm_bytes: Option<f64>,
    /// A name for the server's log.
    pub client_name: Option<String>,
    /// Rows per result batch the client asks for.
    pub batch_rows: Option<u32>,
}

impl ConnectOptions {
    fn into_client(self) -> napi::Result<ClientOptions> {
        let shm = match self.shm_bytes {
            None => Shm::FromEnv,
            Some(0.0) => Shm::Off,
            Some(bytes) if bytes > 0.0 && bytes.fract() == 0.0 && bytes < 2f64.powi(53) => {
                Shm::Bytes(bytes as u64)
            }
            Some(bytes) => return Err(invalid(format!("shmBytes {bytes} is not a byte count"))),
        };
        Ok(ClientOptions {
            token: self.token,
            shm,
            client_name: self.client_name,
            batch_rows: self.batch_rows.map(i64::from),
            ..ClientOptions::default()
        })
    }
}

/// Connects to `address` (`tcp://host:port` or `unix:///path`).
#[napi]
pub async fn connect(address: String, options: Option<ConnectOptions>) -> napi::Result<Connection> {
    let options = match options {
        Some(options) => options.into_client()?,
        None => ClientOptions::default(),
    };
    let connection = AsyncConnection::connect_with(address.as_str(), options)
        .await
        .map_err(to_js)?;
    Ok(Connection::from(connection))
}

/// A session on a quiver server.
#[napi]
pub struct Connection {
    /// `None` once closed.
    inner: Mutex<Option<AsyncConnection>>,
}

impl From<AsyncConnection> for Connection {
    fn from(connection: AsyncConnection) -> Self {
        Connection {
            inner: Mutex::new(Some(connection)),
        }
    }
}

pub(crate) fn parse_mode(mode: Option<String>) -> napi::Result<InsertMode> {
    mode.as_deref().unwrap_or("append").parse().map_err(invalid)
}

/// The result so far, or why it was refused.
type Collected = Result<(SchemaRef, Vec<RecordBatch>), String>;

/// Collects a query's batches, refusing them as soon as they pass `rows_max` rows or `bytes_max`
/// bytes (dropping the stream cancels the statement).
fn collect(
    stream: quiver_client::QueryStream<'_>,
    rows_max: u64,
    bytes_max: u64,
    advice: &str,
) -> quiver_client::Result<Collected> {
    let (mut rows, mut bytes, mut batches) = (0u64, 0u64, Vec::new());
    let mut schema = None;
    for batch in stream {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        bytes += batch.get_array_memory_size() as u64;
        if rows > rows_max {
            return Ok(Err(format!(
                "the result has more than {rows_max} rows: {advice}"
            )));
        }
        if bytes > bytes_max {
            return Ok(Err(format!(
                "the result is larger than {bytes_max} bytes: {advice}"
            )));
        }
        schema.get_or_insert_with(|| batch.schema());
        batches.push(batch);
    }
    Ok(Ok((
        schema.unwrap_or_else(|| SchemaRef::new(Schema::empty())),
        batches,
    )))
}

/// `maxBytes` checked against `1..=IPC_BYTES_MAX`, or its default.
fn check_bytes(max_bytes: Option<f64>) -> napi::Result<u64> {
    let bytes_max = max_bytes.unwrap_or(limits::IPC_BYTES_MAX_DEFAULT);
    if !(1.0..=limits::IPC_BYTES_MAX).contains(&bytes_max) {
        return Err(invalid(format!(
            "maxBytes must be in 1..={}, not {bytes_max}",
            limits::IPC_BYTES_MAX
        )));
    }
    Ok(bytes_max as u64)
}

#[napi]
impl Connection {
    /// `sql`'s whole result (see `collect`), collected on the connection's own thread: JS is
    /// handed the result once, not woken for each batch.
    async fn collected(
        &self,
        sql: String,
        rows_max: u64,
        bytes_max: u64,
        advice: &'static str,
    ) -> napi::Result<(SchemaRef, Vec<RecordBatch>)> {
        let collected = self
            .session()?
            .run(move |c| collect(c.query(&sql)?, rows_max, bytes_max, advice))
            .await
            .map_err(to_js)?;
        collected.map_err(invalid)
    }

    fn session(&self) -> napi::Result<AsyncConnection> {
        self.inner
            .lock()
            .map_err(|_| invalid("a call on this connection panicked"))?
            .clone()
            .ok_or_else(|| invalid("the connection is closed"))
    }

    /// The session's id on the server.
    #[napi(getter)]
    pub fn session_id(&self) -> napi::Result<String> {
        Ok(self.session()?.session_id().to_string())
    }

    /// Runs SQL and returns the rows it changed.
    #[napi]
    pub async fn execute(&self, sql: String) -> napi::Result<f64> {
        let rows = self.session()?.execute(&sql).await.map_err(to_js)?;
        Ok(rows as f64)
    }

    /// The whole result column by column, at most `max_rows` rows; `for_rows` applies the row
    /// objects' limits (`executeQuery`).
    #[napi]
    pub async fn query_columns(
        &self,
        sql: String,
        max_rows: Option<u32>,
        for_rows: Option<bool>,
    ) -> napi::Result<Columns> {
        let for_rows = for_rows.unwrap_or(false);
        let (default, max, advice) = if for_rows {
            (
                limits::ROWS_MAX_DEFAULT,
                limits::ROWS_MAX,
                "use executeQueryStream, executeQueryColumnar or executeQueryToArrow, or raise maxRows",
            )
        } else {
            (
                limits::COLUMNAR_ROWS_MAX_DEFAULT,
                limits::COLUMNAR_ROWS_MAX,
                "use executeQueryStream, or raise maxRows",
            )
        };
        let rows_max = check_rows(max_rows, default, max, "maxRows")?;
        let (schema, batches) = self
            .collected(sql, rows_max.into(), u64::MAX, advice)
            .await?;
        Ok(Columns { schema, batches })
    }

    /// The whole result as one Arrow IPC stream of at most `max_bytes` bytes.
    #[napi]
    pub async fn query_ipc(&self, sql: String, max_bytes: Option<f64>) -> napi::Result<Buffer> {
        let bytes_max = check_bytes(max_bytes)?;
        let advice = "use executeQueryStream, or raise maxBytes";
        let (schema, batches) = self.collected(sql, u64::MAX, bytes_max, advice).await?;
        Ok(ipc::encode(&schema, &batches)?.into())
    }

    /// The whole result as batches over the client's buffers, at most `max_bytes` bytes.
    #[napi]
    pub async fn query_arrow(&self, sql: String, max_bytes: Option<f64>) -> napi::Result<Batches> {
        let bytes_max = check_bytes(max_bytes)?;
        let advice = "use executeQueryStream, or raise maxBytes";
        let (schema, batches) = self.collected(sql, u64::MAX, bytes_max, advice).await?;
        Ok(Batches { schema, batches })
    }

    /// The result one batch at a time.
    #[napi]
    pub async fn query_stream(&self, sql: String) -> napi::Result<QueryStream> {
        Ok(QueryStream::new(self.session()?.query(&sql)))
    }

    /// An insert of Arrow batches into `table`; it opens with the first batch written.
    #[napi]
    pub fn arrow_inserter(
        &self,
        table: String,
        mode: Option<String>,
    ) -> napi::Result<ArrowInserter> {
        Ok(ArrowInserter::new(
            self.session()?,
            table,
            parse_mode(mode)?,
        ))
    }

    /// An insert of rows into `table`, whose columns are `columns`.
    #[napi]
    pub async fn row_inserter(
        &self,
        table: String,
        columns: Vec<ColumnSpec>,
        mode: Option<String>,
    ) -> napi::Result<RowInserter> {
        RowInserter::open(self.session()?, table, columns, parse_mode(mode)?).await
    }

    /// `BEGIN`.
    #[napi]
    pub async fn begin(&self) -> napi::Result<()> {
        self.session()?.begin().await.map_err(to_js)
    }

    /// `COMMIT`.
    #[napi]
    pub async fn commit(&self) -> napi::Result<()> {
        self.session()?.commit().await.map_err(to_js)
    }

    /// `ROLLBACK`.
    #[napi]
    pub async fn rollback(&self) -> napi::Result<()> {
        self.session()?.rollback().await.map_err(to_js)
    }

    /// Interrupts the statement this session is running; `false` when it ran none.
    #[napi]
    pub async fn cancel(&self) -> napi::Result<bool> {
        self.session()?.cancel().await.map_err(to_js)
    }

    /// Closes the connection once the calls already made on it end (the server rolls back an
    /// open transaction).
    #[napi]
    pub fn close(&self) -> napi::Result<()> {
        self.inner
            .lock()
            .map_err(|_| invalid("a call on this connection panicked"))?
            .take();
        Ok(())
    }
}
