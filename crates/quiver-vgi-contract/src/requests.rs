//! The two requests every function call sends: `BindRequest` and `InitRequest`.
//!
//! Decoding is lenient in the way vgi-python's is (by column name, extra columns
//! ignored, a zero-length schema or batch read as absent); encoding writes every
//! column with its declared type, so tests and tools can play the engine.

use arrow_schema::SchemaRef;
use quiver_wire::ErrorReport;

use crate::arguments::RawArguments;
use crate::ipc;
use crate::row::{RowBuilder, RowReader};
use crate::schemas;

/// `BindRequest`: which function, with which arguments and input.
#[derive(Debug)]
pub struct BindRequest {
    /// The SQL name.
    pub function_name: String,
    /// The arguments the kind receives at bind.
    pub arguments: RawArguments,
    /// `FunctionType` member name (`SCALAR`, `TABLE`, ...).
    pub function_type: String,
    /// Schema of the input batches (scalar, table-in-out).
    pub input_schema: Option<SchemaRef>,
    /// The catalog token from `catalog_attach`, when bound through a catalog.
    pub attach_opaque_data: Option<Vec<u8>>,
    /// The schema the function lives in; `None` searches every schema.
    pub schema_path: Option<Vec<String>>,
}

impl BindRequest {
    /// Decodes a serialized `BindRequest`.
    pub fn decode(bytes: &[u8]) -> Result<BindRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "BindRequest")?;
        let row = RowReader::new(&batch, "BindRequest");
        let function_name = row
            .str("function_name")?
            .ok_or_else(|| row.missing("function_name"))?;
        let arguments = match row.bytes("arguments")? {
            Some(bytes) if !bytes.is_empty() => RawArguments::decode(bytes)?,
            _ => RawArguments::default(),
        };
        let function_type = row
            .str("function_type")?
            .ok_or_else(|| row.missing("function_type"))?;
        let input_schema = match row.bytes("input_schema")? {
            Some(bytes) if !bytes.is_empty() => Some(ipc::decode_schema(bytes, "input_schema")?),
            _ => None,
        };
        Ok(BindRequest {
            function_name,
            arguments,
            function_type,
            input_schema,
            attach_opaque_data: row.bytes("attach_opaque_data")?.map(<[u8]>::to_vec),
            schema_path: row.strs("schema_path")?,
        })
    }

    /// Encodes as the engine does.
    pub fn encode(&self) -> Vec<u8> {
        let input_schema = self.input_schema.as_ref().map(|s| ipc::encode_schema(s));
        let mut row = RowBuilder::new(schemas::BIND_REQUEST.clone())
            .str("function_name", Some(&self.function_name))
            .bytes("arguments", Some(&self.arguments.encode()))
            .str("function_type", Some(&self.function_type))
            .bytes("input_schema", input_schema.as_deref())
            .bytes("attach_opaque_data", self.attach_opaque_data.as_deref());
        if let Some(path) = &self.schema_path {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            row = row.strs("schema_path", &path);
        }
        ipc::encode_batch(&row.finish())
    }
}

/// `InitRequest`: start (or join, or finalize) an execution.
#[derive(Debug)]
pub struct InitRequest {
    /// The bind this init belongs to (secondary connections get no bind call).
    pub bind_call: BindRequest,
    /// The unprojected output schema from the bind, echoed.
    pub output_schema: SchemaRef,
    /// `BindResponse.opaque_data`, echoed.
    pub bind_opaque_data: Option<Vec<u8>>,
    /// Indices into `output_schema` to produce, in order; `None` = all.
    pub projection_ids: Option<Vec<i64>>,
    /// A filter v2 batch as an IPC stream.
    pub pushdown_filters: Option<Vec<u8>>,
    /// Table-in-out phase (`INPUT`, `FINALIZE`) or buffered phase (`TABLE_BUFFERING`,
    /// `TABLE_BUFFERING_FINALIZE`).
    pub phase: Option<String>,
    /// Split scans: the tokens this init redeems (usually one).
    pub split_tokens: Option<Vec<Vec<u8>>>,
    /// Buffered calls: the finalize id a `TABLE_BUFFERING_FINALIZE` stream serves.
    pub finalize_state_id: Option<Vec<u8>>,
    /// Set on secondary and FINALIZE inits.
    pub execution_id: Option<Vec<u8>>,
    /// The primary header's `opaque_data`, echoed.
    pub init_opaque_data: Option<Vec<u8>>,
    /// Table-in-out: identifies this substream across INPUT and FINALIZE.
    pub substream_id: Option<Vec<u8>>,
}

