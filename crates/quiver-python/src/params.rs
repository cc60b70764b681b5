//! Statement parameters from Python: a `pyarrow.RecordBatch` (one column per parameter, one
//! execution per row) or a sequence of plain values for one row (`None`, `bool`, `int`, `float`,
//! `str`, as `quiver_client::Param` takes them).

use arrow_array::RecordBatch;
use arrow_pyarrow::FromPyArrow;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use quiver_client::{params, Param};
use quiver_server_protocol::limits;

use crate::errors::IntoPy;

/// The parameters as a batch, or `None` when none were given.
pub(crate) fn to_batch(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<RecordBatch>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(None);
    };
    if value.hasattr("__arrow_c_array__")? || value.hasattr("schema")? {
        return RecordBatch::from_pyarrow_bound(value).map(Some);
    }
    let mut row = Vec::new();
    for item in value.try_iter()? {
        if row.len() >= limits::SCHEMA_FIELDS_MAX {
            return Err(PyTypeError::new_err(format!(
                "more than {} parameters",
                limits::SCHEMA_FIELDS_MAX
            )));
        }
        row.push(param(&item?)?);
    }
    if row.is_empty() {
        return Ok(None);
    }
    params::row(&row).into_py_result().map(Some)
}

fn param(value: &Bound<'_, PyAny>) -> PyResult<Param> {
    if value.is_none() {
        Ok(Param::Null)
    } else if value.is_instance_of::<PyBool>() {
        Ok(Param::Bool(value.extract()?))
    } else if value.is_instance_of::<PyInt>() {
        Ok(Param::I64(value.extract()?))
    } else if value.is_instance_of::<PyFloat>() {
        Ok(Param::F64(value.extract()?))
    } else if value.is_instance_of::<PyString>() {
        Ok(Param::Str(value.extract()?))
    } else {
        Err(PyTypeError::new_err(format!(
            "a parameter is None, bool, int, float or str (or pass a pyarrow.RecordBatch), not {}",
            value.get_type().name()?
        )))
    }
}
