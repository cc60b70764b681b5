//! Evaluating parsed filter predicates over a batch with SQL's three-valued
//! logic, on arrow-rs kernels: comparisons are `arrow_ord::cmp` (vectorised),
//! AND / OR / NOT work on whole bitmaps, IN hashes large integer and string
//! sets. A predicate never allocates per row except IN's hash probe.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, Datum, RecordBatch, Scalar};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;
use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;

use crate::filter_expr::{CmpOp, Expr};

/// IN sets up to this size compare candidate by candidate; larger ones hash.
const IN_LINEAR_CANDIDATES_MAX: usize = 8;

/// The row mask of `predicates` (ANDed) over `batch`: TRUE keeps a row, FALSE
/// and NULL drop it.
pub fn mask(predicates: &[Expr], batch: &RecordBatch) -> Result<BooleanArray, ErrorReport> {
    let rows = batch.num_rows();
    let mut result: Option<BooleanArray> = None;
    for predicate in predicates {
        let value = boolean(eval(predicate, batch)?, rows)?;
        result = Some(match result {
            None => value,
            Some(previous) => and(&previous, &value),
        });
    }
    Ok(result.unwrap_or_else(|| BooleanArray::from(vec![true; rows])))
}

/// A value during evaluation: a column-length array, or one element that stands
/// for every row.
enum Value {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Value {
    fn cast(self, to: &DataType) -> Result<Value, ErrorReport> {
        let cast = |array: ArrayRef| -> Result<ArrayRef, ErrorReport> {
            if array.data_type() == to {
                return Ok(array);
            }
            arrow_cast::cast(&array, to)
                .map_err(|e| errors::internal(format!("filter cast to {to}: {e}")))
        };
        Ok(match self {
            Value::Array(array) => Value::Array(cast(array)?),
            Value::Scalar(array) => Value::Scalar(cast(array)?),
        })
    }

    fn datum(&self) -> Box<dyn Datum + '_> {
        match self {
            Value::Array(array) => Box::new(array.clone()),
            Value::Scalar(array) => Box::new(Scalar::new(array.clone())),
        }
    }
}

fn eval(expr: &Expr, batch: &RecordBatch) -> Result<Value, ErrorReport> {
    let rows = batch.num_rows();
    Ok(match expr {
        Expr::Column { index, .. } => Value::Array(batch.column(*index).clone()),
        Expr::Literal(value) => Value::Scalar(value.clone()),
        Expr::Compare {
            op,
            left,
            right,
            common,
        } => {
            let left = eval(left, batch)?.cast(common)?;
            let right = eval(right, batch)?.cast(common)?;
            let result = compare(*op, left.datum().as_ref(), right.datum().as_ref())?;
            match (&left, &right) {
                (Value::Scalar(_), Value::Scalar(_)) => Value::Scalar(Arc::new(result)),
                _ => Value::Array(Arc::new(result)),
            }
        }
        Expr::And(children) | Expr::Or(children) => {
            let is_and = matches!(expr, Expr::And(_));
            let mut result = boolean(eval(&children[0], batch)?, rows)?;
            for child in &children[1..] {
                let next = boolean(eval(child, batch)?, rows)?;
                result = if is_and {
                    and(&result, &next)
                } else {
                    or(&result, &next)
                };
            }
            Value::Array(Arc::new(result))
        }
        Expr::Not(child) => Value::Array(Arc::new(not(&boolean(eval(child, batch)?, rows)?))),
        Expr::IsNull { expr, negated } => {
            let array = broadcast(eval(expr, batch)?, rows);
            let valid = match array.logical_nulls() {
                Some(nulls) => nulls.inner().clone(),
                None => BooleanBuffer::new_set(rows),
            };
            let values = if *negated { valid } else { !&valid };
            Value::Array(Arc::new(BooleanArray::new(values, None)))
        }
        Expr::In {
            expr,
            candidates,
            negated,
            common,
        } => {
            let tested = broadcast(eval(expr, batch)?.cast(common)?, rows);
            let result = in_list(&tested, candidates)?;
            Value::Array(Arc::new(if *negated { not(&result) } else { result }))
        }
    })
}

