//! Unary methods: echoes of every wire type, defaults, errors and logs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field};
use quiver_rpc::{Method, Service};
use quiver_wire::{ErrorReport, LogLevel, LogRecord};

use crate::types::{
    check_status_members, enum_type, from_ipc_bytes, list_of, map_of, python_float_repr, single,
    to_ipc_bytes,
};

/// Registers the unary methods.
pub fn register(service: &mut Service) {
    for (name, param, data_type, nullable) in [
        ("echo_string", "value", DataType::Utf8, false),
        ("echo_bytes", "data", DataType::Binary, false),
        ("echo_int", "value", DataType::Int64, false),
        ("echo_float", "value", DataType::Float64, false),
        ("echo_bool", "value", DataType::Boolean, false),
        ("echo_int32", "value", DataType::Int32, false),
        ("echo_float32", "value", DataType::Float32, false),
        ("echo_large_binary", "value", DataType::LargeBinary, false),
        ("echo_list", "values", list_of(DataType::Utf8), false),
        ("echo_dict", "mapping", map_of(DataType::Int64), false),
        (
            "echo_nested_list",
            "matrix",
            list_of(list_of(DataType::Int64)),
            false,
        ),
        ("echo_optional_string", "value", DataType::Utf8, true),
        ("echo_optional_int", "value", DataType::Int64, true),
        (
            "echo_annotated_optional_int",
            "value",
            DataType::Int32,
            true,
        ),
        (
            "echo_outer_optional_non_null",
            "value",
            DataType::Int32,
            false,
        ),
        ("echo_enum", "status", enum_type(), false),
    ] {
        service.add(echo(name, param, data_type, nullable));
    }
    service.add(checked_echo(
        "echo_status_list",
        "statuses",
        list_of(enum_type()),
        false,
        |column| check_status_members(column.as_list::<i32>().values().as_ref(), "statuses"),
    ));
    for (name, param, nullable, what) in [
        ("echo_point", "point", false, "Point"),
        ("echo_bounding_box", "box", false, "BoundingBox"),
        ("echo_all_types", "data", false, "AllTypes"),
        ("echo_optional_point", "point", true, "Point"),
    ] {
        service.add(checked_echo(
            name,
            param,
            DataType::Binary,
            nullable,
            move |column| match column.as_binary::<i32>().iter().next().flatten() {
                Some(bytes) => from_ipc_bytes(bytes, what).map(|_| ()),
                None => Ok(()),
            },
        ));
    }

    service.add(Method::unary("void_noop", vec![], None, |_, _| Ok(None)));
    service.add(Method::unary(
        "void_with_param",
        vec![Field::new("value", DataType::Int64, false)],
        None,
        |_, _| Ok(None),
    ));
    service.add(Method::unary(
        "inspect_point",
        vec![Field::new("point", DataType::Binary, false)],
        Some(Field::new("result", DataType::Utf8, false)),
        |params, _| {
            let point = from_ipc_bytes(params.bytes("point")?, "Point")?;
            let coordinate = |name: &str| -> Result<f64, ErrorReport> {
                let column = point.column_by_name(name).ok_or_else(|| {
                    ErrorReport::new("TypeError", format!("Point has no field {name}"))
                })?;
                let column = arrow_cast::cast(column, &DataType::Float64)
                    .map_err(|e| ErrorReport::new("TypeError", e.to_string()))?;
                Ok(column
                    .as_primitive::<arrow_array::types::Float64Type>()
                    .value(0))
            };
            let text = format!(
                "Point({}, {})",
                python_float_repr(coordinate("x")?),
                python_float_repr(coordinate("y")?)
            );
            Ok(single(StringArray::from(vec![text])))
        },
    ));
    service.add(Method::unary(
        "add_floats",
        vec![
            Field::new("a", DataType::Float64, false),
            Field::new("b", DataType::Float64, false),
        ],
        Some(Field::new("result", DataType::Float64, false)),
        |params, _| {
            Ok(single(Float64Array::from(vec![
                params.f64("a")? + params.f64("b")?,
            ])))
        },
    ));
    service.add(Method::unary(
        "concatenate",
        vec![
            Field::new("prefix", DataType::Utf8, false),
            Field::new("suffix", DataType::Utf8, false),
            Field::new("separator", DataType::Utf8, false),
        ],
        Some(Field::new("result", DataType::Utf8, false)),
        |params, _| {
            let text = format!(
                "{}{}{}",
                params.str("prefix")?,
                params.str("separator")?,
                params.str("suffix")?
            );
            Ok(single(StringArray::from(vec![text])))
        },
    ));
    service.add(Method::unary(
        "with_defaults",
        vec![
            Field::new("required", DataType::Int64, false),
            Field::new("optional_str", DataType::Utf8, false),
            Field::new("optional_int", DataType::Int64, false),
        ],
        Some(Field::new("result", DataType::Utf8, false)),
        |params, _| {
            let text = format!(
                "required={}, optional_str={}, optional_int={}",
                params.i64("required")?,
                params.str("optional_str")?,
                params.i64("optional_int")?
            );
            Ok(single(StringArray::from(vec![text])))
        },
    ));
    for (name, error_type) in [
        ("raise_value_error", "ValueError"),
        ("raise_runtime_error", "RuntimeError"),
        ("raise_type_error", "TypeError"),
    ] {
        service.add(Method::unary(
            name,
            vec![Field::new("message", DataType::Utf8, false)],
            Some(Field::new("result", DataType::Utf8, false)),
            move |params, _| Err(ErrorReport::new(error_type, params.str("message")?)),
        ));
    }
    service.add(logging("echo_with_info_log", &[LogLevel::Info], false));
    service.add(logging(
        "echo_with_multi_logs",
        &[LogLevel::Debug, LogLevel::Info, LogLevel::Warn],
        false,
    ));
    service.add(logging("echo_with_log_extras", &[LogLevel::Info], true));
    service.add(logging(
        "echo_with_all_log_levels",
        &[
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
        ],
        false,
    ));
    service.add(pack_nested_containers());
}

