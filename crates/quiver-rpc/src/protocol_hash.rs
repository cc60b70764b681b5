//! The protocol hash: a fingerprint of a protocol's wire surface that every
//! vgi-rpc port computes identically, so a client can tell whether a worker
//! speaks the protocol it was built against without fetching the description.
//!
//! `sha256("vgi_rpc.protocol_hash.v1|" + canonical JSON)` over the protocol
//! name and, per method sorted by name: its name, kind, whether it returns a
//! value or sends a header, and its parameter, result and header schemas as
//! ordered `{name, nullable, type}` lists. Types are spelled as the text tokens
//! below (`list<item?:utf8>`, `timestamp(us,tz=UTC)`), never as numbers, so the
//! canonical JSON holds only objects, arrays, strings and booleans.

use std::collections::BTreeMap;

use arrow_schema::{DataType, Field, IntervalUnit, Schema, TimeUnit, UnionMode};
use sha2::{Digest, Sha256};

use crate::method::Method;
use crate::service::Service;

/// Moves only when the hash's definition moves.
const HASH_DOMAIN: &[u8] = b"vgi_rpc.protocol_hash.v1|";

/// The hash of `service`'s wire surface, or the reason a type has no token.
pub fn protocol_hash(service: &Service) -> Result<String, String> {
    let preimage = Json::object([
        ("protocol", Json::Str(service.protocol_name.clone())),
        (
            "methods",
            Json::Array(
                service
                    .methods()
                    .map(method_entry)
                    .collect::<Result<_, _>>()?,
            ),
        ),
    ]);
    let mut bytes = HASH_DOMAIN.to_vec();
    bytes.extend_from_slice(preimage.canonical().as_bytes());
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

fn method_entry(method: &Method) -> Result<Json, String> {
    let unary = method.is_unary();
    let has_return = unary && !method.result_schema.fields().is_empty();
    let mut entry = vec![
        ("name", Json::Str(method.name.clone())),
        (
            "type",
            Json::Str(if unary { "unary" } else { "stream" }.into()),
        ),
        ("has_return", Json::Bool(has_return)),
        ("has_header", Json::Bool(method.header_schema.is_some())),
        ("params", schema_tokens(&method.params_schema)?),
    ];
    // Absent and empty differ: a void method is not one returning an empty struct.
    if has_return {
        entry.push(("result", schema_tokens(&method.result_schema)?));
    }
    if let Some(header) = &method.header_schema {
        entry.push(("header", schema_tokens(header)?));
    }
    Ok(Json::object(entry))
}

fn schema_tokens(schema: &Schema) -> Result<Json, String> {
    let fields = schema
        .fields()
        .iter()
        .map(|field| {
            Ok(Json::object([
                ("name", Json::Str(field.name().clone())),
                ("nullable", Json::Bool(field.is_nullable())),
                ("type", Json::Str(type_token(field.data_type())?)),
            ]))
        })
        .collect::<Result<_, String>>()?;
    Ok(Json::Array(fields))
}

/// The canonical text of an Arrow type. Child names Arrow's own type equality
/// ignores (a list's item, a map's key and value) are normalised; child
/// nullability is kept, since it is part of the type.
pub fn type_token(data_type: &DataType) -> Result<String, String> {
    use DataType as T;
    let token = match data_type {
        T::Null => "null".into(),
        T::Boolean => "bool".into(),
        T::Int8 => "int8".into(),
        T::Int16 => "int16".into(),
        T::Int32 => "int32".into(),
        T::Int64 => "int64".into(),
        T::UInt8 => "uint8".into(),
        T::UInt16 => "uint16".into(),
        T::UInt32 => "uint32".into(),
        T::UInt64 => "uint64".into(),
        T::Float16 => "float16".into(),
        T::Float32 => "float32".into(),
        T::Float64 => "float64".into(),
        T::Utf8 => "utf8".into(),
        T::LargeUtf8 => "large_utf8".into(),
        T::Utf8View => "utf8_view".into(),
        T::Binary => "binary".into(),
        T::LargeBinary => "large_binary".into(),
        T::BinaryView => "binary_view".into(),
        T::Date32 => "date32".into(),
        T::Date64 => "date64".into(),
        T::Interval(IntervalUnit::YearMonth) => "interval_months".into(),
        T::Interval(IntervalUnit::DayTime) => "interval_day_time".into(),
        T::Interval(IntervalUnit::MonthDayNano) => "interval_month_day_nano".into(),
        T::FixedSizeBinary(width) => format!("fixed_size_binary({width})"),
        T::Decimal128(precision, scale) => format!("decimal128({precision},{scale})"),
        T::Decimal256(precision, scale) => format!("decimal256({precision},{scale})"),
        T::Time32(unit) => format!("time32({})", unit_token(unit)),
        T::Time64(unit) => format!("time64({})", unit_token(unit)),
        T::Timestamp(unit, None) => format!("timestamp({})", unit_token(unit)),
        T::Timestamp(unit, Some(tz)) => format!("timestamp({},tz={tz})", unit_token(unit)),
        T::Duration(unit) => format!("duration({})", unit_token(unit)),
        T::FixedSizeList(item, size) => {
            format!("fixed_size_list({size})<{}>", anonymous(item, "item")?)
        }
        T::List(item) => format!("list<{}>", anonymous(item, "item")?),
        T::LargeList(item) => format!("large_list<{}>", anonymous(item, "item")?),
        T::ListView(item) => format!("list_view<{}>", anonymous(item, "item")?),
        T::LargeListView(item) => format!("large_list_view<{}>", anonymous(item, "item")?),
        T::Map(entries, keys_sorted) => {
            let DataType::Struct(children) = entries.data_type() else {
                return Err(format!("map entries are not a struct: {data_type}"));
            };
            if children.len() != 2 {
                return Err(format!("map entries need two children: {data_type}"));
            }
            let sorted = if *keys_sorted { ",keys_sorted" } else { "" };
            format!(
                "map<{},{}>{sorted}",
                anonymous(&children[0], "key")?,
                anonymous(&children[1], "value")?
            )
        }
        T::Struct(children) => {
            let children = children
                .iter()
                .map(|child| named(child))
                .collect::<Result<Vec<_>, _>>()?;
            format!("struct<{}>", children.join(","))
        }
        T::Union(children, mode) => {
            let kind = match mode {
                UnionMode::Sparse => "sparse_union",
                UnionMode::Dense => "dense_union",
            };
            let children = children
                .iter()
                .map(|(code, child)| Ok(format!("{code}={}", named(child)?)))
                .collect::<Result<Vec<_>, String>>()?;
            format!("{kind}<{}>", children.join(","))
        }
        T::Dictionary(index, value) => format!(
            "dictionary<index:{},value:{}>",
            type_token(index)?,
            type_token(value)?
        ),
        T::RunEndEncoded(run_ends, values) => format!(
            "run_end_encoded<run_ends:{},values:{}>",
            type_token(run_ends.data_type())?,
            type_token(values.data_type())?
        ),
        other => return Err(format!("Arrow type {other} has no canonical token")),
    };
    Ok(token)
}

fn unit_token(unit: &TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// `name:token`, or `name?:token` for a nullable child.
fn named(field: &Field) -> Result<String, String> {
    anonymous(field, field.name())
}

/// A child spelled under a fixed `name`, whatever it is called.
fn anonymous(field: &Field, name: &str) -> Result<String, String> {
    let optional = if field.is_nullable() { "?" } else { "" };
    Ok(format!(
        "{name}{optional}:{}",
        type_token(field.data_type())?
    ))
}

/// The JSON subset the preimage uses: no numbers, no nulls.
enum Json {
    Str(String),
    Bool(bool),
    Array(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

impl Json {
    fn object<'k>(entries: impl IntoIterator<Item = (&'k str, Json)>) -> Json {
        Json::Object(
            entries
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
        )
    }

    /// RFC 8785 for this subset: keys sorted (all keys here are ASCII, where
    /// UTF-16 order is byte order), no whitespace, strings escaped minimally.
    fn canonical(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Str(text) => out.push_str(&escape(text)),
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&escape(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn escape(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serializes")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{DataType, Field, TimeUnit};

    use super::{protocol_hash, type_token};
    use crate::method::Method;
    use crate::service::Service;

    #[test]
    fn tokens_spell_types_as_the_reference_does() {
        let list = DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)));
        assert_eq!(type_token(&list).unwrap(), "list<item?:utf8>");
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(type_token(&utc).unwrap(), "timestamp(us,tz=UTC)");
        assert_eq!(
            type_token(&DataType::Decimal128(20, 4)).unwrap(),
            "decimal128(20,4)"
        );
        let dictionary = DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8));
        assert_eq!(
            type_token(&dictionary).unwrap(),
            "dictionary<index:int16,value:utf8>"
        );
    }

    /// The reference's own hash for its reflection protocol (two unary methods
    /// returning `binary`), computed by vgi-rpc 0.52.2.
    #[test]
    fn matches_the_reference_hash_of_reflection() {
        let result = || Some(Field::new("result", DataType::Binary, false));
        let service = Service::new("vgi_rpc.Reflection.v1", "1.0.0")
            .with(Method::unary("list_protocols", vec![], result(), |_, _| {
                Ok(None)
            }))
            .with(Method::unary(
                "describe",
                vec![Field::new("protocol", DataType::Utf8, false)],
                result(),
                |_, _| Ok(None),
            ));
        assert_eq!(
            protocol_hash(&service).unwrap(),
            "3c7db4cae8cdfc93dc4a76e73b8b759e18e45e6a5811adba4e520366344b919a"
        );
    }
}
