//! Typed access to a request's arguments (one row, one column per parameter).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use quiver_wire::{ErrorCode, ErrorReport};

/// The arguments of one call.
pub struct Params {
    batch: RecordBatch,
}

impl Params {
    pub(crate) fn new(batch: RecordBatch) -> Self {
        debug_assert!(batch.num_rows() == 1 || batch.num_columns() == 0);
        Self { batch }
    }

    /// The request batch itself.
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// The column of parameter `name`.
    pub fn column(&self, name: &str) -> Result<&ArrayRef, ErrorReport> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| invalid(format!("missing parameter '{name}'")))
    }

    /// Whether parameter `name` is null.
    pub fn is_null(&self, name: &str) -> Result<bool, ErrorReport> {
        Ok(self.column(name)?.is_null(0))
    }

    /// A float parameter (float64 or float32 on the wire).
    pub fn f64(&self, name: &str) -> Result<f64, ErrorReport> {
        self.opt_f64(name)?.ok_or_else(|| null_param(name))
    }

    /// A nullable float parameter.
    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>, ErrorReport> {
        let column = self.column(name)?;
        if column.is_null(0) {
            return Ok(None);
        }
        Ok(Some(match column.data_type() {
            DataType::Float64 => column.as_primitive::<Float64Type>().value(0),
            DataType::Float32 => column.as_primitive::<Float32Type>().value(0) as f64,
            other => return Err(wrong_type(name, "float", other)),
        }))
    }

    /// An integer parameter (any signed width on the wire).
    pub fn i64(&self, name: &str) -> Result<i64, ErrorReport> {
        self.opt_i64(name)?.ok_or_else(|| null_param(name))
    }

    /// A nullable integer parameter.
    pub fn opt_i64(&self, name: &str) -> Result<Option<i64>, ErrorReport> {
        let column = self.column(name)?;
        if column.is_null(0) {
            return Ok(None);
        }
        Ok(Some(match column.data_type() {
            DataType::Int64 => column.as_primitive::<Int64Type>().value(0),
            DataType::Int32 => column.as_primitive::<Int32Type>().value(0) as i64,
            DataType::Int16 => column.as_primitive::<Int16Type>().value(0) as i64,
            other => return Err(wrong_type(name, "int", other)),
        }))
    }

    /// A boolean parameter.
    pub fn bool(&self, name: &str) -> Result<bool, ErrorReport> {
        self.opt_bool(name)?.ok_or_else(|| null_param(name))
    }

    /// A nullable boolean parameter.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ErrorReport> {
        let column = self.column(name)?;
        if column.is_null(0) {
            return Ok(None);
        }
        match column.data_type() {
            DataType::Boolean => Ok(Some(column.as_boolean().value(0))),
            other => Err(wrong_type(name, "bool", other)),
        }
    }

    /// A string parameter.
    pub fn str(&self, name: &str) -> Result<&str, ErrorReport> {
        self.opt_str(name)?.ok_or_else(|| null_param(name))
    }

    /// A nullable string parameter.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, ErrorReport> {
        let column = self.column(name)?;
        if column.is_null(0) {
            return Ok(None);
        }
        match column.data_type() {
            DataType::Utf8 => Ok(Some(column.as_string::<i32>().value(0))),
            DataType::LargeUtf8 => Ok(Some(column.as_string::<i64>().value(0))),
            DataType::Utf8View => Ok(Some(column.as_string_view().value(0))),
            other => Err(wrong_type(name, "str", other)),
        }
    }

    /// A bytes parameter.
    pub fn bytes(&self, name: &str) -> Result<&[u8], ErrorReport> {
        self.opt_bytes(name)?.ok_or_else(|| null_param(name))
    }

    /// A nullable bytes parameter.
    pub fn opt_bytes(&self, name: &str) -> Result<Option<&[u8]>, ErrorReport> {
        let column = self.column(name)?;
        if column.is_null(0) {
            return Ok(None);
        }
        match column.data_type() {
            DataType::Binary => Ok(Some(column.as_binary::<i32>().value(0))),
            DataType::LargeBinary => Ok(Some(column.as_binary::<i64>().value(0))),
            other => Err(wrong_type(name, "bytes", other)),
        }
    }
}

fn invalid(message: String) -> ErrorReport {
    ErrorReport::new("TypeError", message).with_code(ErrorCode::InvalidArgument)
}

fn null_param(name: &str) -> ErrorReport {
    invalid(format!("parameter '{name}' must not be null"))
}

fn wrong_type(name: &str, wanted: &str, got: &DataType) -> ErrorReport {
    invalid(format!("parameter '{name}' should be {wanted}, got {got}"))
}
