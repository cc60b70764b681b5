//! Arrow types DuckDB 2.0.0 cannot scan that an insert widens first, without loss: half floats
//! become `float32` (every half value is a single value), also inside lists, structs and maps.
//! DuckDB then makes and fills a `FLOAT` column. Other types it cannot scan (a decimal256 over 38
//! digits, a dense union) are refused by DuckDB with its own error naming the type.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use quiver_server_protocol::errors;
use quiver_wire::ErrorReport;

/// The schema DuckDB is given for batches of `schema`; `None` when it needs no widening.
pub(crate) fn widened(schema: &SchemaRef) -> Option<SchemaRef> {
    let fields: Vec<FieldRef> = schema.fields().iter().map(widen_field).collect();
    if fields
        .iter()
        .zip(schema.fields())
        .all(|(new, old)| new == old)
    {
        return None;
    }
    Some(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// `batch` under `schema` (from [`widened`]): each column cast to its wider type.
pub(crate) fn widen(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ErrorReport> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| arrow_cast::cast(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| errors::protocol(format!("widening an insert batch: {error}")))?;
    RecordBatch::try_new(Arc::clone(schema), columns)
        .map_err(|error| errors::protocol(format!("widening an insert batch: {error}")))
}

fn widen_field(field: &FieldRef) -> FieldRef {
    let data_type = widen_type(field.data_type());
    if &data_type == field.data_type() {
        return Arc::clone(field);
    }
    Arc::new(Field::clone(field).with_data_type(data_type))
}

fn widen_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Float16 => DataType::Float32,
        DataType::List(item) => DataType::List(widen_field(item)),
        DataType::LargeList(item) => DataType::LargeList(widen_field(item)),
        DataType::FixedSizeList(item, size) => DataType::FixedSizeList(widen_field(item), *size),
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(widen_field).collect::<Fields>())
        }
        DataType::Map(entries, sorted) => DataType::Map(widen_field(entries), *sorted),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Float32Array, Int32Array};

    #[test]
    fn half_floats_widen_exactly_and_other_columns_stay() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("h", DataType::Float16, true),
            Field::new("i", DataType::Int32, false),
        ]));
        let wide = widened(&schema).expect("a half float column widens");
        assert_eq!(wide.field(0).data_type(), &DataType::Float32);
        assert_eq!(wide.field(1), schema.field(1));
        let floats = Float32Array::from(vec![Some(1.5), None, Some(65504.0)]);
        let halves = arrow_cast::cast(&floats, &DataType::Float16).unwrap();
        let batch = RecordBatch::try_new(
            schema,
            vec![halves, Arc::new(Int32Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let batch = widen(&batch, &wide).unwrap();
        let floats = batch
            .column(0)
            .as_any()
            .downcast_ref::<Float32Array>()
            .unwrap();
        assert_eq!(floats.value(0), 1.5);
        assert!(floats.is_null(1));
        assert_eq!(floats.value(2), 65504.0);
    }

    #[test]
    fn a_schema_without_half_floats_needs_nothing() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
            true,
        )]));
        assert!(widened(&schema).is_none());
    }
}
