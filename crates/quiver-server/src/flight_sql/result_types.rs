//! The Arrow types a Flight SQL client's results arrive in: DuckDB's own (`arrow`), or `portable`
//! ones a JDBC driver reads without surprises.
//!
//! The Arrow Flight SQL JDBC driver (18.3) reads a dictionary as its indices (an `ENUM`'s
//! `'happy'` as `1`), an unsigned integer as the signed one of its width (`UBIGINT`'s maximum as
//! `-1`), and throws on `getObject` for a timestamp with a time zone. Java has no unsigned types
//! and JDBC no dictionaries, so `portable` sends what a JDBC user expects, losing no value: an
//! `ENUM` (any dictionary) as its labels, `UTINYINT`/`USMALLINT`/`UINTEGER` widened to the next
//! signed integer, `UBIGINT` as `DECIMAL(20, 0)`, `TIMESTAMPTZ` as a `TIMESTAMP` in UTC.
//! Arrow-native clients (ADBC, pyarrow) read DuckDB's own types, which keep more (a dictionary
//! stays one, a zone stays named), so the choice is the client's, per call:
//!
//! - the header `quiver-result-types: arrow | portable` decides (the JDBC driver sends a URL
//!   property as a header: `...?quiver-result-types=arrow`; ADBC takes
//!   `adbc.flight.sql.rpc.call_header.quiver-result-types`);
//! - without it, a client of gRPC's Java library (`user-agent: grpc-java...`, which the JDBC driver
//!   is) gets `portable`, every other client `arrow`.
//!
//! Every call of a statement (its `FlightInfo`, a prepared statement's schema, the `DoGet`) sends
//! the same headers, so the schema a client is told is the schema its stream has.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use tonic::metadata::MetadataMap;
use tonic::Status;

/// The header that chooses.
pub const HEADER: &str = "quiver-result-types";
/// The user agent prefix of gRPC's Java library, the JDBC driver's transport.
const JAVA_USER_AGENT: &str = "grpc-java";
/// `UBIGINT`'s maximum has 20 digits.
const UBIGINT_DIGITS: u8 = 20;

/// Which types a client's results arrive in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultTypes {
    /// DuckDB's Arrow types, as they are.
    Arrow,
    /// Types a JDBC driver reads as their values.
    Portable,
}

impl ResultTypes {
    /// The client's choice, from its call's headers.
    pub fn of(metadata: &MetadataMap) -> Result<ResultTypes, Status> {
        if let Some(value) = metadata.get(HEADER) {
            return match value.to_str().map(str::trim) {
                Ok("arrow") => Ok(ResultTypes::Arrow),
                Ok("portable") => Ok(ResultTypes::Portable),
                _ => Err(Status::invalid_argument(format!(
                    "{HEADER}: expected arrow or portable, got {value:?}"
                ))),
            };
        }
        let java = metadata
            .get("user-agent")
            .and_then(|agent| agent.to_str().ok())
            .is_some_and(|agent| agent.starts_with(JAVA_USER_AGENT));
        Ok(if java {
            ResultTypes::Portable
        } else {
            ResultTypes::Arrow
        })
    }

