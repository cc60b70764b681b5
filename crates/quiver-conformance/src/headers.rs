//! Header values: `ConformanceHeader` and the `RichHeader` built from a seed.

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use quiver_wire::ErrorReport;

use crate::build::{list_row, map_row, points, statuses};
use crate::types::{conformance_header_schema, rich_header_schema, STATUS_MEMBERS};

/// `ConformanceHeader{total_expected, description}` as a one-row batch.
pub fn conformance_header(total_expected: i64, description: String) -> RecordBatch {
    RecordBatch::try_new(
        conformance_header_schema(),
        vec![
            Arc::new(Int64Array::from(vec![total_expected])),
            Arc::new(StringArray::from(vec![description])),
        ],
    )
    .expect("header columns match their schema")
}

/// `RichHeader(seed)`: every field a deterministic function of the seed.
pub fn rich_header(seed: i64) -> Result<RecordBatch, ErrorReport> {
    let seed_f = seed as f64;
    let byte = |k: i64| (seed + k).rem_euclid(256) as u8;
    let bytes = [byte(0), byte(1), byte(2)];
    let mut nested_list = ListBuilder::new(ListBuilder::new(Int64Builder::new()));
    nested_list
        .values()
        .values()
        .append_slice(&[seed, seed + 1]);
    nested_list.values().append(true);
    nested_list.values().values().append_slice(&[seed + 2]);
    nested_list.values().append(true);
    nested_list.append(true);

    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![format!("seed-{seed}")])),
        Arc::new(BinaryArray::from(vec![Some(&bytes[..])])),
        Arc::new(Int64Array::from(vec![seed * 7])),
        Arc::new(Float64Array::from(vec![seed_f * 1.5])),
        Arc::new(BooleanArray::from(vec![seed % 2 == 0])),
        list_row(Arc::new(Int64Array::from(vec![seed, seed + 1, seed + 2]))),
        list_row(Arc::new(StringArray::from(vec![
            format!("item-{seed}"),
            format!("item-{}", seed + 1),
        ]))),
        map_row(
            &["a", "b"],
            Arc::new(Int64Array::from(vec![seed, seed + 1])),
        ),
        statuses(&[Some(STATUS_MEMBERS[seed.rem_euclid(3) as usize].0)]),
        points(&[Some((seed_f, seed_f * 2.0))]),
        Arc::new(StringArray::from(vec![
            (seed % 2 == 0).then(|| format!("opt-{seed}"))
        ])),
        Arc::new(Int64Array::from(vec![(seed % 2 != 0).then_some(seed * 3)])),
        points(&[(seed % 3 == 0).then_some((seed_f, 0.0))]),
        list_row(points(&[Some((seed_f, seed_f + 1.0))])),
        Arc::new(nested_list.finish()),
        Arc::new(Int32Array::from(vec![(seed % 1000) as i32])),
        Arc::new(Float32Array::from(vec![(seed_f / 3.0) as f32])),
        map_row(
            &["key"],
            Arc::new(StringArray::from(vec![format!("val-{seed}")])),
        ),
    ];
    conform(rich_header_schema(), columns)
}

/// Casts columns to the schema's exact types (field names and nullability of
/// nested children) and builds the batch.
pub fn conform(
    schema: arrow_schema::SchemaRef,
    columns: Vec<ArrayRef>,
) -> Result<RecordBatch, ErrorReport> {
    let columns = columns
        .into_iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                Ok(column)
            } else {
                arrow_cast::cast(&column, field.data_type()).map_err(|e| {
                    ErrorReport::new("RuntimeError", format!("field {}: {e}", field.name()))
                })
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema, columns)
        .map_err(|e| ErrorReport::new("RuntimeError", e.to_string()))
}
