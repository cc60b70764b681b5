//! The total order of a response and keyset pagination over it: the predicate for "rows after
//! the cursor's row", and the next cursor built from a page's last row.

use crate::value::Value;
use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType};

use super::cursor::{self, Cursor, CursorValue};
use super::{bind, quote, Compiled, OrderKey, Page, ParamError};
use crate::project::ColumnType;

/// The requested order, then every other orderable output ascending: a total order over
/// distinct rows (JSON outputs have no order).
pub(super) fn total_order(
    sort: &[(String, bool)],
    outputs: &[(String, ColumnType)],
) -> Vec<OrderKey> {
    let type_of = |name: &str| {
        outputs
            .iter()
            .find(|(output, _)| output == name)
            .map(|(_, column_type)| *column_type)
            .expect("sort and order_by name outputs (checked at load)")
    };
    let mut order: Vec<OrderKey> = sort
        .iter()
        .map(|(name, descending)| OrderKey {
            output: name.clone(),
            descending: *descending,
            column_type: type_of(name),
        })
        .collect();
    for (output, column_type) in outputs {
        if *column_type != ColumnType::Json && order.iter().all(|key| &key.output != output) {
            order.push(OrderKey {
                output: output.clone(),
                descending: false,
                column_type: *column_type,
            });
        }
    }
    order
}

/// Rows strictly after `after` in `order` (NULLs last in both directions):
/// `k1 after v1 OR (k1 = v1 AND k2 after v2) OR …`, where "after v" is `> v` (or `< v`
/// descending) or NULL, nothing is after a NULL, and "= NULL" is `IS NULL`.
pub(super) fn after_predicate(
    order: &[OrderKey],
    after: &[CursorValue],
    values: &mut Vec<Value>,
) -> Result<String, ParamError> {
    assert_eq!(order.len(), after.len());
    let mut bound: Vec<Option<String>> = Vec::with_capacity(order.len());
    for (key, value) in order.iter().zip(after) {
        let typed = cursor_bind(key.column_type, value)?;
        bound.push(typed.map(|(value, cast)| bind(values, value, cast)));
    }
    let mut terms = Vec::new();
    for (index, key) in order.iter().enumerate() {
        let Some(placeholder) = &bound[index] else {
            continue; // Nothing sorts after NULL.
        };
        let mut parts = Vec::with_capacity(index + 1);
        for (earlier, earlier_bound) in order[..index].iter().zip(&bound) {
            let column = quote(&earlier.output);
            parts.push(match earlier_bound {
                None => format!("{column} IS NULL"),
                Some(placeholder) => format!("{column} = {placeholder}"),
            });
        }
        let column = quote(&key.output);
        let operator = if key.descending { "<" } else { ">" };
        parts.push(format!(
            "({column} {operator} {placeholder} OR {column} IS NULL)"
        ));
        terms.push(format!("({})", parts.join(" AND ")));
    }
    Ok(if terms.is_empty() {
        "FALSE".to_string()
    } else {
        format!("({})", terms.join(" OR "))
    })
}

/// A cursor value as a bound value of its key's type; a mismatch is a forged or stale cursor.
fn cursor_bind(
    column_type: ColumnType,
    value: &CursorValue,
) -> Result<Option<(Value, Option<&'static str>)>, ParamError> {
    Ok(Some(match (column_type, value) {
        (_, CursorValue::Null) => return Ok(None),
        (ColumnType::Integer | ColumnType::Bigint, CursorValue::Int(value)) => {
            (Value::I64(*value), None)
        }
        (ColumnType::Double, CursorValue::Text(text)) => (
            Value::F64(text.parse().map_err(|_| cursor::invalid())?),
            None,
        ),
        (ColumnType::Varchar, CursorValue::Text(text)) => (Value::Str(text.clone()), None),
        (ColumnType::Date, CursorValue::Text(text)) => (Value::Str(text.clone()), Some("DATE")),
        (ColumnType::Timestamp, CursorValue::Text(text)) => {
            (Value::Str(text.clone()), Some("TIMESTAMP"))
        }
        (ColumnType::Boolean, CursorValue::Bool(value)) => (Value::Bool(*value), None),
        _ => return Err(cursor::invalid()),
    }))
}

