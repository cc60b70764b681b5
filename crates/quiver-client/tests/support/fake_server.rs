//! An in-process stand-in for the quiver server, for testing the client's side of the wire
//! without DuckDB: it speaks `quiver.server` 1.0.0 on quiver-rpc over a Unix socket, keeps
//! tables as batches in memory, and understands a few statement shapes:
//!
//! - `range N`: a query of N int64 rows (`i`), produced one batch per tick;
//! - `scan T`: a table's batches; `count T`: its row count;
//! - `fail`: a SQL error; anything else executes as a no-op changing 0 rows.
//!
//! Inserts buffer their batches and store them only at the commit marker, as the protocol says.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::reply;
use quiver_rpc::{
    CallContext, Method, Server, ServerConfig, Service, StreamOutput, StreamSetup, StreamState,
};
use quiver_server_protocol::{errors, insert, limits, methods, parameters, SessionInfo};
use quiver_server_protocol::{PROTOCOL_NAME, PROTOCOL_VERSION};
use quiver_transport::socket::UnixListener;
use quiver_wire::{BatchMetadata, ErrorReport};

type Tables = Arc<Mutex<HashMap<String, Vec<RecordBatch>>>>;

/// A running stand-in; its accept thread lives as long as the test process.
pub struct FakeServer {
    pub path: PathBuf,
    pub tables: Tables,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub fn start(token: Option<&'static str>) -> FakeServer {
    let tables: Tables = Arc::default();
    let service = service(tables.clone(), token);
    let server = Arc::new(Server::new(service, ServerConfig::default()));
    let path = std::env::temp_dir().join(format!(
        "quiver-client-fake-{}-{}.sock",
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    ));
    let listener = UnixListener::bind(&path).expect("bind the fake server's socket");
    std::thread::spawn(move || loop {
        let Ok(connection) = listener.accept() else {
            return;
        };
        let server = server.clone();
        std::thread::spawn(move || server.serve(connection));
    });
    FakeServer { path, tables }
}

impl FakeServer {
    pub fn address(&self) -> String {
        format!("unix://{}", self.path.display())
    }
}

fn rows_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]))
}

fn service(tables: Tables, token: Option<&'static str>) -> Service {
    let insert_tables = tables.clone();
    let query_tables = tables.clone();
    Service::new(PROTOCOL_NAME, PROTOCOL_VERSION)
        .with(Method::unary(
            methods::CONNECT,
            methods::connect_params(),
            Some(quiver_server_protocol::session::connect_result()),
            move |params, _ctx| {
                if token.is_some() && params.opt_str("token")? != token {
                    return Err(errors::unauthenticated());
                }
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                let info = SessionInfo {
                    server_version: "fake".into(),
                    duckdb_version: "none".into(),
                    session_id: format!("{id:032x}"),
                    database: ":memory:".into(),
                };
                Ok(Some(info.to_array()))
            },
        ))
        .with(Method::unary(
            methods::EXECUTE,
            methods::execute_params(),
            Some(methods::rows_changed_result()),
            |params, _ctx| match params.str("sql")? {
                "fail" => Err(errors::sql(
                    "Parser",
                    "Parser Error: syntax error at \"fail\"",
                )),
                _ => Ok(reply::i64(0)),
            },
        ))
        .with(Method::stream(
            methods::QUERY,
            methods::query_params(),
            None,
            move |params, _ctx| {
                query(
                    &query_tables,
                    params.str("sql")?,
                    params.opt_i64("batch_rows")?,
                )
            },
        ))
        .with(Method::stream(
            methods::INSERT,
            methods::insert_params(),
            None,
            move |params, _ctx| {
                let schema = parameters::decode_schema(params.bytes("schema")?, "schema")?;
                let state = Insert {
                    tables: insert_tables.clone(),
                    table: params.str("table")?.to_string(),
                    pending: Vec::new(),
                    rows: 0,
                };
                Ok(StreamSetup::exchange(schema, insert::ack_schema(), state))
            },
        ))
        .with(Method::unary(
            methods::CANCEL,
            methods::cancel_params(),
            Some(methods::cancel_result()),
            |_params, _ctx| Ok(reply::bool(false)),
        ))
}

fn query(tables: &Tables, sql: &str, batch_rows: Option<i64>) -> Result<StreamSetup, ErrorReport> {
    let batch_rows = batch_rows.unwrap_or(limits::BATCH_ROWS_DEFAULT);
    let words: Vec<&str> = sql.split_whitespace().collect();
    let batches = match words.as_slice() {
        ["range", n] => {
            let total: i64 = n.parse().map_err(|_| errors::sql("Parser", "bad range"))?;
            return Ok(StreamSetup::producer(
                rows_schema(),
                Range {
                    next: 0,
                    total,
                    batch_rows,
                },
            ));
        }
        ["scan", table] => tables.lock().unwrap().get(*table).cloned().ok_or_else(|| {
            errors::sql(
                "Catalog",
                format!("Catalog Error: Table with name {table} does not exist!"),
            )
        })?,
        ["count", table] => {
            let rows: usize = tables
                .lock()
                .unwrap()
                .get(*table)
                .map_or(0, |batches| batches.iter().map(RecordBatch::num_rows).sum());
            let column = Arc::new(Int64Array::from(vec![rows as i64]));
            vec![RecordBatch::try_new(rows_schema(), vec![column]).unwrap()]
        }
        _ => {
            return Err(errors::sql(
                "Parser",
                format!("Parser Error: cannot run '{sql}'"),
            ))
        }
    };
    let schema = batches.first().map_or_else(rows_schema, |b| b.schema());
    Ok(StreamSetup::producer(schema, Replay { batches, next: 0 }))
}

struct Range {
    next: i64,
    total: i64,
    batch_rows: i64,
}

impl StreamState for Range {
    fn process(
        &mut self,
        _input: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.next >= self.total {
            output.finish();
            return Ok(());
        }
        let end = (self.next + self.batch_rows).min(self.total);
        let column = Arc::new(Int64Array::from_iter_values(self.next..end));
        self.next = end;
        output.emit(RecordBatch::try_new(rows_schema(), vec![column]).unwrap());
        Ok(())
    }
}

struct Replay {
    batches: Vec<RecordBatch>,
    next: usize,
}

impl StreamState for Replay {
    fn process(
        &mut self,
        _input: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        match self.batches.get(self.next) {
            Some(batch) => {
                output.emit(batch.clone());
                self.next += 1;
            }
            None => output.finish(),
        }
        Ok(())
    }
}

struct Insert {
    tables: Tables,
    table: String,
    pending: Vec<RecordBatch>,
    rows: i64,
}

impl StreamState for Insert {
    fn process(
        &mut self,
        input: &RecordBatch,
        metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if input.num_rows() > 0 {
            self.rows += input.num_rows() as i64;
            self.pending.push(input.clone());
        }
        output.emit(insert::ack(self.rows));
        if metadata.get(insert::COMMIT_KEY) == Some(insert::COMMIT_VALUE) {
            let mut tables = self.tables.lock().unwrap();
            tables
                .entry(self.table.clone())
                .or_default()
                .append(&mut self.pending);
        }
        Ok(())
    }
}
