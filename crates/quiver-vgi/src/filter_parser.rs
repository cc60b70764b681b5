//! Parsing one `vgi.filters.v2` expression into a tree this worker evaluates exactly
//! (`filter_expr.rs`), or into the reason it declines it; structural errors (unknown keys,
//! a column name that does not match its index, limits exceeded) are errors whatever the mode.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;
use serde_json::{Map, Value};

use crate::filter_expr::{common_type, is_comparable, CmpOp, Expr};
use crate::limits::{FILTER_DEPTH_MAX, FILTER_IN_SET_VALUES_MAX, FILTER_NODES_MAX};

/// Result of parsing one expression: an evaluable tree, or why it is declined.
pub(crate) type Parsed = Result<Expr, String>;

pub(crate) struct Parser<'a> {
    batch: &'a RecordBatch,
    output: &'a SchemaRef,
    /// Expression nodes parsed so far, across all predicates (bounded by FILTER_NODES_MAX).
    nodes: usize,
}

impl<'a> Parser<'a> {
    /// A parser of expressions over `output` whose literals live in `batch` (the container).
    pub(crate) fn new(batch: &'a RecordBatch, output: &'a SchemaRef) -> Parser<'a> {
        Parser {
            batch,
            output,
            nodes: 0,
        }
    }

    /// One expression at nesting `depth` (1 for a predicate's root): an evaluable tree, why it
    /// is declined, or a structural error.
    pub(crate) fn expression(
        &mut self,
        node: &Map<String, Value>,
        depth: usize,
    ) -> Result<Parsed, ErrorReport> {
        if depth > FILTER_DEPTH_MAX {
            return Err(errors::filter("expression exceeds nesting-depth limit"));
        }
        self.nodes += 1;
        if self.nodes > FILTER_NODES_MAX {
            return Err(errors::filter("document exceeds expression-node limit"));
        }
        let kind = node.get("node").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "column_ref" => self.column_ref(node).map(Ok),
            "literal" => self.literal(node),
            "comparison" => self.comparison(node, depth),
            "and" | "or" => self.junction(node, kind, depth),
            "not" => {
                keys(node, &["node", "expression"], "not")?;
                let child = self.child(&node["expression"], depth)?;
                Ok(child
                    .and_then(|c| boolean(c, "not"))
                    .map(|c| Expr::Not(Box::new(c))))
            }
            "is_null" => {
                keys(node, &["node", "expression", "negated"], "is_null")?;
                let negated = node["negated"]
                    .as_bool()
                    .ok_or_else(|| errors::filter("is_null.negated must be a boolean"))?;
                let child = self.child(&node["expression"], depth)?;
                Ok(child.map(|c| Expr::IsNull {
                    expr: Box::new(c),
                    negated,
                }))
            }
            "in" => self.in_list(node, depth),
            "field_ref" | "cast" | "arithmetic" | "negate" | "call" | "runtime_filter" => Ok(Err(
                format!("'{kind}' nodes are not evaluated by this worker"),
            )),
            other => Err(errors::filter(format!("unknown expression node {other:?}"))),
        }
    }

    fn child(&mut self, value: &Value, depth: usize) -> Result<Parsed, ErrorReport> {
        self.expression(object(value, "child expression")?, depth + 1)
    }

    fn column_ref(&self, node: &Map<String, Value>) -> Result<Expr, ErrorReport> {
        keys(node, &["node", "column_index", "column_name"], "column_ref")?;
        let index = node["column_index"]
            .as_u64()
            .ok_or_else(|| errors::filter("column_ref.column_index must be an unsigned integer"))?;
        let name = string(&node["column_name"], "column_ref.column_name")?;
        let field = usize::try_from(index)
            .ok()
            .and_then(|i| self.output.fields().get(i))
            .ok_or_else(|| errors::filter(format!("column_ref index {index} is out of range")))?;
        if field.name() != name {
            return Err(errors::filter(format!(
                "column_ref name {name:?} does not match index {index} ({:?})",
                field.name()
            )));
        }
        Ok(Expr::Column {
            index: index as usize,
            data_type: field.data_type().clone(),
        })
    }

    /// The payload column `value_<ref>` (one element), with its extension name.
    fn payload(&self, reference: &Value) -> Result<(ArrayRef, Option<String>), ErrorReport> {
        let index = reference
            .as_u64()
            .ok_or_else(|| errors::filter("value_ref must be an unsigned integer"))?;
        let name = format!("value_{index}");
        let position = self
            .batch
            .schema_ref()
            .index_of(&name)
            .map_err(|_| errors::filter(format!("missing payload field {name:?}")))?;
        let field = self.batch.schema_ref().field(position);
        let extension = field.metadata().get("ARROW:extension:name").cloned();
        Ok((self.batch.column(position).slice(0, 1), extension))
    }

    fn literal(&self, node: &Map<String, Value>) -> Result<Parsed, ErrorReport> {
        keys(node, &["node", "value_ref"], "literal")?;
        let (value, extension) = self.payload(&node["value_ref"])?;
        Ok(storage(value, extension.as_deref())?.map(Expr::Literal))
    }

    fn comparison(
        &mut self,
        node: &Map<String, Value>,
        depth: usize,
    ) -> Result<Parsed, ErrorReport> {
        keys(node, &["node", "op", "left", "right"], "comparison")?;
        let op = match string(&node["op"], "comparison.op")? {
            "eq" => CmpOp::Eq,
            "ne" => CmpOp::Ne,
            "lt" => CmpOp::Lt,
            "le" => CmpOp::Le,
            "gt" => CmpOp::Gt,
            "ge" => CmpOp::Ge,
            "distinct_from" => CmpOp::DistinctFrom,
            "not_distinct_from" => CmpOp::NotDistinctFrom,
            other => {
                return Err(errors::filter(format!(
                    "unknown comparison operator {other:?}"
                )))
            }
        };
        let left = self.child(&node["left"], depth)?;
        let right = self.child(&node["right"], depth)?;
        Ok(left.and_then(|left| {
            let right = right?;
            let common = comparable(&left.data_type(), &right.data_type())?;
            Ok(Expr::Compare {
                op,
                left: Box::new(left),
                right: Box::new(right),
                common,
            })
        }))
    }

    fn junction(
        &mut self,
        node: &Map<String, Value>,
        kind: &str,
        depth: usize,
    ) -> Result<Parsed, ErrorReport> {
        keys(node, &["node", "children"], kind)?;
        let Value::Array(children) = &node["children"] else {
            return Err(errors::filter(format!("{kind}.children must be an array")));
        };
        if children.len() < 2 {
            return Err(errors::filter(format!(
                "{kind} requires at least two children"
            )));
        }
        let mut parsed = Vec::with_capacity(children.len());
        let mut declined = None;
        for child in children {
            match self.child(child, depth)?.and_then(|c| boolean(c, kind)) {
                Ok(expr) => parsed.push(expr),
                Err(reason) => declined = declined.or(Some(reason)),
            }
        }
        if let Some(reason) = declined {
            return Ok(Err(reason));
        }
        Ok(Ok(if kind == "and" {
            Expr::And(parsed)
        } else {
            Expr::Or(parsed)
        }))
    }

    fn in_list(&mut self, node: &Map<String, Value>, depth: usize) -> Result<Parsed, ErrorReport> {
        keys(node, &["node", "expression", "set", "negated"], "in")?;
        let negated = node["negated"]
            .as_bool()
            .ok_or_else(|| errors::filter("in.negated must be a boolean"))?;
        let set = object(&node["set"], "in.set")?;
        let tested = self.child(&node["expression"], depth)?;
        match set.get("kind").and_then(Value::as_str) {
            Some("literal") => keys(set, &["kind", "value_ref"], "in.set")?,
            Some("external") => {
                keys(
                    set,
                    &["kind", "batch_index", "column_index", "column_name"],
                    "in.set",
                )?;
                return Ok(Err(
                    "IN over join keys is not evaluated by this worker".into()
                ));
            }
            _ => {
                return Err(errors::filter(
                    "in.set.kind must be 'literal' or 'external'",
                ))
            }
        }
        let (list, extension) = self.payload(&set["value_ref"])?;
        if extension.is_some() {
            return Ok(Err(
                "IN over an extension-typed list is not evaluated by this worker".into(),
            ));
        }
        if list.is_null(0) {
            return Err(errors::filter("an IN set literal must not be NULL"));
        }
        let candidates = match list.data_type() {
            DataType::List(_) => list.as_list::<i32>().value(0),
            DataType::LargeList(_) => list.as_list::<i64>().value(0),
            other => {
                return Err(errors::filter(format!(
                    "an IN set literal must be a list, got {other}"
                )))
            }
        };
        if candidates.len() > FILTER_IN_SET_VALUES_MAX {
            return Ok(Err(format!(
                "IN sets of more than {FILTER_IN_SET_VALUES_MAX} values are not evaluated"
            )));
        }
        Ok(tested.and_then(|tested| {
            let common = comparable(&tested.data_type(), candidates.data_type())?;
            let candidates = arrow_cast::cast(&candidates, &common).map_err(|e| e.to_string())?;
            Ok(Expr::In {
                expr: Box::new(tested),
                candidates,
                negated,
                common,
            })
        }))
    }
}

