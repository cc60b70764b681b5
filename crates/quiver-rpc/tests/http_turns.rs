//! Producer turns over HTTP: for a client that asks for them, a turn answers many batches in one
//! response, the response cap (the server's or the client's) cuts a turn and the cursor resumes
//! it exactly, a finishing stream's last response carries no cursor, a failing step keeps the
//! batches before it, and a slow producer's turn ends on time; a client that does not ask gets
//! vgi-rpc's lockstep, one batch a turn. Raw requests through [`HttpPeer`] see the responses themselves;
//! quiver's client sees the same stream through its stream call.

#[allow(dead_code)] // the raw-bytes reply reader; this file builds requests alone
mod common;

use common::counter::{count_method, count_params, count_schema, counter, held_count_method, Held};

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Schema};
use quiver_rpc::http::{
    HttpConfig, HttpOptions, HttpPeer, HttpServer, RESPONSE_BYTES_MIN, RPC_ERROR_HEADER,
};
use quiver_rpc::{field, Client, Method, Server, ServerConfig, Service, StreamKind, StreamSetup};
use quiver_wire::{decode_stream, keys, BatchMetadata, Limits, StreamWriter};

fn service() -> Service {
    let params = count_params;
    let (count, held) = (count_method(), held_count_method());
    let failing = Method::stream("fail_at", params(), None, |params, _| {
        let mut state = counter(i64::MAX);
        state.fail_at = Some(params.i64("end")?);
        Ok(StreamSetup::producer(count_schema(), Held(state)))
    })
    .with_stream_kind(StreamKind::Producer);
    let slow = Method::stream("slow_count", params(), None, |params, _| {
        let mut state = counter(params.i64("end")?);
        state.pause = Duration::from_millis(40);
        Ok(StreamSetup::producer(count_schema(), Held(state)))
    })
    .with_stream_kind(StreamKind::Producer);
    Service::new("Test", "1.0.0")
        .with(count)
        .with(held)
        .with(failing)
        .with(slow)
}

fn start(config: HttpConfig) -> HttpServer {
    let server = Arc::new(Server::new(service(), ServerConfig::default()));
    HttpServer::start(server, "127.0.0.1:0", config).expect("an HTTP server")
}

fn end_param(end: i64) -> RecordBatch {
    let schema = Schema::new(vec![field("end", DataType::Int64, false)]);
    let column: ArrayRef = Arc::new(Int64Array::from(vec![end]));
    RecordBatch::try_new(Arc::new(schema), vec![column]).expect("params")
}

/// One request body: a stream of `batch` with `metadata`.
fn body(batch: &RecordBatch, metadata: &BatchMetadata) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = StreamWriter::begin(batch.schema_ref(), &mut out).expect("a stream");
    writer.write(batch, metadata, &mut out).expect("a batch");
    writer.finish(&mut out);
    out
}

/// One response as the tests read it.
struct Response {
    values: Vec<i64>,
    cursor: Option<String>,
    call: Option<String>,
    error: Option<String>,
    flagged: bool,
    bytes: usize,
    /// The largest data batch's share of the body (its message and padding).
    batch_bytes: usize,
}

fn read(reply: quiver_rpc::http::HttpReply) -> Response {
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let flagged = reply.header(&RPC_ERROR_HEADER.to_ascii_lowercase()) == Some("true");
    let bytes = reply.body.len();
    let (_, batches) = decode_stream(Buffer::from_vec(reply.body), Limits::DEFAULT).expect("IPC");
    let mut response = Response {
        values: Vec::new(),
        cursor: None,
        call: None,
        error: None,
        flagged,
        bytes,
        batch_bytes: 0,
    };
    for (batch, metadata) in batches {
        if let Some(message) = metadata.get(keys::LOG_MESSAGE) {
            response.error = Some(message.to_string());
            continue;
        }
        if let Some(cursor) = metadata.get(keys::STREAM_STATE) {
            assert_eq!(
                batch.num_rows(),
                0,
                "a producer's cursor rides a zero-row batch"
            );
            response.cursor = Some(cursor.to_string());
            response.call = metadata.get(keys::CALL_STATE).map(str::to_string);
            continue;
        }
        let column = batch.column(0).as_any().downcast_ref::<Int64Array>();
        response
            .values
            .extend(column.expect("int64").values().iter());
        response.batch_bytes = response.batch_bytes.max(batch.get_array_memory_size());
    }
    response
}

fn init(peer: &mut HttpPeer, method: &str, end: i64) -> Response {
    let request = body(&end_param(end), &common::request_metadata(method));
    read(
        peer.post(&format!("/Test/{method}/init"), request)
            .expect("a response"),
    )
}

fn exchange(peer: &mut HttpPeer, method: &str, cursor: &str, call: &str) -> Response {
    let tokens =
        BatchMetadata::from_pairs([(keys::STREAM_STATE, cursor), (keys::CALL_STATE, call)]);
    let tick = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let request = body(&tick, &tokens);
    read(
        peer.post(&format!("/Test/{method}/exchange"), request)
            .expect("a response"),
    )
}

/// Runs `method(end)` turn by turn to its end: every response, in order.
fn run(peer: &mut HttpPeer, method: &str, end: i64) -> Vec<Response> {
    let first = init(peer, method, end);
    let call = first.call.clone();
    let mut responses = vec![first];
    while let Some(cursor) = responses.last().and_then(|r| r.cursor.clone()) {
        let call = call.as_deref().expect("the call token came with /init");
        responses.push(exchange(peer, method, &cursor, call));
        assert!(responses.len() < 10_000, "the stream does not end");
    }
    responses
}

