//! Bound arguments as a function body sees them: every declared argument the kind
//! receives, by name, already coerced to its declared type.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::DataType;
use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;

/// Bound arguments: every declared argument the kind receives at bind, by name,
/// coerced to its declared type (defaults filled in).
#[derive(Clone, Debug, Default)]
pub struct Args {
    entries: Vec<(String, ArrayRef)>,
}

impl Args {
    /// Arguments from `(name, value)` pairs, in declaration order (binding makes them).
    pub(crate) fn from_entries(entries: Vec<(String, ArrayRef)>) -> Args {
        Args { entries }
    }

    /// The value of `name` (one element), if the function declares it.
    pub fn value(&self, name: &str) -> Option<&ArrayRef> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn require(&self, name: &str) -> Result<&ArrayRef, ErrorReport> {
        self.value(name)
            .ok_or_else(|| errors::internal(format!("no argument '{name}' was declared")))
    }

    /// Whether `name` is SQL NULL.
    pub fn is_null(&self, name: &str) -> Result<bool, ErrorReport> {
        Ok(self.require(name)?.is_null(0))
    }

    /// An integer argument (declared with an integer type).
    pub fn i64(&self, name: &str) -> Result<i64, ErrorReport> {
        self.opt_i64(name)?
            .ok_or_else(|| errors::argument_validation(format!("argument '{name}' is NULL")))
    }

    /// A nullable integer argument.
    pub fn opt_i64(&self, name: &str) -> Result<Option<i64>, ErrorReport> {
        let value = self.require(name)?;
        if value.is_null(0) {
            return Ok(None);
        }
        let value = arrow_cast::cast(value, &DataType::Int64)
            .map_err(|_| errors::internal(format!("argument '{name}' is not an integer")))?;
        Ok(Some(value.as_primitive::<Int64Type>().value(0)))
    }

    /// A string argument (declared `Utf8`).
    pub fn str(&self, name: &str) -> Result<&str, ErrorReport> {
        let value = self.require(name)?;
        if value.is_null(0) {
            return Err(errors::argument_validation(format!(
                "argument '{name}' is NULL"
            )));
        }
        match value.as_any().downcast_ref::<StringArray>() {
            Some(strings) => Ok(strings.value(0)),
            None => Err(errors::internal(format!(
                "argument '{name}' is not a string"
            ))),
        }
    }
}
