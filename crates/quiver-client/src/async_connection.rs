//! The async connection (tokio). quiver's transport is blocking, so each call runs on tokio's
//! blocking pool against a sync [`Connection`] behind a mutex: calls on one connection queue in
//! order, and no runtime worker thread ever waits on the socket.
//!
//! A streaming query is a blocking task that owns the connection for the query's life and feeds
//! a channel of [`QUERY_CHANNEL_BATCHES`] batches; the task asks the server for the next batch
//! only when the channel has room, so a slow consumer holds the server back (backpressure)
//! instead of making anyone buffer the result. Dropping the stream cancels the query.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use futures_core::Stream;
use quiver_rpc::OutputSpace;
use quiver_server_protocol::{InsertMode, SessionInfo};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::catalog::TableInfo;
use crate::connection::{CancelHandle, Connection};
use crate::error::{Error, Result};
use crate::options::{ConnectOptions, IntoAddress};

/// Batches buffered between a query's blocking task and its consumer.
pub const QUERY_CHANNEL_BATCHES: usize = 1;
/// Batches buffered between an async inserter and its blocking task.
pub const INSERT_CHANNEL_BATCHES: usize = 2;

/// A session on a quiver server, for async code.
#[derive(Clone)]
pub struct AsyncConnection {
    connection: Arc<Mutex<Connection>>,
    session: SessionInfo,
    cancel: CancelHandle,
    output: OutputSpace,
}

fn lock(connection: &Mutex<Connection>) -> Result<MutexGuard<'_, Connection>> {
    connection
        .lock()
        .map_err(|_| Error::InvalidInput("a call on this connection panicked".into()))
}

fn joined<T>(result: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    result.unwrap_or_else(|error| {
        Err(Error::InvalidInput(format!(
            "a blocking call failed: {error}"
        )))
    })
}

impl AsyncConnection {
    /// Connects (see [`Connection::connect`]).
    pub async fn connect(
        address: impl IntoAddress,
        token: Option<&str>,
    ) -> Result<AsyncConnection> {
        let options = ConnectOptions {
            token: token.map(str::to_string),
            ..ConnectOptions::default()
        };
        AsyncConnection::connect_with(address, options).await
    }

    /// Connects with `options` (see [`Connection::connect_with`]).
    pub async fn connect_with(
        address: impl IntoAddress,
        options: ConnectOptions,
    ) -> Result<AsyncConnection> {
        let address = address.into_address()?;
        let opened =
            tokio::task::spawn_blocking(move || Connection::connect_with(address, &options)).await;
        Ok(AsyncConnection::from_sync(joined(opened)?))
    }

    /// Wraps a sync connection.
    pub fn from_sync(connection: Connection) -> AsyncConnection {
        AsyncConnection {
            session: connection.session().clone(),
            cancel: connection.cancel_handle(),
            output: connection.output_space(),
            connection: Arc::new(Mutex::new(connection)),
        }
    }

    /// What `connect` answered.
    pub fn session(&self) -> &SessionInfo {
        &self.session
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session.session_id
    }

    /// Where batches to insert may be built (see [`Connection::output_space`]), from any thread.
    pub fn output_space(&self) -> &OutputSpace {
        &self.output
    }

