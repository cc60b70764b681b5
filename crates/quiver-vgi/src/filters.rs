//! Filter pushdown: parsing VGI Filter Encoding v2 (`vgi.filters.v2`) against a
//! function's unprojected output schema.
//!
//! The worker evaluates a subset exactly (column refs, literals, the eight
//! comparisons, AND / OR / NOT, IS [NOT] NULL and IN over a literal list) and
//! declines the rest: an `advisory` predicate it cannot evaluate is ignored (the
//! engine keeps its own filter for those), a `required` one fails the init with
//! a clear error, because the engine dropped its filter and skipping it would
//! return wrong rows. Structural errors (unknown keys, a column name that does
//! not match its index, limits exceeded) fail the init whatever the mode, as
//! the spec's strict parser does.
//!
//! The container (the batch around the document) is the contract crate's; expressions are
//! parsed by `filter_parser.rs` into `filter_expr.rs`'s trees; evaluation lives in
//! `filter_eval.rs`.

use std::collections::HashSet;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use quiver_vgi_contract::errors;
use quiver_vgi_contract::filter_container::{FilterContainer, ENCODING, SEMANTICS};
use quiver_wire::ErrorReport;
use serde_json::{Map, Value};

use crate::filter_eval;
use crate::filter_expr::Expr;
use crate::filter_parser::{keys, object, string, Parser};
use crate::limits::{FILTER_ID_BYTES_MAX, FILTER_PREDICATES_MAX};

/// The predicates a scan applies to every batch it emits (ANDed).
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub(crate) predicates: Vec<Expr>,
    /// Ids of advisory predicates left to the engine, with why.
    pub(crate) declined: Vec<(String, String)>,
}

impl Filters {
    /// No filters.
    pub fn none() -> Filters {
        Filters::default()
    }

    /// Parses `InitRequest.pushdown_filters` against `output` (the unprojected
    /// bind schema). With `accepted` false (the function did not opt in), every
    /// predicate is declined.
    pub fn parse(bytes: &[u8], output: &SchemaRef, accepted: bool) -> Result<Filters, ErrorReport> {
        let FilterContainer { document, batch } = FilterContainer::parse(bytes)?;
        let mut parser = Parser::new(&batch, output);
        let mut filters = Filters::none();
        let predicates = snapshot_predicates(&document)?;
        let mut ids = HashSet::new();
        for (index, predicate) in predicates.iter().enumerate() {
            let where_ = format!("predicates[{index}]");
            let predicate = object(predicate, &where_)?;
            keys(
                predicate,
                &["id", "revision", "mode", "source", "expression"],
                &where_,
            )?;
            let id = string(&predicate["id"], "id")?;
            if id.is_empty() || id.len() > FILTER_ID_BYTES_MAX {
                return Err(errors::filter(format!(
                    "{where_}.id must be 1 to {FILTER_ID_BYTES_MAX} bytes"
                )));
            }
            if !ids.insert(id.to_string()) {
                return Err(errors::filter(format!("duplicate predicate ID {id:?}")));
            }
            if predicate["revision"].as_u64() != Some(0) {
                return Err(errors::filter("snapshot predicate revisions must be zero"));
            }
            let required = match string(&predicate["mode"], "mode")? {
                "required" => true,
                "advisory" => false,
                other => return Err(errors::filter(format!("unknown mode {other:?}"))),
            };
            match string(&predicate["source"], "source")? {
                "query" | "join" | "top_n" | "split_refinement" | "other" => {}
                other => return Err(errors::filter(format!("unknown source {other:?}"))),
            }
            let parsed = parser.expression(object(&predicate["expression"], "expression")?, 1)?;
            let parsed = parsed.and_then(|expr| match expr.data_type() {
                DataType::Boolean => Ok(expr),
                other => Err(format!("predicate resolves to {other}, not BOOLEAN")),
            });
            match (parsed, accepted) {
                (Ok(expr), true) => filters.predicates.push(expr),
                (Ok(_), false) => decline(
                    &mut filters,
                    id,
                    required,
                    "the function does not accept filter pushdown".into(),
                )?,
                (Err(reason), _) => decline(&mut filters, id, required, reason)?,
            }
        }
        Ok(filters)
    }