impl InitRequest {
    /// Decodes a serialized `InitRequest`.
    pub fn decode(bytes: &[u8]) -> Result<InitRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "InitRequest")?;
        let row = RowReader::new(&batch, "InitRequest");
        let bind_call = BindRequest::decode(
            row.bytes("bind_call")?
                .ok_or_else(|| row.missing("bind_call"))?,
        )?;
        let output_schema = row
            .bytes("output_schema")?
            .ok_or_else(|| row.missing("output_schema"))?;
        let output_schema = ipc::decode_schema(output_schema, "output_schema")?;
        let pushdown_filters = row
            .bytes("pushdown_filters")?
            .filter(|b| !b.is_empty())
            .map(<[u8]>::to_vec);
        Ok(InitRequest {
            bind_call,
            output_schema,
            bind_opaque_data: row.bytes("bind_opaque_data")?.map(<[u8]>::to_vec),
            projection_ids: row.ints("projection_ids")?,
            pushdown_filters,
            phase: row.str("phase")?,
            split_tokens: row.bytes_list("split_tokens")?,
            finalize_state_id: row.bytes("finalize_state_id")?.map(<[u8]>::to_vec),
            execution_id: row.bytes("execution_id")?.map(<[u8]>::to_vec),
            init_opaque_data: row.bytes("init_opaque_data")?.map(<[u8]>::to_vec),
            substream_id: row.bytes("substream_id")?.map(<[u8]>::to_vec),
        })
    }

    /// Encodes as the engine does.
    pub fn encode(&self) -> Vec<u8> {
        let mut row = RowBuilder::new(schemas::INIT_REQUEST.clone())
            .bytes("bind_call", Some(&self.bind_call.encode()))
            .bytes(
                "output_schema",
                Some(&ipc::encode_schema(&self.output_schema)),
            )
            .bytes("bind_opaque_data", self.bind_opaque_data.as_deref())
            .bytes("pushdown_filters", self.pushdown_filters.as_deref())
            .str("phase", self.phase.as_deref())
            .bytes("finalize_state_id", self.finalize_state_id.as_deref())
            .bytes("execution_id", self.execution_id.as_deref())
            .bytes("init_opaque_data", self.init_opaque_data.as_deref())
            .bytes("substream_id", self.substream_id.as_deref());
        if let Some(ids) = &self.projection_ids {
            row = row.list(
                "projection_ids",
                std::sync::Arc::new(arrow_array::Int64Array::from(ids.clone())),
            );
        }
        if let Some(tokens) = &self.split_tokens {
            row = row.bytes_list("split_tokens", tokens);
        }
        ipc::encode_batch(&row.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arguments::int64_value;
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn init_requests_round_trip() {
        let bind = BindRequest {
            function_name: "numbers".into(),
            arguments: RawArguments {
                positional: vec![int64_value(10)],
                named: vec![],
            },
            function_type: "TABLE".into(),
            input_schema: None,
            attach_opaque_data: None,
            schema_path: Some(vec!["main".into()]),
        };
        let init = InitRequest {
            bind_call: bind,
            output_schema: Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
            bind_opaque_data: None,
            projection_ids: Some(vec![0]),
            pushdown_filters: None,
            phase: None,
            split_tokens: Some(vec![b"token".to_vec()]),
            finalize_state_id: None,
            execution_id: Some(vec![7; 16]),
            init_opaque_data: None,
            substream_id: None,
        };
        let decoded = InitRequest::decode(&init.encode()).unwrap();
        assert_eq!(decoded.bind_call.function_name, "numbers");
        assert_eq!(decoded.bind_call.function_type, "TABLE");
        assert_eq!(
            decoded.bind_call.schema_path,
            Some(vec!["main".to_string()])
        );
        assert_eq!(decoded.bind_call.arguments.positional.len(), 1);
        assert_eq!(decoded.projection_ids, Some(vec![0]));
        assert_eq!(decoded.execution_id, Some(vec![7; 16]));
        assert_eq!(decoded.output_schema, init.output_schema);
        assert_eq!(decoded.phase, None);
        assert_eq!(decoded.split_tokens, Some(vec![b"token".to_vec()]));
    }
}
