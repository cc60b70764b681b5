//! The `vgi.filters.v2` container: the glue translates DuckDB's pushed-down filters into the JSON
//! document and a one-row batch of typed literals (`value_<N>`); this wraps both into the filter
//! batch (`filter_spec` first, the schema metadata naming the encoding) that `InitRequest`
//! carries as an IPC stream.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_vgi::ipc;

use crate::ffi::{Failure, Outcome};

/// Largest filter document we send (the spec's limit).
pub const FILTER_JSON_BYTES_MAX: usize = 1 << 20;

/// The filter batch for `spec` (a snapshot document) and its literals `values` (columns named
/// `value_<N>`, one row), encoded as an IPC stream.
pub fn encode(spec: &str, values: Option<RecordBatch>) -> Outcome<Vec<u8>> {
    if spec.len() > FILTER_JSON_BYTES_MAX {
        return Err(Failure::invalid("the filter document exceeds 1 MiB"));
    }
    let document: serde_json::Value = serde_json::from_str(spec)
        .map_err(|e| Failure::invalid(format!("filter document is not JSON: {e}")))?;
    if document.get("encoding").and_then(|v| v.as_str()) != Some("vgi.filters.v2") {
        return Err(Failure::invalid("filter document must be vgi.filters.v2"));
    }
    let mut fields = vec![Field::new("filter_spec", DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![spec]))];
    if let Some(values) = values {
        if values.num_rows() != 1 {
            return Err(Failure::invalid("filter values must be one row"));
        }
        for (field, column) in values.schema().fields().iter().zip(values.columns()) {
            let name = field.name();
            let canonical = name.strip_prefix("value_").is_some_and(|n| {
                n == "0" || (!n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))
            });
            if !canonical {
                return Err(Failure::invalid(format!("bad filter value name {name:?}")));
            }
            fields.push(field.as_ref().clone().with_nullable(true));
            columns.push(column.clone());
        }
    }
    let metadata = HashMap::from([
        (
            "vgi_filter_encoding".to_string(),
            "vgi.filters.v2".to_string(),
        ),
        ("vgi_filter_version".to_string(), "2".to_string()),
        (
            "vgi_evaluation_context".to_string(),
            "vgi.none.v1".to_string(),
        ),
    ]);
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    let batch = RecordBatch::try_new(schema, columns)?;
    Ok(ipc::encode_batch(&batch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;

    #[test]
    fn the_worker_sdk_reads_what_we_write() {
        let spec = r#"{"encoding":"vgi.filters.v2","semantics":"vgi.duckdb.standard.v1","kind":"snapshot",
            "predicates":[{"id":"q0","revision":0,"mode":"advisory","source":"query",
            "expression":{"node":"comparison","op":"lt",
              "left":{"node":"column_ref","column_index":0,"column_name":"n"},
              "right":{"node":"literal","value_ref":0}}}]}"#;
        let values = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "value_0",
                DataType::Int64,
                true,
            )])),
            vec![Arc::new(Int64Array::from(vec![3]))],
        )
        .unwrap();
        let bytes = encode(spec, Some(values)).unwrap();
        let output = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let filters = quiver_vgi::Filters::parse(&bytes, &output, true).unwrap();
        let batch =
            RecordBatch::try_new(output, vec![Arc::new(Int64Array::from(vec![1, 5, 2]))]).unwrap();
        assert_eq!(filters.apply(batch).unwrap().num_rows(), 2);
    }

    #[test]
    fn nonsense_is_refused() {
        assert!(encode("{", None).is_err());
        assert!(encode(r#"{"encoding":"other"}"#, None).is_err());
    }
}