fn compare(op: CmpOp, left: &dyn Datum, right: &dyn Datum) -> Result<BooleanArray, ErrorReport> {
    use arrow_ord::cmp;
    let result = match op {
        CmpOp::Eq => cmp::eq(left, right),
        CmpOp::Ne => cmp::neq(left, right),
        CmpOp::Lt => cmp::lt(left, right),
        CmpOp::Le => cmp::lt_eq(left, right),
        CmpOp::Gt => cmp::gt(left, right),
        CmpOp::Ge => cmp::gt_eq(left, right),
        CmpOp::DistinctFrom => cmp::distinct(left, right),
        CmpOp::NotDistinctFrom => cmp::not_distinct(left, right),
    };
    result.map_err(|e| errors::internal(format!("filter comparison: {e}")))
}

/// SQL IN: TRUE on a match; otherwise NULL if the tested value is NULL or a
/// candidate is NULL; otherwise FALSE. An empty set is FALSE for every row.
fn in_list(tested: &ArrayRef, candidates: &ArrayRef) -> Result<BooleanArray, ErrorReport> {
    let rows = tested.len();
    if candidates.is_empty() {
        return Ok(BooleanArray::from(vec![false; rows]));
    }
    if candidates.len() > IN_LINEAR_CANDIDATES_MAX {
        if let Some(result) = in_hashed(tested, candidates) {
            return Ok(result);
        }
    }
    // OR over `tested = candidate` gives exactly SQL's IN under three-valued logic.
    let mut result: Option<BooleanArray> = None;
    for index in 0..candidates.len() {
        let candidate = candidates.slice(index, 1);
        let equal = compare(CmpOp::Eq, tested, &Scalar::new(candidate))?;
        result = Some(match result {
            None => equal,
            Some(previous) => or(&previous, &equal),
        });
    }
    Ok(result.expect("at least one candidate"))
}

/// IN by hash probe, for the types where that is cheap; `None` otherwise.
fn in_hashed(tested: &ArrayRef, candidates: &ArrayRef) -> Option<BooleanArray> {
    let candidate_null = candidates.null_count() > 0;
    let finish = |hits: Vec<Option<bool>>| -> BooleanArray {
        hits.into_iter()
            .map(|hit| match hit {
                None => None,
                Some(true) => Some(true),
                Some(false) if candidate_null => None,
                Some(false) => Some(false),
            })
            .collect()
    };
    match tested.data_type() {
        DataType::Int64 => {
            let set: HashSet<i64> = candidates
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .collect();
            let hits = tested
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.map(|v| set.contains(&v)));
            Some(finish(hits.collect()))
        }
        DataType::UInt64 => {
            let set: HashSet<u64> = candidates
                .as_primitive::<UInt64Type>()
                .iter()
                .flatten()
                .collect();
            let hits = tested
                .as_primitive::<UInt64Type>()
                .iter()
                .map(|v| v.map(|v| set.contains(&v)));
            Some(finish(hits.collect()))
        }
        DataType::Utf8 => {
            let set: HashSet<&str> = candidates.as_string::<i32>().iter().flatten().collect();
            let hits = tested
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(|v| set.contains(v)));
            Some(finish(hits.collect()))
        }
        _ => None,
    }
}

/// A BOOLEAN value as a column-length array.
fn boolean(value: Value, rows: usize) -> Result<BooleanArray, ErrorReport> {
    let array = broadcast(value, rows);
    match array.data_type() {
        DataType::Boolean => Ok(array.as_boolean().clone()),
        other => Err(errors::internal(format!(
            "filter predicate evaluated to {other}"
        ))),
    }
}

