//! The call and stream ops: each reads its batch from the request, makes one call
//! on quiver's client, and answers with the reply batch, the logs the call
//! brought, and the client's error when the call failed (`ok: true` either way:
//! `ok` is about the driver, `error` about the call).

use arrow_array::RecordBatch;
use quiver_rpc::{ClientError, ClientStream};
use quiver_wire::{keys, BatchMetadata};
use serde_json::{json, Value};

use crate::connection::DriverConnection;
use crate::relay::{decode_batch, encode_batch, error_object};

/// A request batch and the method its metadata names (never defaulted).
fn request_batch(request: &Value) -> Result<(String, RecordBatch, BatchMetadata), String> {
    let text = request["request_b64"]
        .as_str()
        .ok_or("request_b64 is missing")?;
    let (batch, metadata) = decode_batch(text)?;
    let method = metadata
        .get(keys::METHOD)
        .ok_or_else(|| format!("the request batch has no {} metadata", keys::METHOD))?
        .to_string();
    Ok((method, batch, metadata))
}

pub fn unary(connection: &mut DriverConnection, request: &Value) -> Result<Value, String> {
    let (method, params, metadata) = request_batch(request)?;
    let reply = connection
        .client()?
        .call_with_metadata(&method, &params, metadata);
    Ok(match reply {
        Ok(Some((batch, metadata))) => json!({"result_b64": encode_batch(&batch, &metadata)?}),
        Ok(None) => json!({"result_b64": null}),
        Err(error) => json!({"result_b64": null, "error": error_object(&error)}),
    })
}

pub fn stream_open(connection: &mut DriverConnection, request: &Value) -> Result<Value, String> {
    let (method, params, metadata) = request_batch(request)?;
    let has_header = request["has_header"].as_bool().unwrap_or(false);
    let client = connection.take_client()?;
    match ClientStream::open_with_metadata(client, &method, &params, metadata, has_header) {
        Ok(stream) => {
            let header = match stream.header() {
                Some(header) => Value::String(encode_batch(header, &BatchMetadata::new())?),
                None => Value::Null,
            };
            connection.stream_opened(stream);
            Ok(json!({"header_b64": header}))
        }
        Err((error, client)) => {
            connection.give_back(client);
            Ok(json!({"header_b64": null, "error": error_object(&error)}))
        }
    }
}

/// `tick` and `next_with_token` (a byte stream carries no resume token); `tick` may
/// carry per-tick metadata as an empty batch's.
pub fn tick(connection: &mut DriverConnection, request: &Value) -> Result<Value, String> {
    let metadata = match request["input_b64"].as_str() {
        Some(text) => decode_batch(text)?.1,
        None => BatchMetadata::new(),
    };
    let stream = connection.stream().ok_or("no stream is open")?;
    let next = stream.tick_with_metadata(metadata);
    let mut answer = stream_answer(connection, next)?;
    if request["op"] == "next_with_token" {
        answer["token"] = Value::Null;
    }
    Ok(answer)
}

pub fn exchange(connection: &mut DriverConnection, request: &Value) -> Result<Value, String> {
    let text = request["input_b64"]
        .as_str()
        .ok_or("input_b64 is missing")?;
    let (batch, metadata) = decode_batch(text)?;
    let stream = connection.stream().ok_or("no stream is open")?;
    let next = stream.exchange_with_metadata(&batch, metadata);
    stream_answer(connection, next)
}

/// One stream item as an answer; the end of the stream or an error gives the client back.
fn stream_answer(
    connection: &mut DriverConnection,
    next: Result<Option<(RecordBatch, BatchMetadata)>, ClientError>,
) -> Result<Value, String> {
    match next {
        Ok(Some((batch, metadata))) => {
            Ok(json!({"done": false, "batch_b64": encode_batch(&batch, &metadata)?}))
        }
        Ok(None) => {
            connection.end_stream(ClientStream::release);
            Ok(json!({"done": true, "batch_b64": null}))
        }
        Err(error) => {
            connection.end_stream(ClientStream::release);
            Ok(json!({"done": true, "batch_b64": null, "error": error_object(&error)}))
        }
    }
}

/// `cancel`: the server stops and the connection is back in step; a no-op with no stream.
pub fn cancel(connection: &mut DriverConnection) -> Value {
    let mut failure = None;
    connection.end_stream(|stream| {
        let (client, result) = stream.cancel_and_release();
        failure = result.err();
        client
    });
    match failure {
        Some(error) => json!({"error": error_object(&error)}),
        None => json!({}),
    }
}

/// `close`: ends the input and reads the server's end; a no-op with no stream.
pub fn close(connection: &mut DriverConnection) -> Value {
    let mut failure = None;
    connection.end_stream(|stream| {
        let (client, result) = stream.close_and_release();
        failure = result.err();
        client
    });
    match failure {
        Some(error) => json!({"error": error_object(&error)}),
        None => json!({}),
    }
}

/// `capabilities`: what the server advertises on `OPTIONS /health` (HTTP only).
pub fn capabilities(connection: &mut DriverConnection) -> Result<Value, String> {
    let reply = match connection.client()?.http_request("OPTIONS", "/health") {
        None => return Err("op requires http transport".into()),
        Some(Err(error)) => return Ok(json!({"caps": null, "error": error_object(&error)})),
        Some(Ok(reply)) => reply,
    };
    if !(200..300).contains(&reply.status) {
        let error = ClientError::Protocol(format!(
            "capability discovery failed with HTTP {}",
            reply.status
        ));
        return Ok(json!({"caps": null, "error": error_object(&error)}));
    }
    let int = |name: &str| {
        reply
            .header(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let flag = |name: &str| reply.header(name) == Some("true");
    let list = |name: &str| -> Vec<String> {
        reply
            .header(name)
            .unwrap_or("")
            .split(',')
            .map(|part| part.trim().to_ascii_lowercase())
            .filter(|part| !part.is_empty())
            .collect()
    };
    let encodings = match reply.header("vgi-supported-encodings") {
        None => vec!["zstd".to_string()],
        Some(_) => list("vgi-supported-encodings"),
    };
    Ok(json!({"caps": {
        "sticky_enabled": flag("vgi-sticky-enabled"),
        "sticky_default_ttl": int("vgi-sticky-default-ttl"),
        "sticky_echo_headers": list("vgi-sticky-echo-headers"),
        "upload_url_support": flag("vgi-upload-url-support"),
        "max_request_bytes": int("vgi-max-request-bytes"),
        "max_response_bytes": int("vgi-max-response-bytes"),
        "max_externalized_response_bytes": int("vgi-max-externalized-response-bytes"),
        "externalization_enabled": flag("vgi-externalization-enabled"),
        "max_upload_bytes": int("vgi-max-upload-bytes"),
        "supported_encodings": encodings,
    }}))
}