/// The type two operands are compared in, or why they cannot be.
fn comparable(left: &DataType, right: &DataType) -> Result<DataType, String> {
    if !is_comparable(left) || !is_comparable(right) {
        return Err(format!(
            "comparing {left} with {right} is not evaluated by this worker"
        ));
    }
    common_type(left, right)
        .ok_or_else(|| format!("comparing {left} with {right} is not evaluated by this worker"))
}

fn boolean(expr: Expr, parent: &str) -> Parsed {
    match expr.data_type() {
        DataType::Boolean => Ok(expr),
        other => Err(format!("{parent} input resolves to {other}, not BOOLEAN")),
    }
}

/// A literal normalised to its storage type: `arrow.bool8` is a BOOLEAN stored
/// as int8; other known extensions are declined, unknown ones are errors.
fn storage(
    value: ArrayRef,
    extension: Option<&str>,
) -> Result<Result<ArrayRef, String>, ErrorReport> {
    match extension {
        None => Ok(Ok(value)),
        Some("arrow.bool8") => {
            Ok(arrow_cast::cast(&value, &DataType::Boolean).map_err(|e| e.to_string()))
        }
        Some(known @ ("arrow.json" | "arrow.uuid")) => {
            Ok(Err(format!("{known} literals are not evaluated")))
        }
        Some(geo) if geo.starts_with("geoarrow.") => {
            Ok(Err(format!("{geo} literals are not evaluated")))
        }
        Some(other) => Err(errors::filter(format!(
            "unknown Arrow extension type {other:?}"
        ))),
    }
}

pub(crate) fn object<'v>(
    value: &'v Value,
    where_: &str,
) -> Result<&'v Map<String, Value>, ErrorReport> {
    value
        .as_object()
        .ok_or_else(|| errors::filter(format!("{where_} must be a JSON object")))
}

pub(crate) fn string<'v>(value: &'v Value, where_: &str) -> Result<&'v str, ErrorReport> {
    value
        .as_str()
        .ok_or_else(|| errors::filter(format!("{where_} must be a string")))
}

/// Exactly `expected` keys: missing and unknown ones are both errors.
pub(crate) fn keys(
    object: &Map<String, Value>,
    expected: &[&str],
    where_: &str,
) -> Result<(), ErrorReport> {
    if let Some(missing) = expected.iter().find(|k| !object.contains_key(**k)) {
        return Err(errors::filter(format!("{where_} is missing {missing:?}")));
    }
    if let Some(unknown) = object.keys().find(|k| !expected.contains(&k.as_str())) {
        return Err(errors::filter(format!(
            "{where_} has unknown property {unknown:?}"
        )));
    }
    Ok(())
}
