//! The `vgi.filters.v2` container on the engine side: the glue translates DuckDB's pushed-down
//! filters into the JSON document and a one-row batch of typed literals (`value_<N>`); the
//! contract crate's `filter_container` wraps both into the batch `InitRequest` carries, with the
//! same keys and limits the worker checks when it parses it.

use arrow_array::RecordBatch;
use quiver_vgi_contract::filter_container;

use crate::ffi::{Failure, Outcome};

/// The filter batch for `spec` (a snapshot document) and its literals `values` (columns named
/// `value_<N>`, one row), encoded as an IPC stream.
pub fn encode(spec: &str, values: Option<RecordBatch>) -> Outcome<Vec<u8>> {
    filter_container::encode(spec, values.as_ref()).map_err(|error| Failure::invalid(error.message))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use quiver_vgi_contract::filter_container::FilterContainer;

    use super::*;

    #[test]
    fn the_container_parses_back() {
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
        let container = FilterContainer::parse(&bytes).unwrap();
        assert_eq!(container.document["predicates"][0]["id"], "q0");
        assert_eq!(container.batch.schema().field(1).name(), "value_0");
    }

    #[test]
    fn nonsense_is_refused() {
        assert!(encode("{", None).is_err());
        assert!(encode(r#"{"encoding":"other"}"#, None).is_err());
    }
}
