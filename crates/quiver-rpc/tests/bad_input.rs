//! Bad input to a Server over an in-process pipe pair: malformed requests are
//! answered with a clear error and the same connection keeps serving; bytes that
//! break the framing are answered (where possible) and end the session; a client
//! that vanishes mid-stream ends the session; oversized messages are refused
//! before anything large is allocated. Every wait is bounded, so a server that
//! hangs fails the test instead of stalling the suite.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::{add_method, read_reply, request_metadata, Reply};
use quiver_rpc::{
    field, CallContext, Client, ConnectionError, Method, Server, ServerConfig, Service, SessionEnd,
    StreamOutput, StreamSetup, StreamState,
};
use quiver_transport::{pipe_pair, Connection};
use quiver_wire::{
    classify, keys, BatchMetadata, BatchRole, ErrorReport, Limits, LogLevel, StreamWriter,
    WireError,
};

/// How long any single wait on the server may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------
// The largest single allocation made by this test process (any thread).

struct Tracking;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

// ---------------------------------------------------------------------------
// A small service, and a server on its own thread.

fn service() -> Service {
    let mut service = Service::new("Test", "1.0.0");
    service.add(add_method());
    service.add(Method::unary(
        "total",
        vec![field(
            "values",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            false,
        )],
        Some(field("result", DataType::Int64, false)),
        |params, _| {
            let list = params.column("values")?.as_list::<i32>();
            let sum: i64 = list
                .value(0)
                .as_primitive::<arrow_array::types::Int64Type>()
                .iter()
                .flatten()
                .sum();
            Ok(Some(Arc::new(Int64Array::from(vec![sum])) as ArrayRef))
        },
    ));
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
    service
}

struct Counter {
    next: i64,
    n: i64,
    schema: SchemaRef,
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
        out.emit(
            RecordBatch::try_new(
                self.schema.clone(),
                vec![Arc::new(Int64Array::from(vec![self.next]))],
            )
            .unwrap(),
        );
        self.next += 1;
        Ok(())
    }
}

/// A server on its own thread; the receiver gets what `serve()` returned.
fn start(config: ServerConfig) -> (Connection, mpsc::Receiver<SessionEnd>) {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), config);
    let (done, ended) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(server.serve(server_end));
    });
    (client_end, ended)
}

fn session_end(ended: &mpsc::Receiver<SessionEnd>) -> SessionEnd {
    ended
        .recv_timeout(PATIENCE)
        .expect("the server's serve() did not return")
}

/// Runs `f` on its own thread and waits for it at most [`PATIENCE`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{what}: no answer within {PATIENCE:?} (server hung?)"))
}

// ---------------------------------------------------------------------------
// A raw client: hand-made request bytes, replies read as plain streams.

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

/// A request stream carrying `copies` copies of `params`, each with `metadata`.
fn request(params: &RecordBatch, metadata: &BatchMetadata, copies: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = StreamWriter::begin(params.schema_ref(), &mut out).unwrap();
    for _ in 0..copies {
        writer.write(params, metadata, &mut out).unwrap();
    }
    writer.finish(&mut out);
    out
}

fn send(connection: &mut Connection, bytes: &[u8]) {
    connection.writer.write_all(bytes).unwrap();
    connection.writer.flush().unwrap();
}

/// Sends `bytes` and reads the reply, within [`PATIENCE`].
fn exchange(what: &str, connection: Connection, bytes: Vec<u8>) -> (Connection, Option<Reply>) {
    bounded(&format!("the reply to {what}"), move || {
        let mut connection = connection;
        send(&mut connection, &bytes);
        let reply = read_reply(&mut connection.reader);
        (connection, reply)
    })
}

/// The EXCEPTION record of a reply, as an error report.
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

