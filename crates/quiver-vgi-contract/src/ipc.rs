//! The two ways vgi.v2 nests Arrow inside a `binary` value: a complete IPC stream
//! (a dataclass, the arguments, a filter batch) and a bare schema message (an
//! input or output schema: continuation, length, flatbuffer, padding, no EOS).

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{Schema, SchemaRef};
use quiver_wire::{encode_stream, BatchMetadata, ErrorReport, Limits, Nullability};

use crate::errors;
use crate::limits::{NESTED_IPC_BYTES_MAX, SCHEMA_FIELDS_MAX, SCHEMA_MESSAGE_BYTES_MAX};

/// Decoding limits for nested streams: small headers, bodies no larger than the
/// nested value itself, and a handful of messages.
const NESTED_LIMITS: Limits = Limits {
    metadata_bytes_max: SCHEMA_MESSAGE_BYTES_MAX as u32,
    body_bytes_max: NESTED_IPC_BYTES_MAX as u64,
    messages_per_stream_max: 4096,
    skip_body_bytes_max: 0,
};

/// A complete IPC stream holding `batch` (schema, dictionaries, batch, EOS).
pub fn encode_batch(batch: &RecordBatch) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_stream(
        batch.schema_ref(),
        &[(batch.clone(), BatchMetadata::new())],
        &mut bytes,
    )
    .expect("a batch built by this crate encodes");
    bytes
}

/// A complete IPC stream holding `batches`, all on `schema`.
pub fn encode_batches(schema: &SchemaRef, batches: &[RecordBatch]) -> Vec<u8> {
    let items: Vec<(RecordBatch, BatchMetadata)> = batches
        .iter()
        .map(|batch| (batch.clone(), BatchMetadata::new()))
        .collect();
    let mut bytes = Vec::new();
    encode_stream(schema, &items, &mut bytes).expect("batches built by this crate encode");
    bytes
}

/// Decodes a nested IPC stream; `what` names it in errors.
pub fn decode_batches(
    bytes: &[u8],
    what: &str,
) -> Result<(SchemaRef, Vec<RecordBatch>), ErrorReport> {
    if bytes.len() > NESTED_IPC_BYTES_MAX {
        return Err(errors::malformed(
            what,
            format!(
                "{} bytes exceed the limit of {NESTED_IPC_BYTES_MAX}",
                bytes.len()
            ),
        ));
    }
    // A copy into an owned, aligned buffer: nested values are small, and the
    // decoded arrays may then outlive the request batch they came from.
    let buffer = Buffer::from(bytes.to_vec());
    // Nested framework messages are read as the reference reads them: a null in a field declared
    // non-nullable is the row reader's to judge, not the decoder's.
    let (schema, batches) =
        quiver_wire::decode_stream_with(buffer, NESTED_LIMITS, Nullability::Tolerated)
            .map_err(|error| errors::malformed(what, error))?;
    if schema.fields().len() > SCHEMA_FIELDS_MAX {
        return Err(errors::malformed(what, "too many fields"));
    }
    Ok((
        schema,
        batches.into_iter().map(|(batch, _)| batch).collect(),
    ))
}

/// Decodes a nested dataclass: the stream's first batch, which must hold one row.
pub fn decode_row(bytes: &[u8], what: &str) -> Result<RecordBatch, ErrorReport> {
    let (_, batches) = decode_batches(bytes, what)?;
    let Some(batch) = batches.into_iter().next() else {
        return Err(errors::malformed(what, "the stream holds no batch"));
    };
    if batch.num_rows() != 1 {
        return Err(errors::malformed(
            what,
            format!("expected 1 row, got {}", batch.num_rows()),
        ));
    }
    Ok(batch)
}

/// A bare, framed schema message, as pyarrow's `Schema.serialize()` writes it.
pub fn encode_schema(schema: &Schema) -> Vec<u8> {
    quiver_wire::schema_message::encode(schema)
}

/// Decodes a bare schema message (a full stream is accepted too: its first
/// message is the schema).
pub fn decode_schema(bytes: &[u8], what: &str) -> Result<SchemaRef, ErrorReport> {
    quiver_wire::schema_message::decode(bytes, SCHEMA_MESSAGE_BYTES_MAX, SCHEMA_FIELDS_MAX)
        .map_err(|error| errors::malformed(what, error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};
    use std::collections::HashMap;

    #[test]
    fn schema_messages_round_trip_with_field_metadata() {
        let field = Field::new("value", DataType::Utf8, true).with_metadata(HashMap::from([(
            "vgi_doc".to_string(),
            "a string".to_string(),
        )]));
        let schema = Schema::new(vec![field]);
        let bytes = encode_schema(&schema);
        assert_eq!(&bytes[..4], &[0xFF; 4]);
        assert_eq!(bytes.len() % 8, 0);
        let decoded = decode_schema(&bytes, "schema").unwrap();
        assert_eq!(decoded.as_ref(), &schema);
    }

    #[test]
    fn result_utf8_schema_is_the_size_pyarrow_writes() {
        // pyarrow serializes `result: string` to exactly 120 bytes (capture 01).
        let schema = Schema::new(vec![Field::new("result", DataType::Utf8, true)]);
        assert_eq!(encode_schema(&schema).len(), 120);
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let error =
            decode_schema(b"\xff\xff\xff\xff\x10\x00\x00\x00nonsense", "input_schema").unwrap_err();
        assert!(error.message.contains("input_schema"), "{error}");
        let error = decode_row(b"", "BindRequest").unwrap_err();
        assert!(error.message.contains("BindRequest"), "{error}");
    }
}
