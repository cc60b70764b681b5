//! vgi.v2's `Arguments` value: an IPC stream with one row and one column `args: struct<...>`
//! whose children are `positional_<i>` and `named_<name>`, decoded as sent, before any binding
//! to a function's declared arguments (that is the worker's business).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int64Array, StringArray, StructArray};
use arrow_schema::DataType;
use quiver_wire::ErrorReport;

use crate::errors;
use crate::ipc;
use crate::limits::ARGUMENTS_MAX;

/// Arguments as the engine sent them, before binding.
#[derive(Debug, Default)]
pub struct RawArguments {
    /// `positional_<i>` values, by position (one element each).
    pub positional: Vec<ArrayRef>,
    /// `named_<name>` values (one element each).
    pub named: Vec<(String, ArrayRef)>,
}

impl RawArguments {
    /// Decodes an `Arguments` IPC stream.
    pub fn decode(bytes: &[u8]) -> Result<RawArguments, ErrorReport> {
        let batch = ipc::decode_row(bytes, "Arguments")?;
        let Some(args) = batch.column_by_name("args") else {
            return Err(errors::malformed("Arguments", "no 'args' column"));
        };
        let DataType::Struct(fields) = args.data_type() else {
            return Err(errors::malformed("Arguments", "'args' is not a struct"));
        };
        if fields.len() > ARGUMENTS_MAX {
            return Err(errors::argument_validation(format!(
                "{} arguments exceed the limit of {ARGUMENTS_MAX}",
                fields.len()
            )));
        }
        let args: &StructArray = args.as_struct();
        let mut positional: Vec<Option<ArrayRef>> = Vec::new();
        let mut named = Vec::new();
        for (field, column) in fields.iter().zip(args.columns()) {
            let value = column.slice(0, 1);
            if let Some(index) = field.name().strip_prefix("positional_") {
                let index: usize = index
                    .parse()
                    .ok()
                    .filter(|i| *i < ARGUMENTS_MAX)
                    .ok_or_else(|| {
                        errors::malformed("Arguments", format!("bad field '{}'", field.name()))
                    })?;
                if positional.len() <= index {
                    positional.resize(index + 1, None);
                }
                positional[index] = Some(value);
            } else if let Some(name) = field.name().strip_prefix("named_") {
                named.push((name.to_string(), value));
            } else {
                return Err(errors::malformed(
                    "Arguments",
                    format!("unknown field '{}'", field.name()),
                ));
            }
        }
        let positional = positional
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                value.ok_or_else(|| {
                    errors::malformed("Arguments", format!("positional argument {i} is missing"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(RawArguments { positional, named })
    }

    /// Encodes as an `Arguments` IPC stream (the engine's side; used by tests and
    /// tools that drive a worker).
    pub fn encode(&self) -> Vec<u8> {
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        let items = self
            .positional
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("positional_{i}"), v))
            .chain(self.named.iter().map(|(n, v)| (format!("named_{n}"), v)));
        for (name, value) in items {
            fields.push(arrow_schema::Field::new(
                name,
                value.data_type().clone(),
                true,
            ));
            columns.push(value.clone());
        }
        let args = if fields.is_empty() {
            StructArray::new_empty_fields(1, None)
        } else {
            StructArray::new(fields.into(), columns, None)
        };
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "args",
            args.data_type().clone(),
            true,
        )]));
        let batch = arrow_array::RecordBatch::try_new(schema, vec![Arc::new(args)])
            .expect("one struct row");
        ipc::encode_batch(&batch)
    }
}

/// One integer value, for building [`RawArguments`].
pub fn int64_value(value: i64) -> ArrayRef {
    Arc::new(Int64Array::from(vec![value]))
}

/// One string value, for building [`RawArguments`].
pub fn utf8_value(value: &str) -> ArrayRef {
    Arc::new(StringArray::from(vec![value]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_and_named_round_trip() {
        let raw = RawArguments {
            positional: vec![int64_value(5), utf8_value("x")],
            named: vec![("batch_rows".into(), int64_value(3))],
        };
        let decoded = RawArguments::decode(&raw.encode()).unwrap();
        assert_eq!(decoded.positional.len(), 2);
        assert_eq!(decoded.positional[1].as_string::<i32>().value(0), "x");
        assert_eq!(decoded.named[0].0, "batch_rows");
    }

    #[test]
    fn empty_arguments_decode() {
        let raw = RawArguments::decode(&RawArguments::default().encode()).unwrap();
        assert!(raw.positional.is_empty() && raw.named.is_empty());
    }

    #[test]
    fn a_gap_in_positions_is_malformed() {
        let field = |name: &str| arrow_schema::Field::new(name, DataType::Int64, true);
        let args = StructArray::new(
            vec![field("positional_1")].into(),
            vec![int64_value(1)],
            None,
        );
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "args",
            args.data_type().clone(),
            true,
        )]));
        let batch = arrow_array::RecordBatch::try_new(schema, vec![Arc::new(args)]).unwrap();
        let error = RawArguments::decode(&ipc::encode_batch(&batch)).unwrap_err();
        assert!(
            error.message.contains("positional argument 0 is missing"),
            "{error}"
        );
    }
}
