//! The request contract, as strict as vgi-rpc's server: a parameter batch with the
//! declared names in the declared order, the declared types and nullability and
//! one row, and dispatch metadata that is present and UTF-8. Every refusal is a
//! typed error, and the same connection then answers a good request. Every wait is
//! bounded, so a server that hangs fails the test instead of stalling the suite.

mod common;

use std::io::Write;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::{add_method, read_reply, request_metadata, Reply};
use quiver_rpc::{Server, ServerConfig, Service, SessionEnd};
use quiver_transport::{pipe_pair, Connection};
use quiver_wire::{classify, keys, BatchMetadata, BatchRole, ErrorReport, LogLevel, StreamWriter};

/// How long any single wait on the server may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// Stands in for bytes that are not UTF-8 until [`not_utf8`] replaces it.
const PLACEHOLDER: &str = "<placeholder for bytes that are not UTF-8>";

fn service() -> Service {
    let mut service = Service::new("Test", "1.0.0");
    service.add(add_method());
    service
}

fn start() -> (Connection, mpsc::Receiver<SessionEnd>) {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), ServerConfig::default());
    let (done, ended) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(server.serve(server_end));
    });
    (client_end, ended)
}

/// A one-or-more-row batch of Float64 columns named and typed by `fields`.
fn batch(fields: Vec<Field>, rows: usize) -> RecordBatch {
    let columns = fields
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => Arc::new(StringArray::from(vec!["x"; rows])) as ArrayRef,
            _ => Arc::new(Float64Array::from(vec![1.0; rows])) as ArrayRef,
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn a() -> Field {
    Field::new("a", DataType::Float64, false)
}

fn b() -> Field {
    Field::new("b", DataType::Float64, false)
}

fn request(params: &RecordBatch, metadata: &BatchMetadata) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = StreamWriter::begin(params.schema_ref(), &mut out).unwrap();
    writer.write(params, metadata, &mut out).unwrap();
    writer.finish(&mut out);
    out
}

/// `bytes` with the first [`PLACEHOLDER`] turned into bytes that are not UTF-8.
fn not_utf8(mut bytes: Vec<u8>) -> Vec<u8> {
    let at = bytes
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER.as_bytes())
        .expect("the placeholder is in the request");
    bytes[at] = 0xff;
    bytes[at + 1] = 0xfe;
    bytes
}

/// Sends `bytes` and reads the reply within [`PATIENCE`].
fn exchange(what: &str, connection: Connection, bytes: Vec<u8>) -> (Connection, Option<Reply>) {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let mut connection = connection;
        connection.writer.write_all(&bytes).unwrap();
        connection.writer.flush().unwrap();
        let reply = read_reply(&mut connection.reader);
        let _ = done.send((connection, reply));
    });
    result
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{what}: no answer within {PATIENCE:?} (server hung?)"))
}

fn error_of(reply: &Reply) -> Option<ErrorReport> {
    reply
        .iter()
        .find_map(|(batch, metadata)| match classify(batch, metadata) {
            Ok(BatchRole::Log(record)) if record.level == LogLevel::Exception => {
                Some(ErrorReport::from_record(&record))
            }
            _ => None,
        })
}

fn assert_serves_add(connection: Connection, after: &str) -> Connection {
    let mut params = batch(vec![a(), b()], 1);
    params = RecordBatch::try_new(
        params.schema(),
        vec![
            Arc::new(Float64Array::from(vec![1.25])),
            Arc::new(Float64Array::from(vec![2.5])),
        ],
    )
    .unwrap();
    let (connection, reply) = exchange(
        after,
        connection,
        request(&params, &request_metadata("add")),
    );
    let reply = reply.unwrap_or_else(|| panic!("after {after}: the server closed the connection"));
    assert!(
        error_of(&reply).is_none(),
        "after {after}: {:?}",
        error_of(&reply)
    );
    let results: Vec<f64> = reply
        .iter()
        .filter(|(batch, _)| batch.num_rows() == 1)
        .map(|(batch, _)| batch.column(0).as_primitive::<Float64Type>().value(0))
        .collect();
    assert_eq!(results, vec![3.75], "after {after}");
    connection
}

