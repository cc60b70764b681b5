//! The HTTP transport end to end: quiver's client against quiver's server over real sockets,
//! stream tokens across two replicas sharing a key, bearer tokens, TLS, response caps.

#[allow(dead_code)] // the raw-bytes helpers; this file shares `add_method` alone
mod common;

use common::counter::{count_method, count_params, held_count_method};

use std::process::Command;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::http::{HttpConfig, HttpOptions, HttpServer, TokenKey};
use quiver_rpc::{
    field, Client, ClientStream, Method, Server, ServerConfig, Service, StreamKind, StreamOutput,
    StreamSetup, StreamState,
};
use quiver_wire::{BatchMetadata, ErrorReport};

/// Doubles every value of its input.
struct Double;

impl StreamState for Double {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        output: &mut StreamOutput,
        _: &mut quiver_rpc::CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let values = input
            .column(0)
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("float64 input");
        let doubled: Float64Array = values.iter().map(|v| v.map(|v| v * 2.0)).collect();
        output.emit(
            RecordBatch::try_new(value_schema(), vec![Arc::new(doubled)]).expect("one column"),
        );
        Ok(())
    }
}

fn value_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Float64,
        true,
    )]))
}

fn service() -> Service {
    let (count, held) = (count_method(), held_count_method());
    let double = Method::stream("double", vec![], None, |_, _| {
        Ok(StreamSetup::exchange(
            value_schema(),
            value_schema(),
            Double,
        ))
    })
    .with_stream_kind(StreamKind::Exchange);
    let big = Method::unary(
        "big",
        vec![field("rows", DataType::Int64, false)],
        Some(field("result", DataType::Int64, false)),
        |params, _| {
            Ok(Some(
                Arc::new(Int64Array::from(vec![params.i64("rows")?])) as ArrayRef
            ))
        },
    );
    Service::new("Test", "1.0.0")
        .with(common::add_method())
        .with(count)
        .with(held)
        .with(double)
        .with(big)
}

fn start(config: HttpConfig) -> HttpServer {
    let server = Arc::new(Server::new(service(), ServerConfig::default()));
    HttpServer::start(server, "127.0.0.1:0", config).expect("an HTTP server")
}

fn client(url: &str, options: HttpOptions) -> Client {
    Client::http(url, options)
        .expect("a client")
        .with_protocol("Test", "1.0.0")
}

fn one_i64(end: i64) -> RecordBatch {
    let column: ArrayRef = Arc::new(Int64Array::from(vec![end]));
    RecordBatch::try_new(Arc::new(Schema::new(count_params())), vec![column]).expect("params")
}

