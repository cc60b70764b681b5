//! `quiver-client-driver` end to end against our own conformance worker: the
//! control protocol's ops, the structured error, the refusals. vgi-rpc's suite
//! runs the same driver against its reference worker (tests/vgi_rpc_suite).

// The driver's own codec, so a request is encoded here exactly as the driver decodes it; the
// error and log shapes in the same file are checked through the driver's answers instead.
#[allow(dead_code)]
#[path = "../src/bin/quiver-client-driver/relay.rs"]
mod relay;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_conformance::{PROTOCOL_NAME, PROTOCOL_VERSION};
use quiver_wire::{keys, BatchMetadata};
use serde_json::{json, Value};

struct Driver {
    process: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Driver {
    fn connected() -> Driver {
        let mut process = Command::new(env!("CARGO_BIN_EXE_quiver-client-driver"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the driver");
        let input = process.stdin.take().unwrap();
        let output = BufReader::new(process.stdout.take().unwrap());
        let mut driver = Driver {
            process,
            input,
            output,
        };
        let worker = env!("CARGO_BIN_EXE_quiver-conformance-worker");
        let connected = driver.ask(json!({
            "op": "connect", "transport": "stdio", "target": [worker], "protocol": PROTOCOL_NAME,
        }));
        assert_eq!(connected["ok"], true, "{connected}");
        driver
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.input, "{request}").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the driver closed its control channel");
        serde_json::from_str(&line).unwrap()
    }

    fn shutdown(mut self) {
        assert_eq!(self.ask(json!({"op": "shutdown"})), json!({"ok": true}));
        assert!(self.process.wait().unwrap().success());
    }
}

/// A request batch as vgi-rpc's harness encodes one, base64.
fn request(method: &str, params: Option<(&str, Arc<dyn arrow_array::Array>)>) -> String {
    let batch = match params {
        Some((name, array)) => {
            let field = Field::new(name, array.data_type().clone(), false);
            RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![array]).unwrap()
        }
        None => RecordBatch::new_empty(Arc::new(Schema::empty())),
    };
    let metadata = BatchMetadata::from_pairs([
        (keys::METHOD, method),
        (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        (keys::PROTOCOL, PROTOCOL_NAME),
        (keys::PROTOCOL_VERSION, PROTOCOL_VERSION),
    ]);
    relay::encode_batch(&batch, &metadata).unwrap()
}

fn text(value: &str) -> Option<(&'static str, Arc<dyn arrow_array::Array>)> {
    Some(("value", Arc::new(StringArray::from(vec![value]))))
}

fn decoded(answer: &Value, field: &str) -> RecordBatch {
    relay::decode_batch(answer[field].as_str().expect("a batch"))
        .unwrap()
        .0
}

#[test]
fn unary_results_and_errors_are_relayed() {
    let mut driver = Driver::connected();
    let answer =
        driver.ask(json!({"op": "unary", "request_b64": request("echo_string", text("hi"))}));
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(
        decoded(&answer, "result_b64")
            .column(0)
            .as_string::<i32>()
            .value(0),
        "hi"
    );

    let params = Some(("message", Arc::new(StringArray::from(vec!["boom"])) as _));
    let failed =
        driver.ask(json!({"op": "unary", "request_b64": request("raise_value_error", params)}));
    assert_eq!(
        failed["ok"], true,
        "a call's failure is not the driver's: {failed}"
    );
    assert_eq!(failed["result_b64"], Value::Null);
    let error = &failed["error"];
    assert_eq!(error["error_type"], "ValueError");
    assert!(error["error_message"].as_str().unwrap().contains("boom"));
    assert!(error["traceback"].is_string() && error["error_details"].is_array());
    driver.shutdown();
}

#[test]
fn a_producer_runs_to_its_end_and_the_connection_serves_on() {
    let mut driver = Driver::connected();
    let count = Some(("count", Arc::new(Int64Array::from(vec![2])) as _));
    let opened = driver.ask(json!({
        "op": "stream_open", "request_b64": request("produce_with_header", count),
        "is_exchange": false, "has_header": true,
    }));
    assert_eq!(opened["ok"], true, "{opened}");
    assert_eq!(decoded(&opened, "header_b64").num_rows(), 1);
    let items: Vec<Value> = (0..3).map(|_| driver.ask(json!({"op": "tick"}))).collect();
    let done: Vec<&Value> = items.iter().map(|item| &item["done"]).collect();
    assert_eq!(
        done,
        [&json!(false), &json!(false), &json!(true)],
        "{items:?}"
    );
    let token =
        driver.ask(json!({"op": "unary", "request_b64": request("echo_string", text("again"))}));
    assert_eq!(token["ok"], true, "{token}");
    driver.shutdown();
}

#[test]
fn describe_walks_reflection() {
    let mut driver = Driver::connected();
    let answer = driver.ask(json!({"op": "describe"}));
    assert_eq!(answer["ok"], true, "{answer}");
    let described = &answer["describe"];
    assert_eq!(described["protocol_name"], PROTOCOL_NAME);
    assert_eq!(described["protocol_version"], PROTOCOL_VERSION);
    let methods = described["methods"].as_array().unwrap();
    let header = methods
        .iter()
        .find(|m| m["name"] == "produce_with_header")
        .unwrap();
    assert_eq!(
        (&header["has_header"], &header["is_exchange"]),
        (&json!(true), &json!(false))
    );
    driver.shutdown();
}

#[test]
fn what_the_driver_cannot_do_is_refused_not_guessed() {
    let mut driver = Driver::connected();
    let http = driver.ask(json!({"op": "session_begin", "token": null}));
    assert_eq!(
        http,
        json!({"ok": false, "error": "op requires http transport"})
    );
    assert_eq!(driver.ask(json!({"op": "no_such_op"}))["ok"], false);
    assert_eq!(
        driver.ask(json!({"op": "tick"}))["ok"],
        false,
        "no stream is open"
    );
    assert_eq!(
        driver.ask(json!({"op": "close"}))["ok"],
        true,
        "a close with no stream is a no-op"
    );
    let batch = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let unnamed = relay::encode_batch(&batch, &BatchMetadata::new()).unwrap();
    let refused = driver.ask(json!({"op": "unary", "request_b64": unnamed}));
    assert_eq!(refused["ok"], false);
    assert!(
        refused["error"].as_str().unwrap().contains(keys::METHOD),
        "{refused}"
    );
    driver.shutdown();
}

#[test]
fn an_unknown_transport_is_refused_at_connect() {
    let mut process = Command::new(env!("CARGO_BIN_EXE_quiver-client-driver"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = process.stdin.take().unwrap();
    let mut output = BufReader::new(process.stdout.take().unwrap());
    let request =
        json!({"op": "connect", "transport": "carrier-pigeon", "target": "x", "protocol": "P"});
    writeln!(input, "{request}").unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["ok"], false);
    assert!(answer.to_string().contains("unknown transport"), "{answer}");
    drop(input); // EOF on stdin is a shutdown
    assert!(process.wait().unwrap().success());
}

#[test]
fn batches_of_any_type_cross_the_relay_unchanged() {
    // The relay keeps batches opaque: a batch of any type crosses unchanged.
    let schema = Arc::new(Schema::new(vec![Field::new("d", DataType::Date32, true)]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(arrow_array::Date32Array::from(vec![
            Some(1),
            None,
        ]))],
    )
    .unwrap();
    let metadata = BatchMetadata::from_pairs([("k", "v")]);
    let (back, back_metadata) =
        relay::decode_batch(&relay::encode_batch(&batch, &metadata).unwrap()).unwrap();
    assert_eq!(back, batch);
    assert_eq!(back_metadata.get("k"), Some("v"));
}