    /// Whether nothing is evaluated.
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty()
    }

    /// Unprojected column indices the predicates read.
    pub fn columns(&self) -> Vec<usize> {
        let mut columns = Vec::new();
        self.predicates.iter().for_each(|p| p.columns(&mut columns));
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// Advisory predicates left to the engine: `(id, reason)`.
    pub fn declined(&self) -> &[(String, String)] {
        &self.declined
    }

    /// Keeps the rows of `batch` (unprojected) every predicate holds TRUE for.
    pub fn apply(&self, batch: RecordBatch) -> Result<RecordBatch, ErrorReport> {
        if self.predicates.is_empty() || batch.num_rows() == 0 {
            return Ok(batch);
        }
        let mask = filter_eval::mask(&self.predicates, &batch)?;
        if mask.true_count() == batch.num_rows() {
            return Ok(batch);
        }
        arrow_select::filter::filter_record_batch(&batch, &mask)
            .map_err(|e| errors::internal(format!("filtering a batch: {e}")))
    }
}

fn decline(
    filters: &mut Filters,
    id: &str,
    required: bool,
    reason: String,
) -> Result<(), ErrorReport> {
    if required {
        return Err(errors::filter(format!(
            "required predicate {id:?} cannot be evaluated exactly by this worker: {reason}"
        )));
    }
    filters.declined.push((id.to_string(), reason));
    Ok(())
}