fn add_params(a: f64, b: f64) -> RecordBatch {
    let schema = Schema::new(vec![
        field("a", DataType::Float64, false),
        field("b", DataType::Float64, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from(vec![a])),
        Arc::new(Float64Array::from(vec![b])),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("params")
}

fn value(batch: &RecordBatch) -> i64 {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("int64")
        .value(0)
}

#[test]
fn unary_producer_and_exchange_calls_answer_exactly() {
    let server = start(HttpConfig::default());
    let mut client = client(&server.url(false), HttpOptions::default());
    let sum = client.call("add", &add_params(1.5, 2.25)).unwrap().unwrap();
    let sum = sum
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(sum.value(0), 3.75);

    let mut stream = client.stream("count", &one_i64(4), false).unwrap();
    let mut seen = Vec::new();
    while let Some(batch) = stream.tick().unwrap() {
        seen.push(value(&batch));
    }
    assert_eq!(seen, [0, 1, 2, 3]);
    drop(stream);

    let mut stream = client
        .stream(
            "double",
            &RecordBatch::new_empty(Arc::new(Schema::empty())),
            false,
        )
        .unwrap();
    for input in [vec![Some(1.0), None], vec![Some(-2.5)]] {
        let batch = RecordBatch::try_new(
            value_schema(),
            vec![Arc::new(Float64Array::from(input.clone()))],
        )
        .unwrap();
        let out = stream.exchange(&batch).unwrap().unwrap();
        let out = out
            .column(0)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        let expected: Vec<Option<f64>> = input.iter().map(|v| v.map(|v| v * 2.0)).collect();
        assert_eq!(out.iter().collect::<Vec<_>>(), expected);
    }
    stream.cancel().unwrap();
    // The connection serves the next call after a cancel.
    assert!(client.call("add", &add_params(1.0, 1.0)).unwrap().is_some());
}

/// Two replicas sharing a key behind a client that alternates between them, as a round-robin
/// load balancer without stickiness does: a carried state continues on either; a held one is
/// refused by the other replica, which names the holder. The client's smallest cap cuts the
/// streams into many turns of many batches.
#[test]
fn a_carried_stream_continues_on_another_replica_and_a_held_one_names_its_holder() {
    let key = TokenKey::from_hex(&"5a".repeat(32)).unwrap();
    let config = HttpConfig {
        token_key: key,
        ..HttpConfig::default()
    };
    let (a, b) = (start(config.clone()), start(config));
    let small = HttpOptions {
        accept_max_response_bytes: Some(quiver_rpc::http::RESPONSE_BYTES_MIN),
        ..HttpOptions::default()
    };
    let pair = || {
        let on_a = client(&a.url(false), small.clone());
        let on_b = client(&b.url(false), small.clone());
        Switch::new(vec![on_a, on_b])
    };
    let end = 3000;
    // A fresh call, its turns alternating between the replicas.
    let mut turns = Vec::new();
    let mut call = ClientStream::open(pair(), "count", &one_i64(end), false)
        .map_err(|(e, _)| e)
        .unwrap();
    loop {
        call_switch(&mut call);
        match call.tick().unwrap() {
            Some(batch) => turns.push(value(&batch)),
            None => break,
        }
    }
    assert_eq!(turns, (0..end).collect::<Vec<_>>());
    assert!(call.release().served_by_both());

    let mut held = ClientStream::open(pair(), "held_count", &one_i64(end), false)
        .map_err(|(e, _)| e)
        .unwrap();
    let mut taken = 0;
    let refused = loop {
        call_switch(&mut held);
        match held.tick() {
            Ok(Some(batch)) => {
                assert_eq!(value(&batch), taken);
                taken += 1;
            }
            Ok(None) => panic!("the held stream ended on one replica"),
            Err(refused) => break refused,
        }
    };
    assert!(
        taken > 1 && taken < end,
        "the first turn's {taken} batches came first"
    );
    let message = refused
        .remote()
        .expect("the replica's refusal")
        .message
        .clone();
    assert!(message.contains("held by replica"), "{message}");
}

/// Clients taking turns: the call's next request goes through the next one.
struct Switch {
    clients: Vec<Client>,
    at: usize,
    used: Vec<bool>,
}

impl Switch {
    fn new(clients: Vec<Client>) -> Switch {
        let used = vec![false; clients.len()];
        Switch {
            clients,
            at: 0,
            used,
        }
    }

    fn served_by_both(&self) -> bool {
        self.used.iter().all(|used| *used)
    }
}

impl AsMut<Client> for Switch {
    fn as_mut(&mut self) -> &mut Client {
        self.used[self.at] = true;
        &mut self.clients[self.at]
    }
}

fn call_switch(call: &mut ClientStream<Switch>) {
    let switch = call.holder_mut();
    switch.at = (switch.at + 1) % switch.clients.len();
}

#[test]
fn a_bearer_token_is_required_and_checked() {
    let server = start(HttpConfig {
        bearer: Some(quiver_secret::Secret::new("s3cret")),
        ..HttpConfig::default()
    });
    let mut anonymous = client(&server.url(false), HttpOptions::default());
    let refused = anonymous.call("add", &add_params(1.0, 2.0)).unwrap_err();
    assert!(refused.to_string().contains("HTTP 401"), "{refused}");
    let wrong = HttpOptions {
        bearer: Some("guess".into()),
        ..HttpOptions::default()
    };
    assert!(client(&server.url(false), wrong)
        .call("add", &add_params(1.0, 2.0))
        .is_err());
    let right = HttpOptions {
        bearer: Some("s3cret".into()),
        ..HttpOptions::default()
    };
    let sum = client(&server.url(false), right)
        .call("add", &add_params(1.0, 2.0))
        .unwrap()
        .unwrap();
    assert_eq!(
        sum.column(0)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(0),
        3.0
    );
}

#[test]
fn tls_serves_a_client_that_trusts_the_certificate() {
    let dir = std::env::temp_dir().join(format!("quiver-http-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, ca_key) = (dir.join("ca.pem"), dir.join("ca.key"));
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
    ];
    openssl(
        &[&["req", "-x509"], &ec[..], &["-subj", "/CN=quiver test CA"]].concat(),
        &[("-keyout", &ca_key), ("-out", &ca)],
    );
    let leaf = [
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
    ];
    openssl(
        &[&["req", "-x509"], &ec[..], &leaf[..]].concat(),
        &[
            ("-CA", &ca),
            ("-CAkey", &ca_key),
            ("-keyout", &key),
            ("-out", &cert),
        ],
    );
    let server = start(HttpConfig {
        tls: Some((cert.clone(), key.clone())),
        ..HttpConfig::default()
    });
    let url = format!("https://localhost:{}", server.address().port());
    let trusting = HttpOptions {
        ca_file: Some(ca.clone()),
        ..HttpOptions::default()
    };
    let sum = client(&url, trusting)
        .call("add", &add_params(2.0, 3.0))
        .unwrap()
        .unwrap();
    assert_eq!(
        sum.column(0)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(0),
        5.0
    );
    // A client without the certificate among its roots refuses the server.
    assert!(client(&url, HttpOptions::default())
        .call("add", &add_params(2.0, 3.0))
        .is_err());
    // Plain HTTP to the TLS port is not served.
    let plain = format!("http://127.0.0.1:{}", server.address().port());
    assert!(client(&plain, HttpOptions::default())
        .call("add", &add_params(2.0, 3.0))
        .is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compressed_responses_decode_to_the_same_answers() {
    let server = start(HttpConfig::default());
    let zipped = HttpOptions {
        compression: true,
        ..HttpOptions::default()
    };
    let mut client = client(&server.url(false), zipped);
    let mut stream = client.stream("count", &one_i64(3), false).unwrap();
    let mut seen = Vec::new();
    while let Some(batch) = stream.tick().unwrap() {
        seen.push(value(&batch));
    }
    assert_eq!(seen, [0, 1, 2]);
}

/// Runs `openssl` with `args` and the `(flag, path)` pairs; it must succeed.
fn openssl(args: &[&str], paths: &[(&str, &std::path::PathBuf)]) {
    let mut command = Command::new("openssl");
    command.args(args);
    for (flag, path) in paths {
        command.arg(flag).arg(path);
    }
    let made = command.output().expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
}

/// One request over a fresh connection; the status line and the headers of the answer,
/// lower-cased.
fn raw_request(server: &HttpServer, verb: &str, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(server.address()).expect("a connection");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{verb} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head.as_str(), ""));
    (status.to_string(), headers.to_string())
}

#[test]
fn health_and_options_answer_each_verb() {
    let server = start(HttpConfig::default());
    let (status, headers) = raw_request(&server, "GET", "/health");
    assert_eq!(status, "http/1.1 200 ok");
    assert!(
        headers.contains("content-type: application/json"),
        "{headers}"
    );
    let (status, _) = raw_request(&server, "OPTIONS", "/health");
    assert_eq!(status, "http/1.1 200 ok");
    let (status, headers) = raw_request(&server, "DELETE", "/health");
    assert_eq!(status, "http/1.1 405 method not allowed");
    assert!(headers.contains("allow: get, head, options"), "{headers}");
    let (status, headers) = raw_request(&server, "OPTIONS", "/Test/add");
    assert_eq!(status, "http/1.1 204 no content");
    assert!(headers.contains("allow: post, options"), "{headers}");
}
