//! What crosses the control channel besides JSON: standard base64 and one-batch
//! Arrow IPC streams (a batch with its custom metadata), plus the JSON shapes of a
//! client's errors and logs. The driver never decodes values; it hands batches
//! to the client and re-encodes whatever comes back.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use quiver_rpc::RpcError;
use quiver_wire::{decode_stream, encode_stream, BatchMetadata, Limits, LogRecord};
use serde_json::{json, Map, Value};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard, padded base64.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (i, byte)| {
            word | (u32::from(*byte) << (16 - 8 * i))
        });
        for i in 0..4 {
            if i <= chunk.len() {
                text.push(ALPHABET[(word >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Decodes standard, padded base64; `None` on any character outside the alphabet.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut bytes = Vec::with_capacity(text.len() * 3 / 4);
    let mut word = 0u32;
    let mut bits = 0u32;
    for character in text.bytes() {
        let value = ALPHABET.iter().position(|&a| a == character)? as u32;
        word = (word << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((word >> bits) as u8);
            word &= (1 << bits) - 1;
        }
    }
    Some(bytes)
}

/// The single batch of a base64 IPC stream, with its custom metadata.
pub fn decode_batch(text: &str) -> Result<(RecordBatch, BatchMetadata), String> {
    let bytes = base64_decode(text).ok_or("invalid base64")?;
    let (_, mut batches) =
        decode_stream(Buffer::from_vec(bytes), Limits::DEFAULT).map_err(|e| e.to_string())?;
    if batches.len() != 1 {
        return Err(format!(
            "expected an IPC stream of one batch, got {}",
            batches.len()
        ));
    }
    Ok(batches.remove(0))
}

/// A batch and its metadata as a base64 one-batch IPC stream.
pub fn encode_batch(batch: &RecordBatch, metadata: &BatchMetadata) -> Result<String, String> {
    let mut bytes = Vec::new();
    encode_stream(
        batch.schema_ref(),
        &[(batch.clone(), metadata.clone())],
        &mut bytes,
    )
    .map_err(|e| e.to_string())?;
    Ok(base64_encode(&bytes))
}

/// The structured error object of a call that failed, from the client's own error.
pub fn error_object(error: &RpcError) -> Value {
    let Some(report) = error.remote() else {
        let error_type = match error {
            RpcError::Protocol(_) => "ProtocolError",
            _ => "TransportError",
        };
        return json!({
            "error_type": error_type, "error_message": error.to_string(), "traceback": "",
            "error_code": "", "error_kind": "", "error_details": [],
        });
    };
    let traceback = report.extra.get("traceback").and_then(Value::as_str);
    json!({
        "error_type": report.error_type,
        "error_message": report.message,
        "traceback": traceback.unwrap_or(""),
        "error_code": report.code.as_str(),
        "error_kind": report.kind.as_deref().unwrap_or(""),
        "error_details": report.details.clone().unwrap_or_else(|| json!([])),
    })
}

/// Log records as the control channel spells them (uppercase level, string extras).
pub fn logs_array(records: Vec<LogRecord>) -> Value {
    let records = records.into_iter().map(|record| {
        let extra: Map<String, Value> = record
            .extra
            .into_iter()
            .map(|(key, value)| match value {
                Value::String(text) => (key, Value::String(text)),
                other => (key, Value::String(other.to_string())),
            })
            .collect();
        json!({"level": record.level.as_str(), "message": record.message, "extra": extra})
    });
    Value::Array(records.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_padding() {
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = base64_encode(text.as_bytes());
            assert_eq!(encoded.len() % 4, 0);
            assert_eq!(base64_decode(&encoded).unwrap(), text.as_bytes());
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert!(base64_decode("Zm9v!").is_none());
    }
}