/// `add(1.5, 2)` on the connection must answer 3.5.
fn assert_serves_add(connection: Connection, after: &str) -> Connection {
    let (connection, reply) = exchange(
        &format!("add after {after}"),
        connection,
        request(&add_params(1.5, 2.0), &request_metadata("add"), 1),
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
    assert_eq!(results, vec![3.5], "after {after}");
    connection
}

// ---------------------------------------------------------------------------
// Tests

/// A request the server must refuse, and how.
struct BadRequest {
    name: &'static str,
    bytes: Vec<u8>,
    error_type: &'static str,
    kind: Option<&'static str>,
    /// Words the error message must contain.
    mentions: &'static str,
}

#[test]
fn bad_requests_are_answered_and_the_connection_keeps_serving() {
    let (mut connection, ended) = start(ServerConfig::default());
    connection = assert_serves_add(connection, "nothing");

    let with = |change: &dyn Fn(&mut BatchMetadata)| {
        let mut metadata = request_metadata("add");
        change(&mut metadata);
        request(&add_params(1.0, 1.0), &metadata, 1)
    };
    let cases = vec![
        BadRequest {
            name: "a wrong request_version",
            bytes: with(&|m| m.insert(keys::REQUEST_VERSION_KEY, "2")),
            error_type: "VersionError",
            kind: None,
            mentions: "\"2\"",
        },
        BadRequest {
            name: "no request_version",
            bytes: with(&|m| {
                m.remove(keys::REQUEST_VERSION_KEY);
            }),
            error_type: "VersionError",
            kind: None,
            mentions: "request_version",
        },
        BadRequest {
            name: "no vgi_rpc.method",
            bytes: with(&|m| {
                m.remove(keys::METHOD);
            }),
            error_type: "RpcError",
            kind: None,
            mentions: "vgi_rpc.method",
        },
        BadRequest {
            name: "an unknown method",
            bytes: with(&|m| m.insert(keys::METHOD, "no_such_method")),
            error_type: "MethodNotImplementedError",
            kind: Some("method_not_implemented"),
            mentions: "no_such_method",
        },
        BadRequest {
            name: "two batches",
            bytes: request(&add_params(1.0, 1.0), &request_metadata("add"), 2),
            error_type: "RpcError",
            kind: None,
            mentions: "more than one batch",
        },
        BadRequest {
            name: "no batch",
            bytes: request(&add_params(1.0, 1.0), &request_metadata("add"), 0),
            error_type: "RpcError",
            kind: None,
            mentions: "no batch",
        },
        BadRequest {
            name: "a wrong protocol_version major",
            bytes: with(&|m| m.insert(keys::PROTOCOL_VERSION, "2.0.0")),
            error_type: "ProtocolVersionError",
            kind: Some("protocol_version_mismatch"),
            mentions: "2.0.0",
        },
        BadRequest {
            name: "another protocol",
            bytes: with(&|m| m.insert(keys::PROTOCOL, "Elsewhere")),
            error_type: "ProtocolNotSupportedError",
            kind: Some("protocol_not_supported"),
            mentions: "Elsewhere",
        },
        BadRequest {
            name: "parameters of the wrong type",
            bytes: request(
                &RecordBatch::try_new(
                    Arc::new(Schema::new(vec![Field::new("a", DataType::Utf8, false)])),
                    vec![Arc::new(arrow_array::StringArray::from(vec!["x"])) as ArrayRef],
                )
                .unwrap(),
                &request_metadata("add"),
                1,
            ),
            error_type: "TypeError",
            kind: None,
            mentions: "add()",
        },
    ];
    for BadRequest {
        name,
        bytes,
        error_type,
        kind,
        mentions: words,
    } in cases
    {
        let (next, reply) = exchange(name, connection, bytes);
        let reply = reply.unwrap_or_else(|| {
            panic!("{name}: the server closed the connection instead of answering")
        });
        let error = error_of(&reply)
            .unwrap_or_else(|| panic!("{name}: answered without an error: {reply:?}"));
        assert_eq!(error.error_type, error_type, "{name}: {error}");
        if let Some(kind) = kind {
            assert_eq!(error.kind.as_deref(), Some(kind), "{name}: {error}");
        }
        assert!(
            error.message.contains(words),
            "{name}: {error:?} should mention {words}"
        );
        connection = assert_serves_add(next, name);
    }

    // A patch-level difference is no mismatch.
    let (next, reply) = exchange(
        "a patch-level version",
        connection,
        with(&|m| m.insert(keys::PROTOCOL_VERSION, "1.0.7")),
    );
    assert!(error_of(&reply.unwrap()).is_none());
    drop(next);
    assert!(matches!(session_end(&ended), SessionEnd::Closed));
}

#[test]
fn garbage_bytes_are_answered_then_the_session_ends() {
    let schema_only = {
        let mut out = Vec::new();
        StreamWriter::begin(add_params(0.0, 0.0).schema_ref(), &mut out).unwrap();
        out
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "an HTTP request",
            b"GET / HTTP/1.1\r\nHost: quiver\r\n\r\n".to_vec(),
        ),
        ("all ones", vec![0xff; 32]),
        (
            "a length and a header of noise",
            [&[0xff, 0xff, 0xff, 0xff, 16, 0, 0, 0][..], &[0x5a; 16]].concat(),
        ),
        (
            "a schema, then noise",
            [
                &schema_only[..],
                &[0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0],
                &[0x33; 8],
            ]
            .concat(),
        ),
        ("all zeros", vec![0; 16]),
    ];
    for (name, bytes) in cases {
        let (connection, ended) = start(ServerConfig::default());
        // The client keeps its end open: the server must answer without waiting for EOF.
        let (connection, reply) = exchange(name, connection, bytes);
        let reply = reply.unwrap_or_else(|| panic!("{name}: the server closed without answering"));
        let error = error_of(&reply).unwrap_or_else(|| panic!("{name}: no error in {reply:?}"));
        assert_eq!(
            error.kind.as_deref(),
            Some("malformed_request"),
            "{name}: {error}"
        );
        assert!(
            error.message.contains("unreadable request"),
            "{name}: {error}"
        );
        // Then the server ends the session: EOF on our side, Failed on its side.
        let (_connection, after) = bounded(name, move || {
            let mut connection = connection;
            let after = read_reply(&mut connection.reader);
            (connection, after)
        });
        assert!(
            after.is_none(),
            "{name}: the server kept talking: {after:?}"
        );
        match session_end(&ended) {
            SessionEnd::Failed(error) => assert!(!error.is_disconnect(), "{name}: {error:?}"),
            SessionEnd::Closed => panic!("{name}: garbage was taken for a clean close"),
        }
    }

    // Too few bytes to be anything, then the client goes away: a disconnect,
    // nothing to answer.
    let (connection, ended) = start(ServerConfig::default());
    let Connection {
        reader, mut writer, ..
    } = connection;
    writer.write_all(&[0xff, 0xff]).unwrap();
    drop(writer);
    assert!(matches!(session_end(&ended), SessionEnd::Closed));
    drop(reader);
}

