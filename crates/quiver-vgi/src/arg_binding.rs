//! Binding the engine's raw `Arguments` (decoded by the contract crate) to a function's
//! declared arguments: arity, names, types, ranges, defaults. Which declared arguments they
//! fill depends on the kind: every argument of a table function,
//! the non-TABLE ones of a table-in-out function, and only the constant ones of a
//! scalar function (its other arguments are input columns).

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_schema::DataType;
use quiver_vgi_contract::{errors, RawArguments};
use quiver_wire::ErrorReport;

use crate::args::Args;
use crate::declarations::{Arg, FunctionKind};
use crate::function::Function;

/// Binds `raw` to the arguments `function` receives at bind.
pub fn bind_args(function: &Function, raw: &RawArguments) -> Result<Args, ErrorReport> {
    let name = &function.name;
    let declared: Vec<&Arg> = match function.kind {
        FunctionKind::Scalar | FunctionKind::Aggregate => {
            function.args.iter().filter(|a| a.constant).collect()
        }
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
    Ok(Args::from_entries(entries))
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use quiver_vgi_contract::{int64_value, utf8_value};

    use super::*;
    use crate::builders::TableFunction;
    use crate::scan::Scan;

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
}
