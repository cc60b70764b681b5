//! The Arrow shapes of the conformance protocol's types: the `Status` enum, the
//! dataclasses (`Point`, `ConformanceHeader`, `RichHeader`...), and the encoding of
//! a dataclass as a binary column holding a one-row IPC stream.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use quiver_wire::{decode_stream, encode_stream, BatchMetadata, ErrorReport, Limits};

/// Members of the `Status` enum, by name (what travels) and value (also accepted).
pub const STATUS_MEMBERS: [(&str, &str); 3] = [
    ("PENDING", "pending"),
    ("ACTIVE", "active"),
    ("CLOSED", "closed"),
];

/// `dictionary<int16, utf8>`: how an enum travels.
pub fn enum_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
}

/// `list<item: T>` with a nullable `item` child, as pyarrow builds it.
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// `map<utf8, V>` with pyarrow's field names.
pub fn map_of(value: DataType) -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", value, true),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// `Point` nested inside another type.
pub fn point_type() -> DataType {
    DataType::Struct(point_fields())
}

fn point_fields() -> Fields {
    Fields::from(vec![
        Field::new("x", DataType::Float64, false),
        Field::new("y", DataType::Float64, false),
    ])
}

/// Schema of `ConformanceHeader`.
pub fn conformance_header_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("total_expected", DataType::Int64, false),
        Field::new("description", DataType::Utf8, false),
    ]))
}

/// Schema of `RichHeader` (every wire type the framework maps).
pub fn rich_header_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("str_field", DataType::Utf8, false),
        Field::new("bytes_field", DataType::Binary, false),
        Field::new("int_field", DataType::Int64, false),
        Field::new("float_field", DataType::Float64, false),
        Field::new("bool_field", DataType::Boolean, false),
        Field::new("list_of_int", list_of(DataType::Int64), false),
        Field::new("list_of_str", list_of(DataType::Utf8), false),
        Field::new("dict_field", map_of(DataType::Int64), false),
        Field::new("enum_field", enum_type(), false),
        Field::new("nested_point", point_type(), false),
        Field::new("optional_str", DataType::Utf8, true),
        Field::new("optional_int", DataType::Int64, true),
        Field::new("optional_nested", point_type(), true),
        Field::new("list_of_nested", list_of(point_type()), false),
        Field::new("nested_list", list_of(list_of(DataType::Int64)), false),
        Field::new("annotated_int32", DataType::Int32, false),
        Field::new("annotated_float32", DataType::Float32, false),
        Field::new("dict_str_str", map_of(DataType::Utf8), false),
    ]))
}

/// Schema of `NestedContainers`.
pub fn nested_containers_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("statuses", list_of(enum_type()), false),
        Field::new("points", list_of(point_type()), false),
        Field::new("status_by_name", map_of(enum_type()), false),
        Field::new("frozen_statuses", list_of(enum_type()), false),
        Field::new("tagged_status", enum_type(), true),
        Field::new("tagged_point", point_type(), true),
        Field::new("tagged_batch", DataType::Binary, true),
    ]))
}

/// Encodes a one-row batch as the bytes of a complete IPC stream (a dataclass
/// value in a binary column).
pub fn to_ipc_bytes(batch: &RecordBatch) -> Result<Vec<u8>, ErrorReport> {
    let mut bytes = Vec::new();
    encode_stream(
        batch.schema_ref(),
        &[(batch.clone(), BatchMetadata::new())],
        &mut bytes,
    )
    .map_err(|e| ErrorReport::new("RuntimeError", format!("cannot encode value: {e}")))?;
    Ok(bytes)
}

/// Decodes a dataclass value: an IPC stream holding one one-row batch.
pub fn from_ipc_bytes(bytes: &[u8], what: &str) -> Result<RecordBatch, ErrorReport> {
    let bad = |detail: String| {
        ErrorReport::new(
            "TypeError",
            format!("{what} is not a serialized dataclass: {detail}"),
        )
    };
    let (_, mut batches) = decode_stream(Buffer::from(bytes.to_vec()), Limits::DEFAULT)
        .map_err(|e| bad(e.to_string()))?;
    if batches.len() != 1 || batches[0].0.num_rows() != 1 {
        return Err(bad(format!(
            "expected one batch of one row, got {} batches",
            batches.len()
        )));
    }
    Ok(batches.pop().expect("one batch").0)
}

/// Checks that every element of a dictionary-encoded enum array names a member.
pub fn check_status_members(array: &dyn Array, what: &str) -> Result<(), ErrorReport> {
    let strings = arrow_cast::cast(array, &DataType::Utf8)
        .map_err(|e| ErrorReport::new("TypeError", format!("{what}: {e}")))?;
    let strings = strings
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .expect("cast to utf8");
    for value in strings.iter().flatten() {
        if !STATUS_MEMBERS
            .iter()
            .any(|(name, v)| *name == value || *v == value)
        {
            return Err(ErrorReport::new(
                "TypeError",
                format!("{what} were not reconstructed as Status members"),
            ));
        }
    }
    Ok(())
}

/// One-element array helper for results.
pub fn single(array: impl Array + 'static) -> Option<ArrayRef> {
    Some(Arc::new(array))
}

/// Python's `repr(float)`: shortest round-trip digits, always a `.0` on integral
/// values, exponent form below 1e-4 and from 1e16.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        let text = format!("{value:e}");
        let (mantissa, exponent) = text.split_once('e').expect("exponent form");
        let exponent: i32 = exponent.parse().expect("exponent digits");
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let text = format!("{value}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::python_float_repr;

    #[test]
    fn float_repr_matches_python() {
        assert_eq!(python_float_repr(2.0), "2.0");
        assert_eq!(python_float_repr(1.5), "1.5");
        assert_eq!(python_float_repr(-0.0), "-0.0");
        assert_eq!(python_float_repr(0.1), "0.1");
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(1.5e-7), "1.5e-07");
        assert_eq!(python_float_repr(123456.789), "123456.789");
        assert_eq!(python_float_repr(f64::NAN), "nan");
    }
}
