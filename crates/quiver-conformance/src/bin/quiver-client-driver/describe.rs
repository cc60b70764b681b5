//! `describe`: two calls on `vgi_rpc.Reflection.v1` through quiver's client
//! (`list_protocols`, then `describe` of the first hosted protocol that is not the
//! framework's own), decoded into the JSON description the harness rebuilds.
//! The decoding mirrors the encoding in `crates/quiver-rpc/src/reflection.rs`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, StructArray};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::reflection::REFLECTION_PROTOCOL;
use quiver_rpc::Client;
use quiver_wire::{decode_stream, keys, BatchMetadata, Limits};
use serde_json::{json, Value};

use crate::relay::{base64_encode, error_object};

/// The introspection format version vgi-rpc's `DESCRIBE_VERSION` names.
const DESCRIBE_VERSION: &str = "5";

/// The description, or the call's error object (`Err(Ok(error))`), or a driver failure.
pub fn describe(client: &mut Client) -> Result<Result<Value, Value>, String> {
    let listing = match reflect(client, "list_protocols", None)? {
        Ok(batch) => batch,
        Err(error) => return Ok(Err(error)),
    };
    let protocols = list_column(&listing, "protocols")?;
    let names = string_field(&protocols, "protocol")?;
    let Some(name) = names.iter().flatten().find(|n| !n.starts_with("vgi_rpc.")) else {
        return Ok(Err(json!({
            "error_type": "ProtocolError",
            "error_message": "the server hosts no application protocol",
            "traceback": "", "error_code": "", "error_kind": "", "error_details": [],
        })));
    };
    let described = match reflect(client, "describe", Some(name))? {
        Ok(batch) => batch,
        Err(error) => return Ok(Err(error)),
    };
    let methods = list_column(&described, "methods")?;
    let method_names = string_field(&methods, "name")?;
    let mut entries = Vec::with_capacity(methods.len());
    for row in 0..methods.len() {
        entries.push(method_entry(&methods, row, method_names.value(row))?);
    }
    Ok(Ok(json!({
        "protocol_name": text(&described, "protocol")?,
        "protocol_version": text(&described, "protocol_version")?,
        "protocol_hash": text(&described, "protocol_hash")?,
        "request_version": text(&listing, "request_version")?,
        "server_id": text(&listing, "server_id")?,
        "describe_version": DESCRIBE_VERSION,
        "methods": entries,
    })))
}

fn method_entry(methods: &StructArray, row: usize, name: &str) -> Result<Value, String> {
    let flag = |field: &str| -> Result<bool, String> {
        let column = methods.column_by_name(field).ok_or(format!("no {field}"))?;
        Ok(column.as_boolean().value(row))
    };
    let schema = |field: &str| -> Result<Value, String> {
        let column = methods.column_by_name(field).ok_or(format!("no {field}"))?;
        let bytes = column.as_binary::<i32>().value(row);
        Ok(if bytes.is_empty() {
            Value::Null
        } else {
            Value::String(base64_encode(bytes))
        })
    };
    let method_type = string_field(methods, "method_type")?.value(row).to_string();
    let is_exchange = match string_field(methods, "stream_kind")?.value(row) {
        "exchange" => json!(true),
        "producer" => json!(false),
        _ => Value::Null,
    };
    Ok(json!({
        "name": name,
        "method_type": method_type,
        "has_return": flag("has_return")?,
        "has_header": flag("has_header")?,
        "is_exchange": is_exchange,
        "params_schema_b64": schema("params_schema_ipc")?,
        "result_schema_b64": schema("result_schema_ipc")?,
        "header_schema_b64": schema("header_schema_ipc")?,
    }))
}

/// One reflection call; its one-row dataclass batch, or the call's error object.
fn reflect(
    client: &mut Client,
    method: &str,
    protocol: Option<&str>,
) -> Result<Result<RecordBatch, Value>, String> {
    let (schema, columns): (Schema, Vec<ArrayRef>) = match protocol {
        Some(name) => (
            Schema::new(vec![Field::new("protocol", DataType::Utf8, false)]),
            vec![Arc::new(StringArray::from(vec![name]))],
        ),
        None => (Schema::empty(), vec![]),
    };
    let params = if columns.is_empty() {
        RecordBatch::try_new_with_options(
            Arc::new(schema),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(1)),
        )
    } else {
        RecordBatch::try_new(Arc::new(schema), columns)
    }
    .map_err(|e| e.to_string())?;
    let metadata = BatchMetadata::from_pairs([(keys::PROTOCOL, REFLECTION_PROTOCOL)]);
    let reply = match client.call_with_metadata(method, &params, metadata) {
        Ok(Some((batch, _))) => batch,
        Ok(None) => return Err(format!("{method}: no reply")),
        Err(error) => return Ok(Err(error_object(&error))),
    };
    let result = reply
        .column_by_name("result")
        .ok_or(format!("{method}: no result column"))?;
    let bytes = result.as_binary::<i32>().value(0).to_vec();
    let (_, mut batches) =
        decode_stream(Buffer::from_vec(bytes), Limits::DEFAULT).map_err(|e| e.to_string())?;
    if batches.len() != 1 {
        return Err(format!("{method}: expected one dataclass batch"));
    }
    Ok(Ok(batches.remove(0).0))
}

fn text(batch: &RecordBatch, name: &str) -> Result<String, String> {
    let column = batch.column_by_name(name).ok_or(format!("no {name}"))?;
    Ok(column.as_string::<i32>().value(0).to_string())
}

/// The struct items of row 0's list in column `name`.
fn list_column(batch: &RecordBatch, name: &str) -> Result<StructArray, String> {
    let column = batch.column_by_name(name).ok_or(format!("no {name}"))?;
    let items = column.as_list::<i32>().value(0);
    Ok(items.as_struct().clone())
}

fn string_field<'a>(items: &'a StructArray, name: &str) -> Result<&'a StringArray, String> {
    let column = items.column_by_name(name).ok_or(format!("no {name}"))?;
    Ok(column.as_string::<i32>())
}
