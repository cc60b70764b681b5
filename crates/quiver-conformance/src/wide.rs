//! Unary echoes of the wide Arrow types: every integer width, dates, times,
//! timestamps, durations, decimals, large and fixed-size binaries, dictionary
//! strings, and the dataclasses that nest them.

use arrow_array::cast::AsArray;
use arrow_schema::{DataType, TimeUnit};
use quiver_rpc::Service;

use crate::types::{enum_type, from_ipc_bytes};
use crate::unary::{checked_echo, echo};

/// The width of `echo_fixed_binary`'s `binary(8)`.
const FIXED_BINARY_WIDTH: i32 = 8;

/// Registers the wide-type echoes.
pub fn register(service: &mut Service) {
    for (name, data_type) in [
        ("echo_int8", DataType::Int8),
        ("echo_int16", DataType::Int16),
        ("echo_uint8", DataType::UInt8),
        ("echo_uint16", DataType::UInt16),
        ("echo_uint32", DataType::UInt32),
        ("echo_uint64", DataType::UInt64),
        ("echo_date", DataType::Date32),
        (
            "echo_timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, None),
        ),
        (
            "echo_timestamp_utc",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ),
        ("echo_time", DataType::Time64(TimeUnit::Microsecond)),
        ("echo_duration", DataType::Duration(TimeUnit::Microsecond)),
        ("echo_decimal", DataType::Decimal128(20, 4)),
        ("echo_large_string", DataType::LargeUtf8),
        (
            "echo_fixed_binary",
            DataType::FixedSizeBinary(FIXED_BINARY_WIDTH),
        ),
        ("echo_dict_encoded_string", enum_type()),
    ] {
        service.add(echo(name, "value", data_type, false));
    }
    for (name, what) in [
        ("echo_wide_types", "WideTypes"),
        ("echo_container_wide_types", "ContainerWideTypes"),
        ("echo_embedded_arrow", "EmbeddedArrow"),
        ("echo_deep_nested", "DeepNested"),
    ] {
        service.add(checked_echo(
            name,
            "data",
            DataType::Binary,
            false,
            move |column| match column.as_binary::<i32>().iter().next().flatten() {
                Some(bytes) => from_ipc_bytes(bytes, what).map(|_| ()),
                None => Ok(()),
            },
        ));
    }
}