fn snapshot_predicates(document: &Map<String, Value>) -> Result<&Vec<Value>, ErrorReport> {
    keys(
        document,
        &["encoding", "semantics", "kind", "predicates"],
        "filter document",
    )?;
    if document["encoding"] != ENCODING {
        return Err(errors::filter("document encoding must be vgi.filters.v2"));
    }
    if document["semantics"] != SEMANTICS {
        return Err(errors::filter(format!(
            "unsupported filter semantics {}",
            document["semantics"]
        )));
    }
    if document["kind"] != "snapshot" {
        return Err(errors::filter("expected a snapshot filter document"));
    }
    let Value::Array(predicates) = &document["predicates"] else {
        return Err(errors::filter("predicates must be an array"));
    };
    if predicates.len() > FILTER_PREDICATES_MAX {
        return Err(errors::filter("snapshot exceeds predicate limit"));
    }
    Ok(predicates)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef, Int64Array, ListArray, StringArray};
    use arrow_schema::{Field, Schema};
    use quiver_vgi_contract::filter_container;
    use serde_json::json;

    use super::*;

    fn output() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("label", DataType::Utf8, true),
        ]))
    }

    fn batch() -> RecordBatch {
        let n: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(1),
            Some(3),
            Some(5),
            None,
            Some(9),
        ]));
        let label: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            Some("b"),
            None,
            Some("d"),
            Some("e"),
        ]));
        RecordBatch::try_new(output(), vec![n, label]).unwrap()
    }

    fn container(predicates: serde_json::Value, values: Vec<(Field, ArrayRef)>) -> Vec<u8> {
        let document = json!({
            "encoding": "vgi.filters.v2", "semantics": "vgi.duckdb.standard.v1",
            "kind": "snapshot", "predicates": predicates,
        });
        let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = values.into_iter().unzip();
        let values = (!fields.is_empty())
            .then(|| RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap());
        filter_container::encode(&document.to_string(), values.as_ref()).unwrap()
    }

    fn column(index: usize, name: &str) -> serde_json::Value {
        json!({"node": "column_ref", "column_index": index, "column_name": name})
    }

    fn literal(index: usize) -> serde_json::Value {
        json!({"node": "literal", "value_ref": index})
    }

    fn predicate(id: &str, mode: &str, expression: serde_json::Value) -> serde_json::Value {
        json!({"id": id, "revision": 0, "mode": mode, "source": "query", "expression": expression})
    }

    fn int_value(index: usize, value: Option<i64>) -> (Field, ArrayRef) {
        (
            Field::new(format!("value_{index}"), DataType::Int64, true),
            Arc::new(Int64Array::from(vec![value])),
        )
    }

    fn kept(filters: &Filters) -> Vec<Option<i64>> {
        let kept = filters.apply(batch()).unwrap();
        kept.column(0)
            .as_primitive::<arrow_array::types::Int64Type>()
            .iter()
            .collect()
    }

    #[test]
    fn comparisons_and_or_not() {
        let predicates = json!([
            predicate(
                "a",
                "required",
                json!({"node": "comparison", "op": "ge", "left": column(0, "n"), "right": literal(0)})
            ),
            predicate(
                "b",
                "required",
                json!({"node": "or", "children": [
                    json!({"node": "comparison", "op": "lt", "left": column(0, "n"), "right": literal(1)}),
                    json!({"node": "not", "expression": json!({"node": "is_null", "expression": column(1, "label"), "negated": false})}),
                ]})
            ),
        ]);
        let bytes = container(
            predicates,
            vec![int_value(0, Some(3)), int_value(1, Some(6))],
        );
        let filters = Filters::parse(&bytes, &output(), true).unwrap();
        assert_eq!(filters.columns(), [0, 1]);
        // n >= 3 AND (n < 6 OR label IS NOT NULL): 3, 5, 9 (NULL n never passes).
        assert_eq!(kept(&filters), [Some(3), Some(5), Some(9)]);
    }

    #[test]
    fn in_lists_and_distinct_from() {
        let list =
            ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![Some(
                vec![Some(1), Some(9), Some(42)],
            )]);
        let list_field = Field::new("value_0", list.data_type().clone(), true);
        let predicates = json!([
            predicate(
                "in",
                "required",
                json!({"node": "in", "expression": column(0, "n"),
                "set": {"kind": "literal", "value_ref": 0}, "negated": false})
            ),
            predicate(
                "d",
                "required",
                json!({"node": "comparison", "op": "distinct_from",
                "left": column(0, "n"), "right": literal(1)})
            ),
        ]);
        let bytes = container(
            predicates,
            vec![(list_field, Arc::new(list)), int_value(1, None)],
        );
        let filters = Filters::parse(&bytes, &output(), true).unwrap();
        assert_eq!(kept(&filters), [Some(1), Some(9)]);
    }

    #[test]
    fn unsupported_nodes_are_declined_or_refused_by_mode() {
        let call = json!({"node": "call", "function": "starts_with", "arguments": [column(1, "label"), literal(0)]});
        let advisory = container(
            json!([predicate("x", "advisory", call.clone())]),
            vec![int_value(0, Some(1))],
        );
        let filters = Filters::parse(&advisory, &output(), true).unwrap();
        assert!(filters.is_empty());
        assert_eq!(filters.declined()[0].0, "x");
        let required = container(
            json!([predicate("x", "required", call)]),
            vec![int_value(0, Some(1))],
        );
        let error = Filters::parse(&required, &output(), true).unwrap_err();
        assert!(
            error.message.contains("cannot be evaluated exactly"),
            "{error}"
        );
        // A function that did not opt in declines everything.
        let plain = container(
            json!([predicate(
                "y",
                "required",
                json!({"node": "comparison", "op": "eq", "left": column(0, "n"), "right": literal(0)})
            )]),
            vec![int_value(0, Some(1))],
        );
        assert!(Filters::parse(&plain, &output(), false).is_err());
    }

    #[test]
    fn structural_errors_are_refused() {
        let wrong_name = json!([predicate(
            "a",
            "advisory",
            json!({"node": "comparison", "op": "eq",
            "left": column(0, "wrong"), "right": literal(0)})
        )]);
        let error = Filters::parse(
            &container(wrong_name, vec![int_value(0, Some(1))]),
            &output(),
            true,
        )
        .unwrap_err();
        assert!(
            error
                .message
                .contains("column_ref name \"wrong\" does not match index 0"),
            "{error}"
        );
        let unknown_key = json!([{"id": "a", "revision": 0, "mode": "required", "source": "query",
            "expression": column(0, "n"), "extra": 1}]);
        assert!(Filters::parse(&container(unknown_key, vec![]), &output(), true).is_err());
        let missing_value = json!([predicate(
            "a",
            "required",
            json!({"node": "comparison", "op": "eq",
            "left": column(0, "n"), "right": literal(7)})
        )]);
        assert!(Filters::parse(&container(missing_value, vec![]), &output(), true).is_err());
        let mut deep = column(0, "n");
        for _ in 0..70 {
            deep = json!({"node": "not", "expression": deep});
        }
        let error = Filters::parse(
            &container(json!([predicate("a", "advisory", deep)]), vec![]),
            &output(),
            true,
        )
        .unwrap_err();
        assert!(error.message.contains("nesting-depth"), "{error}");
    }
}
