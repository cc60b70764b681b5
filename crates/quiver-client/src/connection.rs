//! The sync connection: one session on the server, with its own DuckDB connection, prepared
//! statements and transaction. Calls are sequential (the wire is lockstep); for concurrency open
//! more connections (see [`crate::Pool`] and [`crate::parallel`]).

use arrow_array::{Array, Int64Array, RecordBatch};
use quiver_rpc::{Client, OutputSpace, ShmStats};
use quiver_server_protocol::{
    limits, methods, parameters, session, Address, SessionInfo, PROTOCOL_NAME, PROTOCOL_VERSION,
};
use quiver_transport::socket;

use crate::error::{Error, Result};
use crate::options::{ConnectOptions, IntoAddress};
use crate::query::QueryStream;
use crate::request::{request, Value};
use crate::statement_cache::StatementCache;

/// A session on a quiver server.
pub struct Connection {
    client: Client,
    /// Set when a call failed in a way that leaves the connection unusable.
    broken: bool,
    session: SessionInfo,
    address: Address,
    options: ConnectOptions,
    /// Statements kept prepared for `query_cached`.
    pub(crate) statements: StatementCache,
}

impl Connection {
    /// Connects to `address` (`tcp://host:port` or `unix:///path`, or an [`Address`]) with
    /// `token` and default options.
    pub fn connect(address: impl IntoAddress, token: Option<&str>) -> Result<Connection> {
        let options = ConnectOptions {
            token: token.map(str::to_string),
            ..ConnectOptions::default()
        };
        Connection::connect_with(address, &options)
    }

    /// Connects with `options`, then opens the session (`connect`, the first call).
    pub fn connect_with(address: impl IntoAddress, options: &ConnectOptions) -> Result<Connection> {
        options.check()?;
        let address = address.into_address()?;
        let mut client = open_client(&address, options, true)?;
        let session = open_session(&mut client, options)?;
        Ok(Connection {
            client,
            broken: false,
            session,
            address,
            options: options.clone(),
            statements: StatementCache::default(),
        })
    }

    /// What `connect` answered: versions, database, session id.
    pub fn session(&self) -> &SessionInfo {
        &self.session
    }

    /// The session's id (what [`CancelHandle`] presents).
    pub fn session_id(&self) -> &str {
        &self.session.session_id
    }

    /// Where this connection goes.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The options it was opened with.
    pub fn options(&self) -> &ConnectOptions {
        &self.options
    }

    /// Whether a call on this connection failed in a way that leaves it unusable (the server
    /// went away, the bytes broke); a [`crate::Pool`] discards such connections.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Whether large batches travel through a shared-memory segment on this connection.
    pub fn uses_shm(&self) -> bool {
        self.client.shm_route().is_some()
    }

    /// What this connection moved through its segment so far (`None` without one).
    pub fn shm_stats(&self) -> Option<&ShmStats> {
        self.client.shm_route().map(|route| &route.stats)
    }

    /// Where batches to insert may be built: in the segment, when the connection has one, so
    /// that a batch built over one region ([`OutputSpace::region`]) and then inserted crosses
    /// to the server without a copy. Without a segment it lends nothing.
    pub fn output_space(&self) -> OutputSpace {
        self.client.output_space()
    }

    /// Runs SQL (one or more statements) and returns the rows changed (0 when the statement
    /// reports no count: DDL, `BEGIN`).
    pub fn execute(&mut self, sql: &str) -> Result<u64> {
        self.execute_encoded(sql, None)
    }

    /// Runs one statement once per row of `parameters` (one column per `?`/`$n`, in order) and
    /// returns the rows changed in all.
    pub fn execute_with(&mut self, sql: &str, parameters: &RecordBatch) -> Result<u64> {
        let encoded = parameters::encode_parameters(std::slice::from_ref(parameters))?;
        self.execute_encoded(sql, Some(&encoded))
    }

    fn execute_encoded(&mut self, sql: &str, parameters: Option<&[u8]>) -> Result<u64> {
        check_sql(sql)?;
        let params = request(
            methods::execute_params(),
            &[Value::Text(Some(sql)), Value::Bytes(parameters)],
        );
        let reply = self.unary(methods::EXECUTE, &params)?;
        rows_changed(&reply)
    }

