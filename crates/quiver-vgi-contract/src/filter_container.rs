//! The `vgi.filters.v2` container as both sides see it: one IPC batch whose first column
//! `filter_spec` holds the JSON snapshot document and whose other columns (`value_<N>`,
//! `type_<N>`, `artifact_<N>`) hold the typed literals the document refers to; the schema
//! metadata names the encoding, its version and the evaluation context.
//!
//! The engine encodes the container ([`encode`]); a worker parses it ([`FilterContainer::parse`])
//! and then reads the predicates out of the document. What the predicates mean, and which of
//! them a worker evaluates, is the worker's business.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_wire::ErrorReport;
use serde_json::{Map, Value};

use crate::errors;
use crate::ipc;
use crate::limits::{FILTER_JSON_BYTES_MAX, FILTER_PAYLOAD_BYTES_MAX};

/// The encoding, in the document's `encoding` and the schema metadata.
pub const ENCODING: &str = "vgi.filters.v2";
/// The encoding version, in the schema metadata.
pub const VERSION: &str = "2";
/// The semantic profile: DuckDB's standard SQL semantics.
pub const SEMANTICS: &str = "vgi.duckdb.standard.v1";
/// The only evaluation context quiver speaks: no runtime context.
pub const NO_CONTEXT: &str = "vgi.none.v1";

/// Schema metadata key naming the encoding.
pub const ENCODING_KEY: &str = "vgi_filter_encoding";
/// Schema metadata key naming the encoding version.
pub const VERSION_KEY: &str = "vgi_filter_version";
/// Schema metadata key naming the evaluation context.
pub const CONTEXT_KEY: &str = "vgi_evaluation_context";
/// The first column: the JSON document.
pub const SPEC_FIELD: &str = "filter_spec";

/// A parsed container: the JSON document and the batch its `value_ref`s point into.
#[derive(Debug)]
pub struct FilterContainer {
    /// The snapshot document (a JSON object).
    pub document: Map<String, Value>,
    /// The one-row container batch (`filter_spec` first, then the payload columns).
    pub batch: RecordBatch,
}

impl FilterContainer {
    /// Decodes `InitRequest.pushdown_filters` and checks the container: one batch of one row,
    /// `filter_spec` first, canonical payload names, the payload and document within their
    /// limits, and the schema metadata naming this encoding and context.
    pub fn parse(bytes: &[u8]) -> Result<FilterContainer, ErrorReport> {
        let (_, mut batches) = ipc::decode_batches(bytes, "pushdown_filters")?;
        if batches.len() != 1 {
            return Err(errors::filter(
                "the filter stream must hold exactly one batch",
            ));
        }
        let batch = batches.pop().expect("one batch");
        let document = check(&batch)?;
        Ok(FilterContainer { document, batch })
    }
}

fn check(batch: &RecordBatch) -> Result<Map<String, Value>, ErrorReport> {
    if batch.num_rows() != 1 {
        return Err(errors::filter(
            "filter RecordBatch must contain exactly one row",
        ));
    }
    let schema = batch.schema_ref();
    let first = schema
        .fields()
        .first()
        .ok_or_else(|| errors::filter("no filter_spec field"))?;
    if first.name() != SPEC_FIELD
        || first.data_type() != &DataType::Utf8
        || batch.column(0).is_null(0)
    {
        return Err(errors::filter(
            "first field must be filter_spec: utf8 not null",
        ));
    }
    let mut payload_bytes = 0;
    for (field, column) in schema.fields().iter().zip(batch.columns()).skip(1) {
        if !is_payload_name(field.name()) {
            return Err(errors::filter(format!(
                "noncanonical payload field name {:?}",
                field.name()
            )));
        }
        payload_bytes += column.get_array_memory_size();
    }
    if payload_bytes > FILTER_PAYLOAD_BYTES_MAX {
        return Err(errors::filter("filter payload exceeds 16 MiB"));
    }
    let metadata = schema.metadata();
    let meta = |key: &str| metadata.get(key).map(String::as_str);
    if meta(ENCODING_KEY) != Some(ENCODING) || meta(VERSION_KEY) != Some(VERSION) {
        return Err(errors::filter(
            "schema metadata must name vgi.filters.v2 version 2",
        ));
    }
    match meta(CONTEXT_KEY) {
        Some(NO_CONTEXT) => {}
        Some(other) => {
            return Err(errors::filter(format!(
                "evaluation context {other:?} was not advertised (only {NO_CONTEXT} is)"
            )))
        }
        None => {
            return Err(errors::filter(format!(
                "missing schema metadata '{CONTEXT_KEY}'"
            )))
        }
    }
    let json = batch.column(0).as_string::<i32>().value(0);
    if json.len() > FILTER_JSON_BYTES_MAX {
        return Err(errors::filter("filter JSON exceeds 1 MiB"));
    }
    let value: Value = serde_json::from_str(json)
        .map_err(|e| errors::filter(format!("invalid filter JSON: {e}")))?;
    match value {
        Value::Object(document) => Ok(document),
        _ => Err(errors::filter("filter document must be a JSON object")),
    }
}