fn peer(server: &HttpServer, accept: Option<u64>) -> HttpPeer {
    let options = HttpOptions {
        accept_max_response_bytes: accept,
        many_batch_turns: true,
        response_timeout: Duration::from_secs(120),
        ..HttpOptions::default()
    };
    HttpPeer::new(&server.url(false), options).expect("a peer")
}

#[test]
fn a_producer_turn_answers_many_batches_in_one_response_and_a_finished_one_no_cursor() {
    let server = start(HttpConfig::default());
    for method in ["count", "held_count"] {
        let responses = run(&mut peer(&server, None), method, 1000);
        assert_eq!(
            responses.len(),
            1,
            "{method}: one /init answers the whole stream"
        );
        assert_eq!(responses[0].values, (0..1000).collect::<Vec<_>>());
        assert!(
            responses[0].cursor.is_none(),
            "a finished stream hands no cursor"
        );
        assert!(responses[0].error.is_none() && !responses[0].flagged);
    }
}

#[test]
fn a_client_that_does_not_ask_gets_one_batch_a_turn() {
    let server = start(HttpConfig::default());
    let options = HttpOptions {
        many_batch_turns: false,
        ..HttpOptions::default()
    };
    for method in ["count", "held_count"] {
        let mut peer = HttpPeer::new(&server.url(false), options.clone()).expect("a peer");
        let responses = run(&mut peer, method, 5);
        let values: Vec<Vec<i64>> = responses.iter().map(|r| r.values.clone()).collect();
        // The last turn's step finishes without a batch.
        assert_eq!(
            values,
            [vec![0], vec![1], vec![2], vec![3], vec![4], vec![]]
        );
    }
}

#[test]
fn the_cap_cuts_a_turn_and_the_cursor_resumes_it_exactly() {
    let end = 6000;
    let capped = start(HttpConfig {
        max_response_bytes: Some(RESPONSE_BYTES_MIN),
        ..HttpConfig::default()
    });
    let open = start(HttpConfig::default());
    // The server's own cap, and the client's cap on a server without one.
    let cases = [(&capped, None), (&open, Some(RESPONSE_BYTES_MIN))];
    for (server, accept) in cases {
        for method in ["count", "held_count"] {
            let responses = run(&mut peer(server, accept), method, end);
            let values: Vec<i64> = responses.iter().flat_map(|r| r.values.clone()).collect();
            assert_eq!(
                values,
                (0..end).collect::<Vec<_>>(),
                "{method}: every row once"
            );
            assert!(
                responses.len() >= 3,
                "{method}: the cap cut the stream into turns"
            );
            let (last, cut) = responses.split_last().expect("responses");
            assert!(last.cursor.is_none());
            for response in cut {
                assert!(response.values.len() > 1, "a cut turn carries many batches");
                assert!(response.cursor.is_some());
                // Past the cap by its last batch and the cursor's batch at most.
                let slack = 4 * response.batch_bytes + 4096;
                assert!(
                    response.bytes as u64 <= RESPONSE_BYTES_MIN + slack as u64,
                    "{method}: a {} byte turn",
                    response.bytes
                );
            }
        }
    }
}

#[test]
fn quivers_client_reads_a_stream_of_many_batch_turns_exactly() {
    let server = start(HttpConfig {
        max_response_bytes: Some(RESPONSE_BYTES_MIN),
        ..HttpConfig::default()
    });
    let end = 5000;
    for method in ["count", "held_count"] {
        let mut client = Client::http(&server.url(false), HttpOptions::default())
            .expect("a client")
            .with_protocol("Test", "1.0.0");
        let mut stream = client.stream(method, &end_param(end), false).unwrap();
        let mut seen: Vec<i64> = Vec::new();
        while let Some(batch) = stream.tick().unwrap() {
            let column = batch.column(0).as_any().downcast_ref::<Int64Array>();
            seen.extend(column.expect("int64").values().iter());
        }
        assert_eq!(seen, (0..end).collect::<Vec<_>>(), "{method}");
    }
}

#[test]
fn a_failing_step_keeps_the_batches_before_it() {
    let server = start(HttpConfig::default());
    let responses = run(&mut peer(&server, None), "fail_at", 50);
    assert_eq!(responses.len(), 1);
    let response = &responses[0];
    assert_eq!(response.values, (0..50).collect::<Vec<_>>());
    assert!(response.cursor.is_none(), "a failed stream ends");
    assert!(response.flagged, "the response carries {RPC_ERROR_HEADER}");
    assert!(response
        .error
        .as_deref()
        .is_some_and(|m| m.contains("no 50")));

    let mut client = Client::http(&server.url(false), HttpOptions::default())
        .expect("a client")
        .with_protocol("Test", "1.0.0");
    let mut stream = client.stream("fail_at", &end_param(50), false).unwrap();
    let mut seen = 0;
    let error = loop {
        match stream.tick() {
            Ok(Some(_)) => seen += 1,
            Ok(None) => panic!("the stream ended without its error"),
            Err(error) => break error,
        }
    };
    assert_eq!(seen, 50);
    assert!(error
        .remote()
        .expect("the step's error")
        .message
        .contains("no 50"));
}

#[test]
fn a_slow_producers_turn_ends_on_time_with_its_rows() {
    let server = start(HttpConfig::default());
    // 40 ms a step: filling the default budget with one-row batches would take hours, so only
    // the turn's time ends the first turn.
    let mut peer = peer(&server, None);
    let first = init(&mut peer, "slow_count", i64::MAX);
    assert!(!first.values.is_empty(), "the turn hands over its rows");
    assert!(first.cursor.is_some(), "and the stream goes on");
    let call = first.call.expect("the call token");
    let second = exchange(&mut peer, "slow_count", &first.cursor.unwrap(), &call);
    assert_eq!(
        second.values.first(),
        Some(&(*first.values.last().unwrap() + 1))
    );
    assert!(second.cursor.is_some());
}