    /// Something that cancels this session's running statement (call it from a blocking
    /// context or `spawn_blocking`: it opens a connection).
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Interrupts the statement this session is running (from another task; see
    /// [`CancelHandle::cancel`]).
    pub async fn cancel(&self) -> Result<bool> {
        let handle = self.cancel.clone();
        joined(tokio::task::spawn_blocking(move || handle.cancel()).await)
    }

    /// Runs `call` on the connection, on the blocking pool, after the calls queued before it.
    pub async fn run<T, F>(&self, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let connection = self.connection.clone();
        joined(tokio::task::spawn_blocking(move || call(&mut *lock(&connection)?)).await)
    }

    /// See [`Connection::execute`].
    pub async fn execute(&self, sql: &str) -> Result<u64> {
        let sql = sql.to_string();
        self.run(move |c| c.execute(&sql)).await
    }

    /// See [`Connection::execute_with`].
    pub async fn execute_with(&self, sql: &str, parameters: RecordBatch) -> Result<u64> {
        let sql = sql.to_string();
        self.run(move |c| c.execute_with(&sql, &parameters)).await
    }

    /// See [`Connection::query_arrow`].
    pub async fn query_arrow(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let sql = sql.to_string();
        self.run(move |c| c.query_arrow(&sql)).await
    }

    /// See [`Connection::tables`].
    pub async fn tables(&self) -> Result<Vec<TableInfo>> {
        self.run(|c| c.tables()).await
    }

    /// See [`Connection::table_schema`].
    pub async fn table_schema(&self, table: &str) -> Result<SchemaRef> {
        let table = table.to_string();
        self.run(move |c| c.table_schema(&table)).await
    }

    /// `BEGIN`.
    pub async fn begin(&self) -> Result<()> {
        self.run(|c| c.begin()).await
    }

    /// `COMMIT`.
    pub async fn commit(&self) -> Result<()> {
        self.run(|c| c.commit()).await
    }

    /// `ROLLBACK`.
    pub async fn rollback(&self) -> Result<()> {
        self.run(|c| c.rollback()).await
    }

    /// Streams a query's batches (see the module's note on backpressure). Errors, the
    /// statement's included, arrive as items.
    pub fn query(&self, sql: &str) -> AsyncQueryStream {
        let (sender, batches) = mpsc::channel(QUERY_CHANNEL_BATCHES);
        let connection = self.connection.clone();
        let sql = sql.to_string();
        let task = tokio::task::spawn_blocking(move || {
            let mut guard = match lock(&connection) {
                Ok(guard) => guard,
                Err(error) => {
                    let _ = sender.blocking_send(Err(error));
                    return;
                }
            };
            let stream = match guard.query(&sql) {
                Ok(stream) => stream,
                Err(error) => {
                    let _ = sender.blocking_send(Err(error));
                    return;
                }
            };
            for batch in stream {
                // A closed channel (the consumer dropped the stream) drops the query stream,
                // which cancels the statement.
                if sender.blocking_send(batch).is_err() {
                    break;
                }
            }
        });
        AsyncQueryStream {
            batches,
            _task: task,
        }
    }

    /// Opens an insert (see [`Connection::arrow_inserter`]).
    pub async fn arrow_inserter(
        &self,
        table: &str,
        schema: &Schema,
        mode: InsertMode,
    ) -> Result<AsyncArrowInserter> {
        let (commands, mut received) = mpsc::channel::<Command>(INSERT_CHANNEL_BATCHES);
        let (opened_sender, opened) = oneshot::channel::<Result<()>>();
        let connection = self.connection.clone();
        let (table, schema) = (table.to_string(), schema.clone());
        let task = tokio::task::spawn_blocking(move || -> Result<u64> {
            let mut guard = lock(&connection)?;
            let mut inserter = match guard.arrow_inserter(&table, &schema, mode) {
                Ok(inserter) => {
                    let _ = opened_sender.send(Ok(()));
                    inserter
                }
                Err(error) => {
                    let _ = opened_sender.send(Err(error));
                    return Ok(0);
                }
            };
            while let Some(command) = received.blocking_recv() {
                match command {
                    Command::Batch(batch) => inserter.write(&batch)?,
                    Command::Finish => return inserter.finish(),
                }
            }
            // The inserter was dropped unfinished: dropping ours rolls the insert back.
            Err(Error::InvalidInput(
                "the insert was dropped before finish".into(),
            ))
        });
        match opened.await {
            Ok(Ok(())) => Ok(AsyncArrowInserter {
                commands: Some(commands),
                task: Some(task),
            }),
            Ok(Err(error)) => Err(error),
            // The task ended before opening the insert (the connection's lock failed).
            Err(_) => Err(match joined(task.await) {
                Err(error) => error,
                Ok(_) => Error::Protocol("the insert task ended before opening".into()),
            }),
        }
    }
}

/// The batches of one async query.
pub struct AsyncQueryStream {
    batches: mpsc::Receiver<Result<RecordBatch>>,
    /// Detached on drop: the task sees the closed channel and cancels the query.
    _task: JoinHandle<()>,
}

impl Stream for AsyncQueryStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.batches.poll_recv(cx)
    }
}

impl AsyncQueryStream {
    /// The next batch (`None` at the end); for callers without a `Stream` combinator crate.
    pub async fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        self.batches.recv().await
    }

    /// Collects the remaining batches.
    pub async fn collect(mut self) -> Result<Vec<RecordBatch>> {
        let mut batches = Vec::new();
        while let Some(batch) = self.next_batch().await {
            batches.push(batch?);
        }
        Ok(batches)
    }
}

enum Command {
    Batch(RecordBatch),
    Finish,
}

/// An async insert: batches go through a bounded channel to a blocking task that owns the
/// connection's [`crate::ArrowInserter`]. Dropping it without [`AsyncArrowInserter::finish`]
/// rolls the insert back.
pub struct AsyncArrowInserter {
    commands: Option<mpsc::Sender<Command>>,
    task: Option<JoinHandle<Result<u64>>>,
}

impl AsyncArrowInserter {
    /// Queues one batch; waits while [`INSERT_CHANNEL_BATCHES`] are queued already.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        let commands = self
            .commands
            .as_ref()
            .ok_or_else(|| Error::InvalidInput("the insert has ended".into()))?;
        if commands.send(Command::Batch(batch)).await.is_err() {
            // The task stopped: its result says why.
            return Err(self.failure().await);
        }
        Ok(())
    }

    /// Commits and returns the rows inserted.
    pub async fn finish(mut self) -> Result<u64> {
        let commands = self
            .commands
            .take()
            .ok_or_else(|| Error::InvalidInput("the insert has ended".into()))?;
        let _ = commands.send(Command::Finish).await;
        drop(commands);
        let task = self.task.take().expect("an open inserter has its task");
        joined(task.await)
    }

    async fn failure(&mut self) -> Error {
        self.commands = None;
        match self.task.take() {
            Some(task) => match joined(task.await) {
                Err(error) => error,
                Ok(_) => Error::Protocol("the insert task ended early".into()),
            },
            None => Error::InvalidInput("the insert has ended".into()),
        }
    }
}
