//! SQL arguments: decoding vgi.v2's `Arguments` value and binding it to a
//! function's declared arguments (arity, names, types, ranges, defaults).
//!
//! `Arguments` is an IPC stream with one row and one column `args: struct<...>`
//! whose children are `positional_<i>` and `named_<name>`. Which declared
//! arguments they fill depends on the kind: every argument of a table function,
//! the non-TABLE ones of a table-in-out function, and only the constant ones of a
//! scalar function (its other arguments are input columns).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{new_null_array, Array, ArrayRef, Int64Array, StringArray, StructArray};
use arrow_schema::DataType;
use quiver_wire::ErrorReport;

use crate::errors;
use crate::function::{Arg, Function, FunctionKind};
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

/// Bound arguments: every declared argument the kind receives at bind, by name,
/// coerced to its declared type (defaults filled in).
#[derive(Clone, Debug, Default)]
pub struct Args {
    entries: Vec<(String, ArrayRef)>,
}

impl Args {
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

/// Binds `raw` to the arguments `function` receives at bind.
pub fn bind_args(function: &Function, raw: &RawArguments) -> Result<Args, ErrorReport> {
    let name = &function.name;
    let declared: Vec<&Arg> = match function.kind {
        FunctionKind::Scalar => function.args.iter().filter(|a| a.constant).collect(),
        _ => function.positional_args().collect(),
    };
    if raw.positional.len() > declared.len() {
        return Err(errors::argument_validation(format!(
            "{name}() takes {} positional argument(s) but {} were given{}",
            declared.len(),
            raw.positional.len(),
            signature_hint(function)
        )));
    }
    let mut entries = Vec::with_capacity(declared.len());
    for (position, arg) in declared.iter().enumerate() {
        let Some(value) = raw.positional.get(position) else {
            return Err(errors::argument_validation(format!(
                "{name}() missing argument {position} '{}' ({}){}",
                arg.name,
                sql_type(&arg.data_type),
                signature_hint(function)
            )));
        };
        entries.push((arg.name.clone(), coerce(function, arg, value)?));
    }
    for (given, _) in &raw.named {
        if !function.args.iter().any(|a| a.named && &a.name == given) {
            return Err(errors::argument_validation(format!(
                "{name}() has no named argument '{given}'{}",
                signature_hint(function)
            )));
        }
    }
    for arg in function.named_args() {
        let given = raw
            .named
            .iter()
            .find(|(n, _)| n == &arg.name)
            .map(|(_, v)| v);
        let value = match (given, &arg.default) {
            (Some(value), _) => coerce(function, arg, value)?,
            (None, Some(default)) => default.clone(),
            (None, None) if arg.nullable => new_null_array(&arg.data_type, 1),
            (None, None) => {
                return Err(errors::argument_validation(format!(
                    "{name}() missing named argument '{} := ...' ({})",
                    arg.name,
                    sql_type(&arg.data_type)
                )))
            }
        };
        entries.push((arg.name.clone(), value));
    }
    Ok(Args { entries })
}

/// Coerces one value to the argument's type: same family casts (wider or
/// narrower integers, integers to floats, string flavours) are accepted, range
/// and NULL rules enforced; anything else is a type error.
fn coerce(function: &Function, arg: &Arg, value: &ArrayRef) -> Result<ArrayRef, ErrorReport> {
    let describe = || format!("argument '{}' of {}()", arg.name, function.name);
    if value.data_type() == &DataType::Null || value.is_null(0) {
        if !arg.nullable {
            return Err(errors::argument_validation(format!(
                "{} must not be NULL",
                describe()
            )));
        }
        return Ok(new_null_array(&arg.data_type, 1));
    }
    let from = value.data_type();
    let to = &arg.data_type;
    let compatible = from == to
        || (from.is_integer() && (to.is_integer() || to.is_floating()))
        || (from.is_floating() && to.is_floating())
        || (is_string(from) && is_string(to));
    if !compatible {
        return Err(errors::argument_validation(format!(
            "{} must be {}, got {}",
            describe(),
            sql_type(to),
            sql_type(from)
        )));
    }
    let options = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let value = arrow_cast::cast_with_options(value, to, &options).map_err(|error| {
        errors::argument_validation(format!(
            "{} does not fit {}: {error}",
            describe(),
            sql_type(to)
        ))
    })?;
    check_range(arg, &value)
        .map_err(|message| errors::argument_validation(format!("{}: {message}", describe())))?;
    Ok(value)
}

fn check_range(arg: &Arg, value: &ArrayRef) -> Result<(), String> {
    if arg.min.is_none() && arg.max.is_none() {
        return Ok(());
    }
    let number = arrow_cast::cast(value, &DataType::Int64).map_err(|e| e.to_string())?;
    let number = number.as_primitive::<Int64Type>().value(0);
    if let Some(min) = arg.min.filter(|min| number < *min) {
        return Err(format!("{number} is too small (must be >= {min})"));
    }
    if let Some(max) = arg.max.filter(|max| number > *max) {
        return Err(format!("{number} is too large (must be <= {max})"));
    }
    Ok(())
}

fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// The SQL spelling of an Arrow type, for messages.
pub fn sql_type(data_type: &DataType) -> String {
    let name = match data_type {
        DataType::Boolean => "BOOLEAN",
        DataType::Int8 => "TINYINT",
        DataType::Int16 => "SMALLINT",
        DataType::Int32 => "INTEGER",
        DataType::Int64 => "BIGINT",
        DataType::UInt8 => "UTINYINT",
        DataType::UInt16 => "USMALLINT",
        DataType::UInt32 => "UINTEGER",
        DataType::UInt64 => "UBIGINT",
        DataType::Float32 => "FLOAT",
        DataType::Float64 => "DOUBLE",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "VARCHAR",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BLOB",
        DataType::Date32 | DataType::Date64 => "DATE",
        DataType::Null => "NULL",
        other => return other.to_string(),
    };
    name.to_string()
}

/// `"\n  Signature: f(n BIGINT, batch_rows := BIGINT)"`, appended to arity errors.
fn signature_hint(function: &Function) -> String {
    let mut parts: Vec<String> = Vec::new();
    for arg in function.args.iter().filter(|a| !a.named) {
        if arg.table {
            parts.push(format!("{} TABLE", arg.name));
        } else {
            parts.push(format!("{} {}", arg.name, sql_type(&arg.data_type)));
        }
    }
    for arg in function.named_args() {
        parts.push(format!("{} := {}", arg.name, sql_type(&arg.data_type)));
    }
    format!("\n  Signature: {}({})", function.name, parts.join(", "))
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
    use crate::builders::TableFunction;
    use crate::table::Scan;

    fn numbers() -> Function {
        TableFunction::new("numbers")
            .arg(Arg::new("n", DataType::Int64).min(0))
            .arg(
                Arg::named("batch_rows", DataType::Int64)
                    .min(1)
                    .default_i64(10),
            )
            .output(Arc::new(arrow_schema::Schema::empty()))
            .scan(|_| Ok(|_: &mut Scan<'_>| Ok(None)))
    }

    fn bind(raw: RawArguments) -> Result<Args, ErrorReport> {
        let decoded = RawArguments::decode(&raw.encode())?;
        bind_args(&numbers(), &decoded)
    }

    #[test]
    fn binds_positional_and_defaults() {
        let args = bind(RawArguments {
            positional: vec![int64_value(5)],
            named: vec![],
        })
        .unwrap();
        assert_eq!(args.i64("n").unwrap(), 5);
        assert_eq!(args.i64("batch_rows").unwrap(), 10);
        let args = bind(RawArguments {
            positional: vec![int64_value(5)],
            named: vec![("batch_rows".into(), int64_value(3))],
        })
        .unwrap();
        assert_eq!(args.i64("batch_rows").unwrap(), 3);
    }

    #[test]
    fn narrower_integers_widen() {
        let value: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![7]));
        let args = bind(RawArguments {
            positional: vec![value],
            named: vec![],
        })
        .unwrap();
        assert_eq!(args.i64("n").unwrap(), 7);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let missing = bind(RawArguments::default()).unwrap_err();
        assert!(
            missing.message.contains("missing argument 0 'n' (BIGINT)"),
            "{missing}"
        );
        let extra = bind(RawArguments {
            positional: vec![int64_value(1), int64_value(2)],
            named: vec![],
        })
        .unwrap_err();
        assert!(
            extra
                .message
                .contains("takes 1 positional argument(s) but 2"),
            "{extra}"
        );
        let wrong = bind(RawArguments {
            positional: vec![utf8_value("abc")],
            named: vec![],
        })
        .unwrap_err();
        assert!(
            wrong.message.contains("must be BIGINT, got VARCHAR"),
            "{wrong}"
        );
        let small = bind(RawArguments {
            positional: vec![int64_value(-1)],
            named: vec![],
        })
        .unwrap_err();
        assert!(small.message.contains("too small"), "{small}");
        let unknown = bind(RawArguments {
            positional: vec![int64_value(1)],
            named: vec![("nope".into(), int64_value(1))],
        })
        .unwrap_err();
        assert!(
            unknown.message.contains("no named argument 'nope'"),
            "{unknown}"
        );
        let null: ArrayRef = new_null_array(&DataType::Null, 1);
        let null = bind(RawArguments {
            positional: vec![null],
            named: vec![],
        })
        .unwrap_err();
        assert!(null.message.contains("must not be NULL"), "{null}");
    }

    #[test]
    fn empty_arguments_decode() {
        let raw = RawArguments::decode(&RawArguments::default().encode()).unwrap();
        assert!(raw.positional.is_empty() && raw.named.is_empty());
    }
}