/// `name(param) -> result` returning its argument unchanged.
pub(crate) fn echo(name: &str, param: &str, data_type: DataType, nullable: bool) -> Method {
    checked_echo(name, param, data_type, nullable, |_| Ok(()))
}

/// An echo that validates its argument first.
pub(crate) fn checked_echo<F>(
    name: &str,
    param: &str,
    data_type: DataType,
    nullable: bool,
    check: F,
) -> Method
where
    F: Fn(&ArrayRef) -> Result<(), ErrorReport> + Send + Sync + 'static,
{
    let param_name = param.to_string();
    Method::unary(
        name,
        vec![Field::new(param, data_type.clone(), nullable)],
        Some(Field::new("result", data_type, nullable)),
        move |params, _| {
            let column = params.column(&param_name)?;
            check(column)?;
            Ok(Some(Arc::clone(column)))
        },
    )
}

/// Echoes `value` after logging `<level>: <value>` at each level.
fn logging(name: &str, levels: &'static [LogLevel], with_extras: bool) -> Method {
    Method::unary(
        name,
        vec![Field::new("value", DataType::Utf8, false)],
        Some(Field::new("result", DataType::Utf8, false)),
        move |params, ctx| {
            let value = params.str("value")?;
            for level in levels {
                let mut record = LogRecord::new(
                    *level,
                    format!("{}: {value}", level.as_str().to_lowercase()),
                );
                if with_extras {
                    record = record
                        .with_extra("source", "conformance")
                        .with_extra("detail", value);
                }
                ctx.log(record);
            }
            Ok(single(StringArray::from(vec![value.to_string()])))
        },
    )
}

/// Packs the enum, struct and map arguments into a `NestedContainers` value.
fn pack_nested_containers() -> Method {
    use crate::types::{nested_containers_schema, point_type};
    Method::unary(
        "pack_nested_containers",
        vec![
            Field::new("statuses", list_of(enum_type()), false),
            Field::new("points", list_of(point_type()), false),
            Field::new("status_by_name", map_of(enum_type()), false),
        ],
        Some(Field::new("result", DataType::Binary, false)),
        |params, _| {
            let statuses = params.column("statuses")?;
            let points = params.column("points")?;
            let status_by_name = params.column("status_by_name")?;
            let status_values = statuses.as_list::<i32>().value(0);
            check_status_members(status_values.as_ref(), "statuses")?;
            check_status_members(
                status_by_name.as_map().value(0).column(1).as_ref(),
                "status_by_name values",
            )?;
            let point_values = points.as_list::<i32>().value(0);

            let frozen = distinct_statuses(&status_values)?;
            let first_or_null = |values: &ArrayRef| -> ArrayRef {
                if values.is_empty() {
                    arrow_array::new_null_array(values.data_type(), 1)
                } else {
                    values.slice(0, 1)
                }
            };
            let tagged_status = first_or_null(&status_values);
            let tagged_point = first_or_null(&point_values);
            let tagged_batch = RecordBatch::try_new(
                Arc::new(arrow_schema::Schema::new(vec![Field::new(
                    "value",
                    DataType::Int64,
                    true,
                )])),
                vec![Arc::new(Int64Array::from(vec![1, 2]))],
            )
            .expect("literal batch");
            let tagged_batch =
                BinaryArray::from(vec![Some(to_ipc_bytes(&tagged_batch)?.as_slice())]);

            let schema = nested_containers_schema();
            let columns: Vec<ArrayRef> = vec![
                Arc::clone(statuses),
                Arc::clone(points),
                Arc::clone(status_by_name),
                frozen,
                tagged_status,
                tagged_point,
                Arc::new(tagged_batch),
            ];
            let columns = columns
                .into_iter()
                .zip(schema.fields())
                .map(|(column, field)| arrow_cast::cast(&column, field.data_type()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    ErrorReport::new("TypeError", format!("cannot pack containers: {e}"))
                })?;
            let batch = RecordBatch::try_new(schema, columns).map_err(|e| {
                ErrorReport::new("TypeError", format!("cannot pack containers: {e}"))
            })?;
            Ok(single(BinaryArray::from(vec![Some(
                to_ipc_bytes(&batch)?.as_slice(),
            )])))
        },
    )
}

/// The distinct members of an enum array, as a one-row `list<dict<int16, utf8>>`.
fn distinct_statuses(values: &ArrayRef) -> Result<ArrayRef, ErrorReport> {
    let strings = arrow_cast::cast(values, &DataType::Utf8)
        .map_err(|e| ErrorReport::new("TypeError", e.to_string()))?;
    let mut distinct: Vec<&str> = Vec::new();
    for value in strings.as_string::<i32>().iter().flatten() {
        if !distinct.contains(&value) {
            distinct.push(value);
        }
    }
    let items = StringArray::from(distinct);
    let offsets = arrow_buffer::OffsetBuffer::from_lengths([items.len()]);
    let list = arrow_array::ListArray::new(
        Arc::new(Field::new("item", DataType::Utf8, true)),
        offsets,
        Arc::new(items),
        None,
    );
    arrow_cast::cast(&list, &list_of(enum_type()))
        .map_err(|e| ErrorReport::new("TypeError", e.to_string()))
}