    /// Runs a query and streams its result: each `next` asks the server for one batch, so the
    /// client holds one batch at a time and the server produces no further than asked.
    pub fn query(&mut self, sql: &str) -> Result<QueryStream<'_>> {
        self.query_encoded(sql, None)
    }

    /// [`Connection::query`] with one row of parameters.
    pub fn query_with(&mut self, sql: &str, parameters: &RecordBatch) -> Result<QueryStream<'_>> {
        let encoded = parameters::encode_parameters(std::slice::from_ref(parameters))?;
        self.query_encoded(sql, Some(&encoded))
    }

    fn query_encoded(&mut self, sql: &str, parameters: Option<&[u8]>) -> Result<QueryStream<'_>> {
        check_sql(sql)?;
        let batch_rows = self.options.batch_rows;
        let params = request(
            methods::query_params(),
            &[
                Value::Text(Some(sql)),
                Value::Bytes(parameters),
                Value::Int(batch_rows),
            ],
        );
        QueryStream::open(self.wire(), methods::QUERY, &params)
    }

    /// Runs a query and collects its whole result.
    pub fn query_arrow(&mut self, sql: &str) -> Result<Vec<RecordBatch>> {
        self.query(sql)?.collect()
    }

    /// Runs a query and returns the first column of its first row as an `i64` (`None` when the
    /// result is empty or the value null); for `SELECT count(*)` and the like.
    pub fn query_scalar_i64(&mut self, sql: &str) -> Result<Option<i64>> {
        for batch in self.query(sql)? {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let column = arrow_cast_i64(batch.column(0).as_ref())?;
            return Ok((!column.is_null(0)).then(|| column.value(0)));
        }
        Ok(None)
    }

    /// `BEGIN`: the statements that follow on this connection form one transaction.
    pub fn begin(&mut self) -> Result<()> {
        self.execute("BEGIN TRANSACTION").map(drop)
    }

    /// `COMMIT`.
    pub fn commit(&mut self) -> Result<()> {
        self.execute("COMMIT").map(drop)
    }

    /// `ROLLBACK`.
    pub fn rollback(&mut self) -> Result<()> {
        self.execute("ROLLBACK").map(drop)
    }

    /// Something another thread can use to cancel this session's running statement.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle {
            address: self.address.clone(),
            options: self.options.clone(),
            session_id: self.session.session_id.clone(),
        }
    }

    /// A unary call whose reply is one batch.
    pub(crate) fn unary(&mut self, method: &str, params: &RecordBatch) -> Result<RecordBatch> {
        let reply = self.client_call(method, params);
        let reply = self.wire().noting(reply)?;
        reply.ok_or_else(|| Error::Protocol(format!("{method} answered nothing")))
    }

    fn client_call(&mut self, method: &str, params: &RecordBatch) -> Result<Option<RecordBatch>> {
        self.client.call(method, params).map_err(Error::from)
    }

    /// A unary call with no reply.
    pub(crate) fn unary_void(&mut self, method: &str, params: &RecordBatch) -> Result<()> {
        let reply = self.client_call(method, params);
        self.wire().noting(reply).map(drop)
    }

    /// The client and the broken flag, borrowed apart so a stream call can hold both.
    pub(crate) fn wire(&mut self) -> Wire<'_> {
        Wire {
            client: &mut self.client,
            broken: &mut self.broken,
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("address", &self.address.to_string())
            .field("database", &self.session.database)
            .field("shm", &self.uses_shm())
            .finish()
    }
}

/// A connection's client with its broken flag, for the calls that hold them while they stream.
pub(crate) struct Wire<'c> {
    pub(crate) client: &'c mut Client,
    pub(crate) broken: &'c mut bool,
}

impl Wire<'_> {
    /// Passes `result` through, marking the connection broken when its error says so.
    pub(crate) fn noting<T>(&mut self, result: Result<T>) -> Result<T> {
        note(self.broken, result)
    }
}

