//! A lookup's other filters over the rows its index found: each `column <op> value` evaluated
//! with Arrow's comparison kernels on the column's own type (a NULL passes no comparison, as in
//! the statement's `WHERE`).

use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Datum, Int64Array, RecordBatch, StringArray,
    UInt32Array,
};
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType};
use arrow_select::take::take;

use super::key::{self, KeyPart};
use crate::compile::lookup::Residual;
use crate::project::{ColumnType, FilterOp};

/// The positions among `positions` whose rows pass every residual filter; `None` when a value
/// cannot be compared here (the statement runs).
pub fn filter(
    rows: &RecordBatch,
    positions: &[u32],
    residual: &[Residual],
) -> Option<Result<Vec<u32>, ArrowError>> {
    if residual.is_empty() {
        return Some(Ok(positions.to_vec()));
    }
    let scalars: Vec<ArrayRef> = residual
        .iter()
        .map(|condition| scalar(condition.column_type, &condition.value))
        .collect::<Option<_>>()?;
    Some(apply(rows, positions, residual, &scalars))
}

/// Whether every residual value can be compared here.
pub fn comparable(residual: &[Residual]) -> bool {
    residual
        .iter()
        .all(|condition| scalar(condition.column_type, &condition.value).is_some())
}

fn apply(
    rows: &RecordBatch,
    positions: &[u32],
    residual: &[Residual],
    scalars: &[ArrayRef],
) -> Result<Vec<u32>, ArrowError> {
    let at = UInt32Array::from(positions.to_vec());
    let mut passed = vec![true; positions.len()];
    for (condition, value) in residual.iter().zip(scalars) {
        let column = rows.column_by_name(&condition.column).ok_or_else(|| {
            ArrowError::SchemaError(format!("the snapshot has no column {}", condition.column))
        })?;
        let found = widened(take(column.as_ref(), &at, None)?, condition.column_type)?;
        let value = arrow_array::Scalar::new(value.clone());
        let test = compare(condition.op, &found, &value)?;
        for (row, pass) in passed.iter_mut().enumerate() {
            *pass &= test.is_valid(row) && test.value(row);
        }
    }
    Ok(positions
        .iter()
        .zip(&passed)
        .filter(|(_, pass)| **pass)
        .map(|(position, _)| *position)
        .collect())
}

/// `value` as a one-element array of the type its column is compared in.
fn scalar(column_type: ColumnType, value: &crate::value::Value) -> Option<ArrayRef> {
    let part = key::of_value(value, column_type)?;
    Some(match (column_type, part) {
        (ColumnType::Integer | ColumnType::Bigint, KeyPart::Int(value)) => {
            std::sync::Arc::new(Int64Array::from(vec![value]))
        }
        (ColumnType::Date, KeyPart::Int(days)) => {
            std::sync::Arc::new(Date32Array::from(vec![i32::try_from(days).ok()?]))
        }
        (ColumnType::Varchar, KeyPart::Str(text)) => {
            std::sync::Arc::new(StringArray::from(vec![text.as_ref()]))
        }
        (ColumnType::Boolean, KeyPart::Bool(value)) => {
            std::sync::Arc::new(BooleanArray::from(vec![value]))
        }
        _ => return None,
    })
}

/// A column's values in the type its scalar has: integers widened to 64 bits (as the statement
/// compares an INTEGER with a BIGINT value), text as plain UTF-8.
fn widened(values: ArrayRef, column_type: ColumnType) -> Result<ArrayRef, ArrowError> {
    let wanted = match column_type {
        ColumnType::Integer | ColumnType::Bigint => DataType::Int64,
        ColumnType::Varchar => DataType::Utf8,
        ColumnType::Date => DataType::Date32,
        _ => return Ok(values),
    };
    if values.data_type() == &wanted {
        Ok(values)
    } else {
        arrow_cast::cast(&values, &wanted)
    }
}

fn compare(op: FilterOp, left: &dyn Datum, right: &dyn Datum) -> Result<BooleanArray, ArrowError> {
    match op {
        FilterOp::Eq => cmp::eq(left, right),
        FilterOp::Ne => cmp::neq(left, right),
        FilterOp::Lt => cmp::lt(left, right),
        FilterOp::Lte => cmp::lt_eq(left, right),
        FilterOp::Gt => cmp::gt(left, right),
        FilterOp::Gte => cmp::gt_eq(left, right),
        other => Err(ArrowError::InvalidArgumentError(format!(
            "{other:?} is not a lookup's comparison"
        ))),
    }
}
