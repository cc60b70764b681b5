//! One value between Python and a one-row Arrow column, for RPC parameters and results: the
//! types of quiver's Python type table (`python/README.md`, "Types": `str`, `bytes`, `int`,
//! `float`, `bool`, `None`) directly, any other Arrow type through pyarrow.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, StringArray,
};
use arrow_data::ArrayData;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::{DataType, Field};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};

/// The value at `row` of `column` as a Python object.
pub(crate) fn to_python<'py>(
    py: Python<'py>,
    column: &dyn Array,
    row: usize,
) -> PyResult<Bound<'py, PyAny>> {
    assert!(row < column.len(), "row {row} of {}", column.len());
    if column.is_null(row) {
        return Ok(py.None().into_bound(py));
    }
    macro_rules! primitive {
        ($arrow:ty) => {
            column
                .as_primitive::<$arrow>()
                .value(row)
                .into_pyobject(py)?
                .into_any()
        };
    }
    Ok(match column.data_type() {
        DataType::Boolean => PyBool::new(py, column.as_boolean().value(row))
            .to_owned()
            .into_any(),
        DataType::Int8 => primitive!(Int8Type),
        DataType::Int16 => primitive!(Int16Type),
        DataType::Int32 => primitive!(Int32Type),
        DataType::Int64 => primitive!(Int64Type),
        DataType::UInt8 => primitive!(UInt8Type),
        DataType::UInt16 => primitive!(UInt16Type),
        DataType::UInt32 => primitive!(UInt32Type),
        DataType::UInt64 => primitive!(UInt64Type),
        DataType::Float32 => primitive!(Float32Type),
        DataType::Float64 => primitive!(Float64Type),
        DataType::Utf8 => PyString::new(py, column.as_string::<i32>().value(row)).into_any(),
        DataType::Binary => PyBytes::new(py, column.as_binary::<i32>().value(row)).into_any(),
        _ => {
            // Anything else: pyarrow's own conversion of the one value.
            let slice = column.slice(row, 1).to_data();
            let array = slice.to_pyarrow(py)?;
            array.get_item(0)?.call_method0("as_py")?
        }
    })
}

/// A one-element column of `field`'s type holding `value`.
pub(crate) fn from_python(field: &Field, value: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let data_type = field.data_type();
    if value.is_none() {
        if !field.is_nullable() && data_type != &DataType::Null {
            return Err(PyTypeError::new_err(format!(
                "'{}' is not nullable, got None",
                field.name()
            )));
        }
        return Ok(arrow_array::new_null_array(data_type, 1));
    }
    Ok(match data_type {
        DataType::Boolean => Arc::new(BooleanArray::from(vec![value.extract::<bool>()?])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![value.extract::<i64>()?])),
        DataType::Float64 => Arc::new(Float64Array::from(vec![value.extract::<f64>()?])),
        DataType::Utf8 => Arc::new(StringArray::from(vec![value.extract::<String>()?])),
        DataType::Binary => Arc::new(BinaryArray::from_vec(vec![value
            .cast::<PyBytes>()?
            .as_bytes()])),
        _ => {
            // Anything else: pyarrow builds it (`pyarrow.array([value], type)`).
            let py = value.py();
            let pyarrow = py.import("pyarrow")?;
            let arrow_type = data_type.to_pyarrow(py)?;
            let array = pyarrow.call_method1("array", (vec![value], arrow_type))?;
            arrow_array::make_array(ArrayData::from_pyarrow_bound(&array)?)
        }
    })
}

/// The field a Python argument travels as when the caller names no type: `str`, `bytes`,
/// `int`, `float`, `bool` as quiver's type table maps them, `None` as `null`.
pub(crate) fn inferred_field(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Field> {
    let data_type = if value.is_none() {
        DataType::Null
    } else if value.is_instance_of::<PyBool>() {
        DataType::Boolean
    } else if value.is_instance_of::<PyInt>() {
        DataType::Int64
    } else if value.is_instance_of::<PyFloat>() {
        DataType::Float64
    } else if value.is_instance_of::<PyString>() {
        DataType::Utf8
    } else if value.is_instance_of::<PyBytes>() {
        DataType::Binary
    } else {
        return Err(PyTypeError::new_err(format!(
            "argument '{name}': str, bytes, int, float, bool or None (or give the method's \
             schema), not {}",
            value.get_type().name()?
        )));
    };
    let nullable = data_type == DataType::Null;
    Ok(Field::new(name, data_type, nullable))
}