/// A request the server must refuse: its name, bytes, error type and words the
/// message must contain.
type Case = (&'static str, Vec<u8>, &'static str, &'static str);

fn parameter_cases() -> Vec<Case> {
    let add = request_metadata("add");
    let nullable_a = Field::new("a", DataType::Float64, true);
    let text_a = Field::new("a", DataType::Utf8, false);
    let stray = Field::new("unexpected", DataType::Utf8, false);
    let renamed = Field::new("wrong_name", DataType::Float64, false);
    vec![
        (
            "wrong order",
            request(&batch(vec![b(), a()], 1), &add),
            "TypeError",
            "field 0 expected name 'a'",
        ),
        (
            "wrong nullability",
            request(&batch(vec![nullable_a, b()], 1), &add),
            "TypeError",
            "nullable=False",
        ),
        (
            "wrong type",
            request(&batch(vec![text_a, b()], 1), &add),
            "TypeError",
            "expected Arrow type Float64",
        ),
        (
            "missing field",
            request(&batch(vec![a()], 1), &add),
            "TypeError",
            "missing required argument(s): 'b'",
        ),
        (
            "extra field",
            request(&batch(vec![a(), b(), stray], 1), &add),
            "TypeError",
            "'unexpected'",
        ),
        (
            "wrong name",
            request(&batch(vec![renamed, b()], 1), &add),
            "TypeError",
            "'wrong_name'",
        ),
        (
            "zero rows",
            request(&batch(vec![a(), b()], 0), &add),
            "RpcError",
            "ProtocolError: Expected 1 row",
        ),
        (
            "two rows",
            request(&batch(vec![a(), b()], 2), &add),
            "RpcError",
            "ProtocolError: Expected 1 row in request batch, got 2",
        ),
    ]
}

fn metadata_cases() -> Vec<Case> {
    let params = batch(vec![a(), b()], 1);
    let with = |change: &dyn Fn(&mut BatchMetadata)| {
        let mut metadata = request_metadata("add");
        change(&mut metadata);
        request(&params, &metadata)
    };
    vec![
        (
            "no method",
            with(&|m| {
                m.remove(keys::METHOD);
            }),
            "RpcError",
            "ProtocolError: Missing 'vgi_rpc.method'",
        ),
        (
            "a method name that is not UTF-8",
            not_utf8(with(&|m| m.insert(keys::METHOD, PLACEHOLDER))),
            "RpcError",
            "ProtocolError: unreadable request batch",
        ),
        (
            "another key whose value is not UTF-8",
            not_utf8(with(&|m| m.insert("traceparent", PLACEHOLDER))),
            "RpcError",
            "ProtocolError: unreadable request batch",
        ),
        (
            "a key that is not UTF-8",
            not_utf8(with(&|m| m.insert(PLACEHOLDER, "x"))),
            "RpcError",
            "ProtocolError: unreadable request batch",
        ),
        (
            "no request version",
            with(&|m| {
                m.remove(keys::REQUEST_VERSION_KEY);
            }),
            "VersionError",
            "request_version",
        ),
        (
            "no protocol",
            with(&|m| {
                m.remove(keys::PROTOCOL);
            }),
            "ProtocolNotSpecifiedError",
            "vgi_rpc.protocol",
        ),
    ]
}

fn assert_refused_then_serves(cases: Vec<Case>) {
    let (mut connection, ended) = start();
    connection = assert_serves_add(connection, "nothing");
    for (name, bytes, error_type, mentions) in cases {
        let (back, reply) = exchange(name, connection, bytes);
        let reply = reply.unwrap_or_else(|| panic!("{name}: the server closed the connection"));
        let error = error_of(&reply).unwrap_or_else(|| panic!("{name}: answered without an error"));
        assert_eq!(error.error_type, error_type, "{name}: {error:?}");
        assert!(
            error.message.contains(mentions),
            "{name}: {:?} does not mention {mentions:?}",
            error.message
        );
        assert!(
            reply.iter().all(|(batch, _)| batch.num_rows() == 0),
            "{name}: a refused request produced a result"
        );
        connection = assert_serves_add(back, name);
    }
    drop(connection);
    let end = ended.recv_timeout(PATIENCE).expect("serve() returned");
    assert!(matches!(end, SessionEnd::Closed), "{end:?}");
}

#[test]
fn parameter_batches_that_break_the_declared_schema_are_refused() {
    assert_refused_then_serves(parameter_cases());
}

#[test]
fn dispatch_metadata_that_is_missing_or_not_utf8_is_refused() {
    assert_refused_then_serves(metadata_cases());
}