/// The container for `spec` (a snapshot document) and its literals `values` (payload columns
/// such as `value_<N>`, one row), encoded as an IPC stream: the engine's side.
pub fn encode(spec: &str, values: Option<&RecordBatch>) -> Result<Vec<u8>, ErrorReport> {
    if spec.len() > FILTER_JSON_BYTES_MAX {
        return Err(errors::invalid_argument(
            "the filter document exceeds 1 MiB",
        ));
    }
    let document: Value = serde_json::from_str(spec)
        .map_err(|e| errors::invalid_argument(format!("filter document is not JSON: {e}")))?;
    if document.get("encoding").and_then(Value::as_str) != Some(ENCODING) {
        return Err(errors::invalid_argument(format!(
            "filter document must be {ENCODING}"
        )));
    }
    let mut fields = vec![Field::new(SPEC_FIELD, DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![spec]))];
    if let Some(values) = values {
        if values.num_rows() != 1 {
            return Err(errors::invalid_argument("filter values must be one row"));
        }
        for (field, column) in values.schema().fields().iter().zip(values.columns()) {
            if !is_payload_name(field.name()) {
                return Err(errors::invalid_argument(format!(
                    "bad filter value name {:?}",
                    field.name()
                )));
            }
            fields.push(field.as_ref().clone().with_nullable(true));
            columns.push(column.clone());
        }
    }
    let metadata = HashMap::from([
        (ENCODING_KEY.to_string(), ENCODING.to_string()),
        (VERSION_KEY.to_string(), VERSION.to_string()),
        (CONTEXT_KEY.to_string(), NO_CONTEXT.to_string()),
    ]);
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    let batch = RecordBatch::try_new(schema, columns)
        .map_err(|e| errors::invalid_argument(format!("filter values: {e}")))?;
    Ok(ipc::encode_batch(&batch))
}

/// `(value|type|artifact)_(0|[1-9][0-9]*)`.
pub fn is_payload_name(name: &str) -> bool {
    let Some((prefix, number)) = name.rsplit_once('_') else {
        return false;
    };
    matches!(prefix, "value" | "type" | "artifact")
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && (number == "0" || !number.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;

    const SPEC: &str = r#"{"encoding":"vgi.filters.v2","semantics":"vgi.duckdb.standard.v1",
        "kind":"snapshot","predicates":[]}"#;

    fn values(name: &str) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, true)])),
            vec![Arc::new(Int64Array::from(vec![3]))],
        )
        .unwrap()
    }

    #[test]
    fn what_the_engine_encodes_the_worker_parses() {
        let bytes = encode(SPEC, Some(&values("value_0"))).unwrap();
        let container = FilterContainer::parse(&bytes).unwrap();
        assert_eq!(container.document["encoding"], ENCODING);
        assert_eq!(container.batch.num_columns(), 2);
        assert_eq!(container.batch.schema().field(1).name(), "value_0");
    }

    #[test]
    fn nonsense_is_refused_on_both_sides() {
        assert!(encode("{", None).is_err());
        assert!(encode(r#"{"encoding":"other"}"#, None).is_err());
        assert!(encode(SPEC, Some(&values("value_01"))).is_err());
        assert!(encode(SPEC, Some(&values("literal_0"))).is_err());
        let too_big = SPEC.to_string() + &" ".repeat(FILTER_JSON_BYTES_MAX);
        assert!(encode(&too_big, None).is_err());
        assert!(FilterContainer::parse(b"not ipc").is_err());
    }

    #[test]
    fn payload_names_are_canonical() {
        for good in ["value_0", "value_12", "type_3", "artifact_0"] {
            assert!(is_payload_name(good), "{good}");
        }
        for bad in ["value_", "value_01", "value", "other_1", "value_-1"] {
            assert!(!is_payload_name(bad), "{bad}");
        }
    }
}