#[test]
fn a_client_that_dies_mid_stream_ends_the_session() {
    // Through the real client: a producer stream is open, one tick answered,
    // then the client process "dies" (nothing is closed politely).
    let (connection, ended) = start(ServerConfig::default());
    let mut client = Client::new(connection).with_protocol("Test", "1.0.0");
    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![1_000_000]))],
    )
    .unwrap();
    let mut stream = client.stream("count", &params, false).unwrap();
    assert!(stream.tick().unwrap().is_some());
    std::mem::forget(stream); // no cancel, no end of input
    drop(client);
    assert!(matches!(session_end(&ended), SessionEnd::Closed));

    // Raw: the request and the start of the input stream, then the end of the
    // connection in the middle of a tick's message.
    let (mut connection, ended) = start(ServerConfig::default());
    let count =
        RecordBatch::try_new(params.schema(), vec![Arc::new(Int64Array::from(vec![5]))]).unwrap();
    send(
        &mut connection,
        &request(&count, &request_metadata("count"), 1),
    );
    let tick = request(
        &RecordBatch::new_empty(Arc::new(Schema::empty())),
        &BatchMetadata::new(),
        1,
    );
    send(&mut connection, &tick[..tick.len() - 12]);
    drop(connection);
    assert!(matches!(session_end(&ended), SessionEnd::Closed));
}

#[test]
fn oversized_messages_are_refused_before_allocating() {
    let limits = Limits {
        body_bytes_max: 64 << 10,
        ..Limits::DEFAULT
    };
    let config = || ServerConfig {
        limits,
        ..ServerConfig::default()
    };

    // An announced 2 GiB header, and nothing after it.
    let (connection, ended) = start(config());
    let announced = i32::MAX - 7;
    let bytes = [&[0xff, 0xff, 0xff, 0xff][..], &announced.to_le_bytes()].concat();
    let (connection, reply) = exchange("a 2 GiB header", connection, bytes);
    let error = error_of(&reply.expect("an answer")).expect("an error");
    assert!(error.message.contains("exceeds the limit"), "{error}");
    match session_end(&ended) {
        SessionEnd::Failed(ConnectionError::Wire(WireError::LimitExceeded {
            what,
            size_bytes,
            limit_bytes,
        })) => {
            assert_eq!((what, size_bytes), ("message metadata", announced as u64));
            assert_eq!(limit_bytes, Limits::DEFAULT.metadata_bytes_max as u64);
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    }
    drop(connection);

    // A real request whose batch body is larger than the limit (and within the bound a reader
    // reads past): the server reads past the body, keeping none of it, answers with the limit,
    // and the connection serves on.
    let (connection, ended) = start(config());
    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "values",
            DataType::Int64,
            false,
        )])),
        vec![Arc::new(Int64Array::from(vec![1_000_000; 20_000])) as ArrayRef], // 160 kB of body
    )
    .unwrap();
    let bytes = request(&params, &request_metadata("total"), 1);
    let (connection, reply) = exchange("an oversized request batch", connection, bytes);
    let error = error_of(&reply.expect("an answer")).expect("an error");
    assert_eq!(error.error_type, "LimitExceededError", "{error}");
    assert_eq!(error.kind.as_deref(), Some("limit_exceeded"));
    assert!(
        error.message.contains("message body of") && error.message.contains("limit of 65536 bytes"),
        "{error}"
    );
    let connection = assert_serves_add(connection, "an oversized request batch");
    drop(connection);
    assert!(matches!(session_end(&ended), SessionEnd::Closed));

    // Within the limits the same method works.
    let (connection, _ended) = start(config());
    let small = arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(
        [Some(vec![Some(1), Some(2)])],
    );
    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "values",
            small.data_type().clone(),
            false,
        )])),
        vec![Arc::new(small) as ArrayRef],
    )
    .unwrap();
    let (_connection, reply) = exchange(
        "a small total",
        connection,
        request(&params, &request_metadata("total"), 1),
    );
    let reply = reply.unwrap();
    assert!(error_of(&reply).is_none(), "{:?}", error_of(&reply));

    // No test in this binary allocates more than a few MiB at once; a server that
    // allocated an announced size before checking it would have.
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest < 16 << 20,
        "largest single allocation: {largest} bytes"
    );
}