impl Compiled {
    /// The response's total order: each key's output column and whether it descends (NULLs
    /// last either way).
    pub fn order_keys(&self) -> impl Iterator<Item = (&str, bool)> {
        self.order
            .iter()
            .map(|key| (key.output.as_str(), key.descending))
    }

    /// Cuts the statement's result to the page: at most `limit` rows, only the caller's columns,
    /// and a next cursor when the statement found one row more.
    pub fn finish(&self, batches: Vec<RecordBatch>) -> Result<Page, ArrowError> {
        let mut kept = Vec::with_capacity(batches.len());
        let mut rows = 0u64;
        let mut more = false;
        for batch in batches {
            if batch.num_columns() != self.selected.len() {
                return Err(ArrowError::SchemaError(format!(
                    "the statement yielded {} columns, expected {}",
                    batch.num_columns(),
                    self.selected.len()
                )));
            }
            let room = self.limit - rows;
            if batch.num_rows() as u64 > room {
                more = true;
                if room > 0 {
                    kept.push(batch.slice(0, room as usize));
                    rows += room;
                }
                break;
            }
            rows += batch.num_rows() as u64;
            if batch.num_rows() > 0 {
                kept.push(batch);
            }
        }
        let next_cursor = if more {
            let last = kept.last().expect("a full page has rows");
            self.next_cursor(last, last.num_rows() - 1)?
        } else {
            None
        };
        let visible: Vec<usize> = (0..self.columns.len()).collect();
        let batches = kept
            .iter()
            .map(|batch| batch.project(&visible))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            batches,
            row_count: rows,
            next_cursor,
        })
    }

    /// The cursor of the page after `row` of `batch` (a batch of the statement, all `selected`
    /// columns); `None` when the order is empty (only JSON outputs).
    pub fn next_cursor(
        &self,
        batch: &RecordBatch,
        row: usize,
    ) -> Result<Option<String>, ArrowError> {
        if self.order.is_empty() {
            return Ok(None);
        }
        let mut after = Vec::with_capacity(self.order.len());
        for key in &self.order {
            let index = self
                .selected
                .iter()
                .position(|name| name == &key.output)
                .expect("order keys are selected");
            after.push(cursor_value(
                batch.column(index).slice(row, 1).as_ref(),
                key.column_type,
            )?);
        }
        let seed = &self.cursor_seed;
        Ok(Some(cursor::encode(
            &seed.key,
            &Cursor {
                snapshot_id: seed.snapshot_id.clone(),
                endpoint: seed.endpoint.clone(),
                version: seed.version,
                shape: seed.shape.clone(),
                after,
            },
        )))
    }
}

/// The value of a one-row array as a cursor value of its key's type.
fn cursor_value(array: &dyn Array, column_type: ColumnType) -> Result<CursorValue, ArrowError> {
    if array.is_null(0) {
        return Ok(CursorValue::Null);
    }
    Ok(match column_type {
        ColumnType::Integer | ColumnType::Bigint => {
            let cast = arrow_cast::cast(array, &DataType::Int64)?;
            let values = cast
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("cast to Int64");
            CursorValue::Int(values.value(0))
        }
        ColumnType::Double => {
            let cast = arrow_cast::cast(array, &DataType::Float64)?;
            let values = cast
                .as_any()
                .downcast_ref::<Float64Array>()
                .expect("cast to Float64");
            CursorValue::Text(values.value(0).to_string())
        }
        ColumnType::Boolean => {
            let cast = arrow_cast::cast(array, &DataType::Boolean)?;
            let values = cast
                .as_any()
                .downcast_ref::<BooleanArray>()
                .expect("cast to Boolean");
            CursorValue::Bool(values.value(0))
        }
        ColumnType::Varchar | ColumnType::Date | ColumnType::Timestamp => {
            let cast = arrow_cast::cast(array, &DataType::Utf8)?;
            let values = cast
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("cast to Utf8");
            CursorValue::Text(values.value(0).to_string())
        }
        ColumnType::Json => {
            return Err(ArrowError::InvalidArgumentError(
                "a JSON column is no order key".into(),
            ));
        }
    })
}