fn broadcast(value: Value, rows: usize) -> ArrayRef {
    match value {
        Value::Array(array) => array,
        Value::Scalar(scalar) if scalar.is_null(0) => new_null_array(scalar.data_type(), rows),
        Value::Scalar(scalar) => {
            let indices = arrow_array::UInt32Array::from(vec![0u32; rows]);
            arrow_select::take::take(scalar.as_ref(), &indices, None)
                .expect("index 0 of a one-element array")
        }
    }
}

fn valid_bits(array: &BooleanArray) -> BooleanBuffer {
    match array.nulls() {
        Some(nulls) => nulls.inner().clone(),
        None => BooleanBuffer::new_set(array.len()),
    }
}

/// Three-valued AND: FALSE wins over NULL.
pub(crate) fn and(a: &BooleanArray, b: &BooleanArray) -> BooleanArray {
    let (a_valid, b_valid) = (valid_bits(a), valid_bits(b));
    let a_false = &a_valid & &!a.values();
    let b_false = &b_valid & &!b.values();
    let valid = &(&(&a_valid & &b_valid) | &a_false) | &b_false;
    BooleanArray::new(a.values() & b.values(), Some(NullBuffer::new(valid)))
}

/// Three-valued OR: TRUE wins over NULL.
pub(crate) fn or(a: &BooleanArray, b: &BooleanArray) -> BooleanArray {
    let (a_valid, b_valid) = (valid_bits(a), valid_bits(b));
    let a_true = &a_valid & a.values();
    let b_true = &b_valid & b.values();
    let valid = &(&(&a_valid & &b_valid) | &a_true) | &b_true;
    BooleanArray::new(&a_true | &b_true, Some(NullBuffer::new(valid)))
}

/// Three-valued NOT: NULL stays NULL.
pub(crate) fn not(a: &BooleanArray) -> BooleanArray {
    BooleanArray::new(!a.values(), a.nulls().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bools(values: &[Option<bool>]) -> BooleanArray {
        values.iter().copied().collect()
    }

    #[test]
    fn three_valued_logic() {
        let t = Some(true);
        let f = Some(false);
        let n = None;
        let a = bools(&[t, t, t, f, f, f, n, n, n]);
        let b = bools(&[t, f, n, t, f, n, t, f, n]);
        let got: Vec<Option<bool>> = and(&a, &b).iter().collect();
        assert_eq!(got, [t, f, n, f, f, f, n, f, n]);
        let got: Vec<Option<bool>> = or(&a, &b).iter().collect();
        assert_eq!(got, [t, t, t, t, f, n, t, n, n]);
        let got: Vec<Option<bool>> = not(&a).iter().collect();
        assert_eq!(got, [f, f, f, t, t, t, n, n, n]);
    }

    #[test]
    fn in_follows_sql() {
        let tested: ArrayRef =
            Arc::new(arrow_array::Int64Array::from(vec![Some(1), Some(2), None]));
        let with_null: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(1), None]));
        let got: Vec<Option<bool>> = in_list(&tested, &with_null).unwrap().iter().collect();
        assert_eq!(got, [Some(true), None, None]);
        let plain: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1]));
        let got: Vec<Option<bool>> = in_list(&tested, &plain).unwrap().iter().collect();
        assert_eq!(got, [Some(true), Some(false), None]);
        let empty: ArrayRef = Arc::new(arrow_array::Int64Array::from(Vec::<i64>::new()));
        let got: Vec<Option<bool>> = in_list(&tested, &empty).unwrap().iter().collect();
        assert_eq!(got, [Some(false), Some(false), Some(false)]);
        // The hashed path agrees with the linear one.
        let many: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter(
            (0..20).map(|v| (v != 5).then_some(v * 10)),
        ));
        let probe: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![
            Some(10),
            Some(11),
            None,
        ]));
        let got: Vec<Option<bool>> = in_list(&probe, &many).unwrap().iter().collect();
        assert_eq!(got, [Some(true), None, None]);
    }
}
