//! Values nested in `binary` fields: statement parameters as a complete Arrow IPC stream (one row
//! per execution, one column per parameter, in the statement's order; column names are ignored),
//! and schemas as a framed schema message. Both are decoded under this protocol's limits before
//! anything is allocated for their contents.

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use quiver_wire::{encode_stream, BatchMetadata, ErrorReport, Limits};

use crate::errors;
use crate::limits::{
    PARAMETERS_BYTES_MAX, PARAMETER_ROWS_MAX, SCHEMA_BYTES_MAX, SCHEMA_FIELDS_MAX,
};

/// Encodes parameter rows (all batches on one schema) as a nested stream.
pub fn encode_parameters(batches: &[RecordBatch]) -> Result<Vec<u8>, ErrorReport> {
    let Some(first) = batches.first() else {
        return Err(errors::protocol("parameters: no batch to encode"));
    };
    let items: Vec<(RecordBatch, BatchMetadata)> = batches
        .iter()
        .map(|batch| (batch.clone(), BatchMetadata::new()))
        .collect();
    let mut bytes = Vec::new();
    encode_stream(first.schema_ref(), &items, &mut bytes)
        .map_err(|error| errors::protocol(format!("parameters: {error}")))?;
    if bytes.len() > PARAMETERS_BYTES_MAX {
        return Err(errors::limit(
            "parameters (bytes)",
            bytes.len() as u64,
            PARAMETERS_BYTES_MAX as u64,
        ));
    }
    Ok(bytes)
}

/// Decodes a nested parameters stream into its batches (at least one row in all).
pub fn decode_parameters(bytes: &[u8]) -> Result<(SchemaRef, Vec<RecordBatch>), ErrorReport> {
    if bytes.len() > PARAMETERS_BYTES_MAX {
        return Err(errors::limit(
            "parameters (bytes)",
            bytes.len() as u64,
            PARAMETERS_BYTES_MAX as u64,
        ));
    }
    let limits = Limits {
        metadata_bytes_max: SCHEMA_BYTES_MAX as u32,
        body_bytes_max: PARAMETERS_BYTES_MAX as u64,
        messages_per_stream_max: 1 << 16,
        skip_body_bytes_max: 0,
    };
    // A copy into an owned, aligned buffer: the decoded arrays outlive the request batch.
    let buffer = arrow_buffer::Buffer::from(bytes.to_vec());
    let (schema, batches) = quiver_wire::decode_stream(buffer, limits)
        .map_err(|error| errors::protocol(format!("malformed parameters: {error}")))?;
    if schema.fields().len() > SCHEMA_FIELDS_MAX {
        return Err(errors::limit(
            "parameters (columns)",
            schema.fields().len() as u64,
            SCHEMA_FIELDS_MAX as u64,
        ));
    }
    let batches: Vec<RecordBatch> = batches.into_iter().map(|(batch, _)| batch).collect();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows == 0 {
        return Err(errors::protocol("parameters: the stream holds no row"));
    }
    if rows > PARAMETER_ROWS_MAX {
        return Err(errors::limit(
            "parameters (rows)",
            rows as u64,
            PARAMETER_ROWS_MAX as u64,
        ));
    }
    Ok((schema, batches))
}

/// Encodes a schema as a framed schema message.
pub fn encode_schema(schema: &Schema) -> Vec<u8> {
    quiver_wire::schema_message::encode(schema)
}

/// Decodes a framed schema message; `what` names it in errors.
pub fn decode_schema(bytes: &[u8], what: &str) -> Result<SchemaRef, ErrorReport> {
    quiver_wire::schema_message::decode(bytes, SCHEMA_BYTES_MAX, SCHEMA_FIELDS_MAX)
        .map_err(|error| errors::protocol(format!("malformed {what}: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;

    fn rows() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec!["x", "y"])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn parameters_round_trip() {
        let bytes = encode_parameters(&[rows()]).unwrap();
        let (schema, batches) = decode_parameters(&bytes).unwrap();
        assert_eq!(schema, rows().schema());
        assert_eq!(batches, vec![rows()]);
    }

    #[test]
    fn empty_and_garbage_parameters_are_refused() {
        let empty = rows().slice(0, 0);
        let bytes = encode_parameters(&[empty]).unwrap();
        assert!(decode_parameters(&bytes)
            .unwrap_err()
            .message
            .contains("no row"));
        assert!(decode_parameters(b"garbage!").is_err());
        assert!(encode_parameters(&[]).is_err());
    }

    #[test]
    fn schemas_round_trip() {
        let schema = rows().schema();
        let decoded = decode_schema(&encode_schema(&schema), "schema").unwrap();
        assert_eq!(decoded, schema);
        assert!(decode_schema(b"nonsense", "schema")
            .unwrap_err()
            .message
            .contains("schema"));
    }
}