/// Marks `broken` when `result` is an error that leaves the connection unusable.
pub(crate) fn note<T>(broken: &mut bool, result: Result<T>) -> Result<T> {
    if let Err(error) = &result {
        if !error.connection_usable() {
            *broken = true;
        }
    }
    result
}

/// Cancels a session's running statement from any thread: it opens a connection of its own and
/// presents the session's id as its one call, without opening a session, so it needs no
/// `max_connections` place on the server.
#[derive(Clone, Debug)]
pub struct CancelHandle {
    address: Address,
    options: ConnectOptions,
    session_id: String,
}

impl CancelHandle {
    /// Interrupts the statement the session is running; `false` when it was running none.
    pub fn cancel(&self) -> Result<bool> {
        let mut client = open_client(&self.address, &self.options, false)?;
        let params = request(
            methods::cancel_params(),
            &[Value::Text(Some(&self.session_id))],
        );
        let reply = client
            .call(methods::CANCEL, &params)?
            .ok_or_else(|| Error::Protocol("cancel answered nothing".into()))?;
        let flag = reply
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::BooleanArray>()
            .filter(|flags| flags.len() == 1 && !flags.is_null(0))
            .ok_or_else(|| Error::Protocol("cancel answered no boolean".into()))?;
        Ok(flag.value(0))
    }
}

/// A client of `quiver.server` on a new connection to `address` (with shared memory as `options`
/// say, when `shm`), before any call.
fn open_client(address: &Address, options: &ConnectOptions, shm: bool) -> Result<Client> {
    let transport = match address {
        Address::Unix(path) => socket::connect_unix(path),
        Address::Tcp { host, port } => socket::connect_tcp((host.as_str(), *port)),
    }
    .map_err(|source| Error::Connect {
        address: address.to_string(),
        source,
    })?;
    let client = Client::new(transport)
        .with_protocol(PROTOCOL_NAME, PROTOCOL_VERSION)
        .with_limits(options.wire_limits());
    if !shm {
        return Ok(client);
    }
    Ok(client.with_shm_from_config(&options.shm_config()?)?)
}

/// `connect`, the first call of every connection.
fn open_session(client: &mut Client, options: &ConnectOptions) -> Result<SessionInfo> {
    let params = request(
        methods::connect_params(),
        &[
            Value::Text(options.token.as_deref()),
            Value::Text(options.client_name.as_deref()),
        ],
    );
    let reply = client
        .call(methods::CONNECT, &params)?
        .ok_or_else(|| Error::Protocol("connect answered nothing".into()))?;
    let info = SessionInfo::from_array(reply.column(0).as_ref())
        .map_err(|report| Error::Protocol(report.message))?;
    if !session::is_session_id(&info.session_id) {
        return Err(Error::Protocol(format!(
            "connect answered a malformed session id '{}'",
            info.session_id
        )));
    }
    Ok(info)
}

pub(crate) fn check_sql(sql: &str) -> Result<()> {
    if sql.len() > limits::SQL_BYTES_MAX {
        return Err(Error::InvalidInput(format!(
            "SQL of {} bytes exceeds the limit of {}",
            sql.len(),
            limits::SQL_BYTES_MAX
        )));
    }
    Ok(())
}

/// The `int64` rows-changed reply (null: no count, read as 0).
pub(crate) fn rows_changed(reply: &RecordBatch) -> Result<u64> {
    let rows = reply
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .filter(|rows| rows.len() == 1)
        .ok_or_else(|| Error::Protocol("rows changed is not one int64".into()))?;
    if rows.is_null(0) {
        return Ok(0);
    }
    u64::try_from(rows.value(0))
        .map_err(|_| Error::Protocol(format!("negative rows changed {}", rows.value(0))))
}

fn arrow_cast_i64(array: &dyn Array) -> Result<Int64Array> {
    let cast = arrow_cast::cast(array, &arrow_schema::DataType::Int64)
        .map_err(|error| Error::InvalidInput(format!("not an integer: {error}")))?;
    Ok(cast
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("cast to Int64 gives an Int64Array")
        .clone())
}
