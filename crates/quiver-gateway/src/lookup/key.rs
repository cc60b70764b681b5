//! The values rows are looked up by: a column's value in the snapshot's rows, and a request's
//! bound value, both as one comparable key part, equal exactly when DuckDB's `=` says so for the
//! types `compile::key_columns` admits.

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::Array;
use arrow_schema::DataType;

use crate::project::ColumnType;
use crate::value::Value;

/// One column's value in a key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KeyPart {
    /// An integer, or a date as days since the Unix epoch.
    Int(i64),
    Str(Box<str>),
    Bool(bool),
}

impl KeyPart {
    /// The bytes this part holds besides itself.
    pub fn heap_bytes(&self) -> usize {
        match self {
            KeyPart::Str(text) => text.len(),
            _ => 0,
        }
    }
}

/// Whether a column of this Arrow type can be read into key parts.
pub fn indexable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Boolean
    )
}

/// Row `row` of `array` as a key part; `None` for a NULL (which equals nothing).
pub fn of_row(array: &dyn Array, row: usize) -> Option<KeyPart> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Int8 => KeyPart::Int(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => KeyPart::Int(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => KeyPart::Int(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => KeyPart::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::Date32 => KeyPart::Int(array.as_primitive::<Date32Type>().value(row).into()),
        DataType::Utf8 => KeyPart::Str(array.as_string::<i32>().value(row).into()),
        DataType::LargeUtf8 => KeyPart::Str(array.as_string::<i64>().value(row).into()),
        DataType::Utf8View => KeyPart::Str(array.as_string_view().value(row).into()),
        DataType::Boolean => KeyPart::Bool(array.as_boolean().value(row)),
        other => unreachable!("{other} is not indexable (checked before reading)"),
    })
}

/// A request's bound value for a column of `column_type` as a key part; `None` when it is not
/// one a lookup can answer (the statement then runs).
pub fn of_value(value: &Value, column_type: ColumnType) -> Option<KeyPart> {
    match (column_type, value) {
        (ColumnType::Integer | ColumnType::Bigint, Value::I64(value)) => Some(KeyPart::Int(*value)),
        (ColumnType::Varchar, Value::Str(text)) => Some(KeyPart::Str(text.as_str().into())),
        (ColumnType::Boolean, Value::Bool(value)) => Some(KeyPart::Bool(*value)),
        // Dates travel as `YYYY-MM-DD` text cast by the statement: the same day count here.
        (ColumnType::Date, Value::Str(text)) => {
            let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
            Some(KeyPart::Int((date - epoch).num_days()))
        }
        _ => None,
    }
}
