//! quiver's Rust client behind vgi-rpc's client-driver control protocol: the
//! harness (`vgi_rpc.conformance.client_driver`) writes one JSON request per line
//! on stdin, this answers one JSON line per request on stdout, and every RPC is
//! made by `quiver_rpc::Client` on the one connection `connect` opened. The suite
//! in `tests/vgi_rpc_suite/` runs vgi-rpc's tests through it against the reference
//! worker.
//!
//! Transports: `stdio`, `shm`, `unix`, `tcp` and `http`; of the HTTP-only ops only
//! `capabilities` is served (no upload URLs or sticky sessions: the others answer
//! `ok: false` with the reason). EOF on stdin is a shutdown.

mod connection;
mod describe;
mod ops;
mod relay;

use std::io::{BufRead, Write};

use serde_json::{json, Value};

use connection::DriverConnection;

/// The longest control line accepted: requests carry base64 batches, and the suite's
/// largest payloads are tens of MiB.
const LINE_BYTES_MAX: usize = 256 << 20;

const HTTP_ONLY: [&str; 6] = [
    "request_upload_urls",
    "session_begin",
    "session_token",
    "session_echo_headers",
    "session_detach",
    "session_end",
];

fn main() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout().lock();
    let mut connection: Option<DriverConnection> = None;
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > LINE_BYTES_MAX {
            answer(
                &mut output,
                json!({"ok": false, "error": "control line too long"}),
            );
            continue;
        }
        let request: Value = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(e) => {
                answer(
                    &mut output,
                    json!({"ok": false, "error": format!("bad control line: {e}")}),
                );
                continue;
            }
        };
        if request["op"] == "shutdown" {
            if let Some(open) = connection.take() {
                open.shut();
            }
            answer(&mut output, json!({"ok": true}));
            return;
        }
        let reply = handle(&mut connection, &request);
        answer(&mut output, reply);
    }
    if let Some(open) = connection.take() {
        open.shut();
    }
}

fn handle(connection: &mut Option<DriverConnection>, request: &Value) -> Value {
    let op = request["op"].as_str().unwrap_or("");
    if op == "connect" {
        if connection.is_some() {
            return json!({"ok": false, "error": "connect arrives once per driver"});
        }
        return match DriverConnection::open(request) {
            Ok(open) => {
                *connection = Some(open);
                json!({"ok": true})
            }
            Err(error) => json!({"ok": false, "error": error}),
        };
    }
    if HTTP_ONLY.contains(&op) {
        return json!({"ok": false, "error": "op requires http transport"});
    }
    let Some(open) = connection.as_mut() else {
        return json!({"ok": false, "error": format!("{op}: no connection (connect first)")});
    };
    let result = match op {
        "unary" => ops::unary(open, request),
        "stream_open" => ops::stream_open(open, request),
        "tick" | "next_with_token" => ops::tick(open, request),
        "exchange" => ops::exchange(open, request),
        "cancel" => Ok(ops::cancel(open)),
        "capabilities" => ops::capabilities(open),
        "close" => Ok(ops::close(open)),
        "describe" => open.client().and_then(describe::describe).map(|d| match d {
            Ok(description) => json!({"describe": description}),
            Err(error) => json!({"error": error}),
        }),
        other => Err(format!("unknown op {other:?}")),
    };
    let mut reply = match result {
        Ok(reply) => reply,
        Err(error) => {
            return json!({"ok": false, "error": error, "logs": relay::logs_array(open.take_logs())})
        }
    };
    reply["ok"] = json!(true);
    reply["logs"] = relay::logs_array(open.take_logs());
    reply
}

/// Writes one response line and flushes it: the harness reads in lockstep.
fn answer(output: &mut impl Write, reply: Value) {
    let mut text = reply.to_string();
    text.push('\n');
    // A harness that has gone away cannot be answered; the next read sees EOF.
    let _ = output
        .write_all(text.as_bytes())
        .and_then(|()| output.flush());
}
