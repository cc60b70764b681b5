//! Builders for one-row values of nested types (lists, maps, structs, enums).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ListArray, MapArray, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields};

use crate::types::enum_type;

/// One row holding the list of `items`.
pub fn list_row(items: ArrayRef) -> ArrayRef {
    let offsets = OffsetBuffer::from_lengths([items.len()]);
    let field = Arc::new(Field::new("item", items.data_type().clone(), true));
    Arc::new(ListArray::new(field, offsets, items, None))
}

/// One row holding the map `keys[i] -> values[i]`.
pub fn map_row(keys: &[&str], values: ArrayRef) -> ArrayRef {
    assert_eq!(keys.len(), values.len(), "a map needs one value per key");
    let entry_fields = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", values.data_type().clone(), true),
    ]);
    let keys: ArrayRef = Arc::new(StringArray::from(keys.to_vec()));
    let entries = StructArray::new(entry_fields.clone(), vec![keys, values], None);
    let field = Arc::new(Field::new("entries", DataType::Struct(entry_fields), false));
    Arc::new(MapArray::new(
        field,
        OffsetBuffer::from_lengths([entries.len()]),
        entries,
        None,
        false,
    ))
}

/// Points (as `struct<x, y>`), one element each; `None` makes a null element.
pub fn points(values: &[Option<(f64, f64)>]) -> ArrayRef {
    let fields = Fields::from(vec![
        Field::new("x", DataType::Float64, false),
        Field::new("y", DataType::Float64, false),
    ]);
    let x: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter_values(
        values.iter().map(|p| p.map_or(0.0, |p| p.0)),
    ));
    let y: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter_values(
        values.iter().map(|p| p.map_or(0.0, |p| p.1)),
    ));
    let nulls = values
        .iter()
        .any(Option::is_none)
        .then(|| values.iter().map(Option::is_some).collect());
    Arc::new(StructArray::new(fields, vec![x, y], nulls))
}

/// Enum members (by name) as `dictionary<int16, utf8>`.
pub fn statuses(names: &[Option<&str>]) -> ArrayRef {
    let strings = StringArray::from(names.to_vec());
    arrow_cast::cast(&strings, &enum_type()).expect("utf8 casts to a dictionary")
}
