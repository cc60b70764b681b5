//! Client and server in one process over an OS pipe pair: every method kind, logs,
//! errors, cancel, and a connection that keeps serving after bad requests.

use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{
    field, CallContext, Client, Method, RpcError, Server, ServerConfig, Service, StreamOutput,
    StreamSetup, StreamState,
};
use quiver_transport::pipe_pair;
use quiver_wire::{BatchMetadata, ErrorReport, LogLevel, LogRecord};

fn service() -> Service {
    let mut service = Service::new("Test", "1.0.0");
    service.add(Method::unary(
        "add",
        vec![
            field("a", DataType::Float64, false),
            field("b", DataType::Float64, false),
        ],
        Some(field("result", DataType::Float64, false)),
        |params, ctx| {
            ctx.log(LogRecord::new(LogLevel::Info, "adding"));
            let sum = params.f64("a")? + params.f64("b")?;
            Ok(Some(Arc::new(Float64Array::from(vec![sum])) as ArrayRef))
        },
    ));
    service.add(Method::unary("fail", vec![], None, |_, _| {
        Err(ErrorReport::new("ValueError", "boom"))
    }));
    service.add(Method::stream(
        "count",
        vec![field("n", DataType::Int64, false)],
        None,
        |params, _| {
            let n = params.i64("n")?;
            let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
            Ok(StreamSetup::producer(
                schema.clone(),
                Counter { next: 0, n, schema },
            ))
        },
    ));
    service.add(Method::stream("wrong_output", vec![], None, |_, _| {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
        Ok(StreamSetup::exchange(schema.clone(), schema, WrongOutput))
    }));
    service.add(Method::stream("double", vec![], None, |_, _| {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
        Ok(StreamSetup::exchange(schema.clone(), schema, Doubler))
    }));
    service
}

struct Counter {
    next: i64,
    n: i64,
    schema: Arc<Schema>,
}

impl StreamState for Counter {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.next == self.n {
            out.finish();
            return Ok(());
        }
        let batch = RecordBatch::try_new(
            self.schema.clone(),
            vec![Arc::new(Int64Array::from(vec![self.next]))],
        )
        .unwrap();
        self.next += 1;
        out.emit(batch);
        Ok(())
    }
}

/// Emits a batch whose columns are not the declared output's.
struct WrongOutput;

impl StreamState for WrongOutput {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "other",
            DataType::Int64,
            false,
        )]));
        out.emit(RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap());
        Ok(())
    }
}

struct Doubler;

impl StreamState for Doubler {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let x = input.column(0).as_primitive::<Float64Type>();
        if x.values().iter().any(|v| v.is_nan()) {
            return Err(ErrorReport::new("ValueError", "NaN"));
        }
        let doubled: Float64Array = x.values().iter().map(|v| v * 2.0).collect();
        out.emit(RecordBatch::try_new(input.schema(), vec![Arc::new(doubled)]).unwrap());
        Ok(())
    }
}

fn start() -> (Client, thread::JoinHandle<()>) {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), ServerConfig::default());
    let handle = thread::spawn(move || {
        server.serve(server_end);
    });
    (
        Client::new(client_end).with_protocol("Test", "1.0.0"),
        handle,
    )
}

fn add_params(a: f64, b: f64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Float64, false),
        Field::new("b", DataType::Float64, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Float64Array::from(vec![a])),
            Arc::new(Float64Array::from(vec![b])),
        ],
    )
    .unwrap()
}

fn empty_params() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

#[test]
fn unary_add_with_log() {
    let (mut client, _server) = start();
    let reply = client.call("add", &add_params(1.5, 2.0)).unwrap().unwrap();
    assert_eq!(reply.column(0).as_primitive::<Float64Type>().value(0), 3.5);
    let logs = client.take_logs();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].message, "adding");
}

#[test]
fn errors_keep_the_connection_serving() {
    let (mut client, _server) = start();
    let error = client.call("fail", &empty_params()).unwrap_err();
    assert_eq!(error.remote().unwrap().error_type, "ValueError");
    let error = client.call("nope", &empty_params()).unwrap_err();
    assert_eq!(
        error.remote().unwrap().kind.as_deref(),
        Some("method_not_implemented")
    );
    let error = client.call("add", &empty_params()).unwrap_err();
    assert_eq!(error.remote().unwrap().error_type, "TypeError", "{error}");
    let reply = client.call("add", &add_params(1.0, 2.0)).unwrap().unwrap();
    assert_eq!(reply.column(0).as_primitive::<Float64Type>().value(0), 3.0);
}

#[test]
fn missing_protocol_is_rejected_with_its_kind() {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), ServerConfig::default());
    thread::spawn(move || server.serve(server_end));
    let mut client = Client::new(client_end);
    let error = client.call("add", &add_params(1.0, 2.0)).unwrap_err();
    assert_eq!(
        error.remote().unwrap().kind.as_deref(),
        Some("protocol_not_specified")
    );
}

#[test]
fn producer_runs_to_its_end_then_connection_is_reusable() {
    let (mut client, _server) = start();
    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![3]))],
    )
    .unwrap();
    let mut stream = client.stream("count", &params, false).unwrap();
    let mut seen = Vec::new();
    while let Some(batch) = stream.tick().unwrap() {
        seen.push(batch.column(0).as_primitive::<Int64Type>().value(0));
    }
    assert_eq!(seen, vec![0, 1, 2]);
    stream.close().unwrap();
    let reply = client.call("add", &add_params(1.0, 1.0)).unwrap().unwrap();
    assert_eq!(reply.column(0).as_primitive::<Float64Type>().value(0), 2.0);
}

#[test]
fn producer_cancel_mid_stream() {
    let (mut client, _server) = start();
    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![100]))],
    )
    .unwrap();
    let mut stream = client.stream("count", &params, false).unwrap();
    stream.tick().unwrap().unwrap();
    stream.cancel().unwrap();
    assert!(client.call("add", &add_params(1.0, 1.0)).unwrap().is_some());
}

#[test]
fn exchange_and_mid_stream_error() {
    let (mut client, _server) = start();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
    let batch = |v: Vec<f64>| {
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(v))]).unwrap()
    };
    let mut stream = client.stream("double", &empty_params(), false).unwrap();
    let out = stream.exchange(&batch(vec![1.0, 2.0])).unwrap().unwrap();
    assert_eq!(
        out.column(0).as_primitive::<Float64Type>().values(),
        &[2.0, 4.0]
    );
    let error = stream.exchange(&batch(vec![f64::NAN])).unwrap_err();
    assert!(
        matches!(error, RpcError::Remote(ref r) if r.message == "NaN"),
        "{error}"
    );
    drop(stream);
    assert!(client.call("add", &add_params(1.0, 1.0)).unwrap().is_some());
}

#[test]
fn an_output_that_does_not_fit_its_schema_ends_the_stream_with_one_error() {
    let (mut client, _server) = start();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
    let batch =
        RecordBatch::try_new(schema, vec![Arc::new(Float64Array::from(vec![1.0]))]).unwrap();
    let mut stream = client
        .stream("wrong_output", &empty_params(), false)
        .unwrap();
    let error = stream.exchange(&batch).unwrap_err();
    assert!(
        error
            .remote()
            .unwrap()
            .message
            .contains("missing field 'x'"),
        "{error}"
    );
    assert!(
        stream.is_done(),
        "the server ended the stream after the error"
    );
    drop(stream);
    let reply = client.call("add", &add_params(1.0, 2.0)).unwrap().unwrap();
    assert_eq!(reply.column(0).as_primitive::<Float64Type>().value(0), 3.0);
}