    /// The schema results of `schema` arrive in.
    pub fn schema(self, schema: &SchemaRef) -> SchemaRef {
        if self == ResultTypes::Arrow {
            return Arc::clone(schema);
        }
        let fields: Fields = schema.fields().iter().map(portable_field).collect();
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// `batch` in `schema` (what [`ResultTypes::schema`] answered for the batch's own schema).
    pub fn batch(self, batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, Status> {
        if self == ResultTypes::Arrow || batch.schema().fields() == schema.fields() {
            return Ok(batch);
        }
        let failed = |e: arrow_schema::ArrowError| {
            Status::internal(format!("converting a result to portable types: {e}"))
        };
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(column, field)| {
                if column.data_type() == field.data_type() {
                    Ok(Arc::clone(column))
                } else {
                    arrow_cast::cast(column, field.data_type())
                }
            })
            .collect::<Result<Vec<ArrayRef>, _>>()
            .map_err(failed)?;
        RecordBatch::try_new(Arc::clone(schema), columns).map_err(failed)
    }
}

fn portable_field(field: &FieldRef) -> FieldRef {
    match portable(field.data_type()) {
        Some(data_type) => Arc::new(field.as_ref().clone().with_data_type(data_type)),
        None => Arc::clone(field),
    }
}

/// `data_type`'s portable type, `None` when it is its own.
fn portable(data_type: &DataType) -> Option<DataType> {
    let list = |field: &FieldRef| portable(field.data_type()).map(|t| field_of(field, t));
    match data_type {
        DataType::Dictionary(_, values) => Some(portable(values).unwrap_or((**values).clone())),
        DataType::UInt8 => Some(DataType::Int16),
        DataType::UInt16 => Some(DataType::Int32),
        DataType::UInt32 => Some(DataType::Int64),
        DataType::UInt64 => Some(DataType::Decimal128(UBIGINT_DIGITS, 0)),
        DataType::Timestamp(unit, Some(_)) => Some(DataType::Timestamp(*unit, None)),
        DataType::List(field) => list(field).map(DataType::List),
        DataType::LargeList(field) => list(field).map(DataType::LargeList),
        DataType::FixedSizeList(field, size) => {
            list(field).map(|f| DataType::FixedSizeList(f, *size))
        }
        DataType::Map(field, sorted) => list(field).map(|f| DataType::Map(f, *sorted)),
        DataType::Struct(fields) => {
            let changed = fields.iter().any(|f| portable(f.data_type()).is_some());
            changed.then(|| DataType::Struct(fields.iter().map(portable_field).collect()))
        }
        _ => None,
    }
}

fn field_of(field: &FieldRef, data_type: DataType) -> FieldRef {
    Arc::new(Field::clone(field).with_data_type(data_type))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int8Type;
    use arrow_array::{
        Array, Decimal128Array, DictionaryArray, Int16Array, ListArray, StringArray,
        TimestampMicrosecondArray, UInt64Array, UInt8Array,
    };
    use arrow_schema::TimeUnit;
    use tonic::metadata::MetadataValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> MetadataMap {
        let mut map = MetadataMap::new();
        for (key, value) in pairs {
            map.insert(*key, MetadataValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_header_decides_and_java_clients_default_to_portable() {
        let of = |pairs: &[(&'static str, &'static str)]| ResultTypes::of(&headers(pairs));
        assert_eq!(of(&[]).unwrap(), ResultTypes::Arrow);
        assert_eq!(
            of(&[("user-agent", "grpc-java-netty/1.71.0")]).unwrap(),
            ResultTypes::Portable
        );
        assert_eq!(
            of(&[("user-agent", "grpc-go/1.7"), (HEADER, "portable")]).unwrap(),
            ResultTypes::Portable
        );
        assert_eq!(
            of(&[("user-agent", "grpc-java-netty/1.71.0"), (HEADER, "arrow")]).unwrap(),
            ResultTypes::Arrow
        );
        let refused = of(&[(HEADER, "jdbc")]).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    }

    #[test]
    fn portable_results_keep_every_value() {
        let mood: DictionaryArray<Int8Type> = vec!["happy", "sad", "happy"].into_iter().collect();
        let zoned = TimestampMicrosecondArray::from(vec![1, 2, 3]).with_timezone("Etc/UTC");
        let tiny = UInt8Array::from(vec![0, 255, 1]);
        let huge = UInt64Array::from(vec![0, u64::MAX, 7]);
        let moods = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            None,
            Some(vec![]),
        ]);
        let batch = RecordBatch::try_from_iter([
            ("mood", Arc::new(mood) as ArrayRef),
            ("at", Arc::new(zoned) as ArrayRef),
            ("tiny", Arc::new(tiny) as ArrayRef),
            ("huge", Arc::new(huge) as ArrayRef),
            ("list", Arc::new(moods) as ArrayRef),
        ])
        .unwrap();
        let types = ResultTypes::Portable;
        let schema = types.schema(&batch.schema());
        let converted = types.batch(batch.clone(), &schema).unwrap();
        let column = |name: &str| converted.column_by_name(name).unwrap();
        let labels = column("mood")
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(labels.value(0), "happy");
        assert_eq!(
            column("at").data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        let tiny = column("tiny")
            .as_any()
            .downcast_ref::<Int16Array>()
            .unwrap();
        assert_eq!(tiny.value(1), 255);
        let huge = column("huge")
            .as_any()
            .downcast_ref::<Decimal128Array>()
            .unwrap();
        assert_eq!(huge.value(1), i128::from(u64::MAX));
        assert_eq!(column("list").data_type(), batch.column(4).data_type());
        assert_eq!(
            ResultTypes::Arrow
                .batch(batch.clone(), &batch.schema())
                .unwrap(),
            batch
        );
    }
}
