//! Statement parameters without building a `RecordBatch` by hand: one row of typed values.
//!
//! ```no_run
//! # use quiver_client::{params, Connection, Param};
//! # let mut db = Connection::connect("unix:///tmp/q.sock", None)?;
//! db.execute_with("INSERT INTO t VALUES (?, ?, ?)", &params::row(&[1.into(), "a".into(), Param::Null])?)?;
//! # Ok::<(), quiver_client::Error>(())
//! ```

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, NullArray, RecordBatch,
    StringArray,
};
use arrow_schema::{Field, Schema};

use crate::error::{Error, Result};

/// One parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// SQL `NULL`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 32-bit integer.
    I32(i32),
    /// A 64-bit integer.
    I64(i64),
    /// A double.
    F64(f64),
    /// Text.
    Str(String),
}

impl From<bool> for Param {
    fn from(value: bool) -> Self {
        Param::Bool(value)
    }
}

impl From<i32> for Param {
    fn from(value: i32) -> Self {
        Param::I32(value)
    }
}

impl From<i64> for Param {
    fn from(value: i64) -> Self {
        Param::I64(value)
    }
}

impl From<f64> for Param {
    fn from(value: f64) -> Self {
        Param::F64(value)
    }
}

impl From<&str> for Param {
    fn from(value: &str) -> Self {
        Param::Str(value.to_string())
    }
}

impl From<String> for Param {
    fn from(value: String) -> Self {
        Param::Str(value)
    }
}

impl<T: Into<Param>> From<Option<T>> for Param {
    fn from(value: Option<T>) -> Self {
        value.map_or(Param::Null, Into::into)
    }
}

/// One row of parameters, one column per value, in order (`$1`, `$2`, ... or the `?`s).
pub fn row(values: &[Param]) -> Result<RecordBatch> {
    if values.is_empty() {
        return Err(Error::InvalidInput("a parameter row needs a value".into()));
    }
    let columns: Vec<ArrayRef> = values
        .iter()
        .map(|value| match value {
            Param::Null => Arc::new(NullArray::new(1)) as ArrayRef,
            Param::Bool(v) => Arc::new(BooleanArray::from(vec![*v])),
            Param::I32(v) => Arc::new(Int32Array::from(vec![*v])),
            Param::I64(v) => Arc::new(Int64Array::from(vec![*v])),
            Param::F64(v) => Arc::new(Float64Array::from(vec![*v])),
            Param::Str(v) => Arc::new(StringArray::from(vec![v.as_str()])),
        })
        .collect();
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(index, column)| {
            Field::new(format!("p{}", index + 1), column.data_type().clone(), true)
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|error| Error::InvalidInput(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_has_one_typed_column_per_value() {
        let batch = row(&[
            1.into(),
            2i64.into(),
            "x".into(),
            Param::Null,
            Some(0.5).into(),
        ])
        .unwrap();
        assert_eq!(batch.num_rows(), 1);
        assert_eq!(batch.num_columns(), 5);
        assert_eq!(
            batch.schema().field(0).data_type(),
            &arrow_schema::DataType::Int32
        );
        assert_eq!(
            batch.schema().field(3).data_type(),
            &arrow_schema::DataType::Null
        );
        assert!(row(&[]).is_err());
    }
}
