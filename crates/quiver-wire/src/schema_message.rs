//! A bare, framed schema message: continuation marker, length, the flatbuffer, padding, and no
//! end-of-stream marker — the form pyarrow's `Schema.serialize()` writes. Protocols nest it in a
//! `binary` value wherever they name a schema without sending data (vgi.v2's input and output
//! schemas, the quiver server's insert and prepared-statement schemas).

use std::sync::Arc;

use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteOptions};
use arrow_schema::{Schema, SchemaRef};

use crate::error::{Result, WireError};

/// Encodes `schema` as a framed schema message, 8-byte aligned.
pub fn encode(schema: &Schema) -> Vec<u8> {
    let options = IpcWriteOptions::default();
    let mut tracker = DictionaryTracker::new(false);
    let encoded =
        IpcDataGenerator {}.schema_to_bytes_with_dictionary_tracker(schema, &mut tracker, &options);
    let message = encoded.ipc_message;
    let padded_len = (message.len() + 8).div_ceil(8) * 8 - 8;
    let mut bytes = Vec::with_capacity(8 + padded_len);
    bytes.extend_from_slice(&[0xFF; 4]);
    bytes.extend_from_slice(&(padded_len as i32).to_le_bytes());
    bytes.extend_from_slice(&message);
    bytes.resize(8 + padded_len, 0);
    debug_assert_eq!(bytes.len() % 8, 0);
    bytes
}

/// Decodes a framed schema message (a whole stream is accepted too: its first message is the
/// schema). Refuses more than `bytes_max` bytes or `fields_max` top-level fields before decoding
/// anything further.
pub fn decode(bytes: &[u8], bytes_max: usize, fields_max: usize) -> Result<SchemaRef> {
    if bytes.len() > bytes_max {
        return Err(WireError::LimitExceeded {
            what: "schema message",
            size_bytes: bytes.len() as u64,
            limit_bytes: bytes_max as u64,
        });
    }
    let schema = arrow_ipc::convert::try_schema_from_ipc_buffer(bytes)?;
    if schema.fields().len() > fields_max {
        return Err(WireError::Malformed(format!(
            "{} fields exceed the limit of {fields_max}",
            schema.fields().len()
        )));
    }
    Ok(Arc::new(schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn round_trips_and_is_aligned() {
        let schema = Schema::new(vec![Field::new("a", DataType::Int32, false)]);
        let bytes = encode(&schema);
        assert_eq!(&bytes[..4], &[0xFF; 4]);
        assert_eq!(bytes.len() % 8, 0);
        assert_eq!(decode(&bytes, 1 << 20, 16).unwrap().as_ref(), &schema);
    }

    #[test]
    fn limits_are_checked_first() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("b", DataType::Int32, false),
        ]);
        let bytes = encode(&schema);
        assert!(matches!(
            decode(&bytes, 8, 16),
            Err(WireError::LimitExceeded { .. })
        ));
        assert!(decode(&bytes, 1 << 20, 1).is_err());
        assert!(decode(b"\xff\xff\xff\xff\x10\x00\x00\x00nonsense", 1 << 20, 16).is_err());
    }
}
