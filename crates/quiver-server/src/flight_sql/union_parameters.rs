//! Parameters sent as unions. Some Flight SQL clients send each parameter as a union column, so
//! that any Python value fits (flightsql-dbapi packs every value into a one-row dense union of
//! int64, float64, utf8, binary and bool). DuckDB cannot bind a union, so each union column is
//! resolved here into the column of its rows' active child: one type per parameter, the rows whose
//! active child is of Arrow's null type becoming nulls of it. Rows of one parameter whose values
//! have different types are refused with the parameter named.

use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, NullArray, RecordBatch, UnionArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, UnionMode};
use tonic::Status;

/// `batch` with its union columns resolved; the batch itself when it has none.
pub fn resolve(batch: RecordBatch) -> Result<RecordBatch, Status> {
    let schema = batch.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Union(..)))
    {
        return Ok(batch);
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        let resolved = match column.as_any().downcast_ref::<UnionArray>() {
            Some(union) => active_values(field.name(), union)?,
            None => Arc::clone(column),
        };
        fields.push(Field::new(
            field.name(),
            resolved.data_type().clone(),
            field.is_nullable() || resolved.null_count() > 0 || resolved.data_type().is_null(),
        ));
        columns.push(resolved);
    }
    let schema: SchemaRef = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    RecordBatch::try_new(schema, columns)
        .map_err(|e| Status::invalid_argument(format!("parameters: {e}")))
}

/// The values of `union`'s rows, each taken from its active child.
fn active_values(name: &str, union: &UnionArray) -> Result<ArrayRef, Status> {
    let DataType::Union(union_fields, mode) = union.data_type() else {
        unreachable!("a UnionArray has a union type");
    };
    let dense = *mode == UnionMode::Dense;
    let mut value_type: Option<&DataType> = None;
    for row in 0..union.len() {
        let child = union.child(union.type_id(row));
        if child.data_type().is_null() {
            continue;
        }
        match value_type {
            None => value_type = Some(child.data_type()),
            Some(seen) if seen != child.data_type() => {
                return Err(Status::invalid_argument(format!(
                    "parameter {name}: its rows have values of different types ({seen} and {}); \
                     send one type per parameter",
                    child.data_type()
                )))
            }
            Some(_) => {}
        }
    }
    let Some(value_type) = value_type else {
        return Ok(Arc::new(NullArray::new(union.len())));
    };
    // Sources: each child of the value type, then one null of it for the null-typed rows.
    let children: Vec<(i8, ArrayRef)> = union_fields
        .iter()
        .map(|(id, _)| (id, Arc::clone(union.child(id))))
        .filter(|(_, child)| child.data_type() == value_type)
        .collect();
    let null = new_null_array(value_type, 1);
    let mut sources: Vec<&dyn Array> = children.iter().map(|(_, c)| c.as_ref()).collect();
    sources.push(null.as_ref());
    let indices: Vec<(usize, usize)> = (0..union.len())
        .map(|row| {
            let id = union.type_id(row);
            let offset = if dense { union.value_offset(row) } else { row };
            children
                .iter()
                .position(|(child_id, _)| *child_id == id)
                .map_or((sources.len() - 1, 0), |source| (source, offset))
        })
        .collect();
    arrow_select::interleave::interleave(&sources, &indices)
        .map_err(|e| Status::invalid_argument(format!("parameter {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::UnionFields;

    fn fields() -> UnionFields {
        UnionFields::try_new(
            [0, 1, 2],
            [
                Field::new("int", DataType::Int64, true),
                Field::new("str", DataType::Utf8, true),
                Field::new("none", DataType::Null, true),
            ],
        )
        .unwrap()
    }

    fn dense(type_ids: Vec<i8>, offsets: Vec<i32>, ints: Vec<i64>, strs: Vec<&str>) -> ArrayRef {
        let children: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ints)),
            Arc::new(StringArray::from(strs)),
            Arc::new(NullArray::new(1)),
        ];
        Arc::new(
            UnionArray::try_new(fields(), type_ids.into(), Some(offsets.into()), children).unwrap(),
        )
    }

    #[test]
    fn each_row_takes_its_active_child_and_null_rows_are_nulls() {
        let ints = dense(vec![0, 2, 0], vec![1, 0, 0], vec![7, 42], vec![]);
        let text = dense(vec![1], vec![0], vec![], vec!["x"]);
        let batch = RecordBatch::try_from_iter([("a", ints)]).unwrap();
        let resolved = resolve(batch).unwrap();
        let column = resolved
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(
            column.iter().collect::<Vec<_>>(),
            vec![Some(42), None, Some(7)]
        );
        let batch = RecordBatch::try_from_iter([("b", text)]).unwrap();
        let resolved = resolve(batch).unwrap();
        assert_eq!(resolved.schema().field(0).data_type(), &DataType::Utf8);
    }

    #[test]
    fn rows_of_different_types_are_refused_with_the_parameter_named() {
        let mixed = dense(vec![0, 1], vec![0, 0], vec![1], vec!["x"]);
        let batch = RecordBatch::try_from_iter([("p", mixed)]).unwrap();
        let refused = resolve(batch).unwrap_err();
        assert!(refused.message().contains("parameter p"), "{refused}");
    }

    #[test]
    fn sparse_unions_resolve_too() {
        let children: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![5, 0])),
            Arc::new(StringArray::from(vec!["", ""])),
            Arc::new(NullArray::new(2)),
        ];
        let sparse = UnionArray::try_new(fields(), vec![0i8, 2].into(), None, children).unwrap();
        let batch = RecordBatch::try_from_iter([("s", Arc::new(sparse) as ArrayRef)]).unwrap();
        let resolved = resolve(batch).unwrap();
        let column = resolved
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(column.iter().collect::<Vec<_>>(), vec![Some(5), None]);
    }
}
