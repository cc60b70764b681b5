//! JSON bodies: the envelope `{"data":[…],"meta":{…}}`, NDJSON (one object per row and line), and
//! nested columns as JSON text for formats that hold only flat values (CSV).
//!
//! Rows are objects with the columns in select order and explicit nulls; nested columns (STRUCT,
//! LIST, MAP) are nested JSON; DATE is `YYYY-MM-DD`; TIMESTAMP is written as offloader writes it,
//! `2026-06-01T00:00:00.000000` (always six fractional digits, no zone: DuckDB's TIMESTAMP has
//! none); a zoned column (TIMESTAMPTZ) is shown in UTC with a `Z`, so it is not read as local
//! time; decimals are JSON numbers; NaN and infinities are null.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_json::writer::{make_encoder, EncoderOptions, JsonArray, LineDelimited};
use arrow_json::WriterBuilder;
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, TimeUnit};
use serde::Serialize;

use super::{BodyMeta, RequestFacts};

pub(crate) const DATE_FORMAT: &str = "%Y-%m-%d";
/// DuckDB's TIMESTAMP has no zone: written without one, with microseconds (offloader's form). A
/// zoned column is relabelled UTC first ([`utc_labelled`]) and written with `Z`.
pub(crate) const TIMESTAMP_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6f";
pub(crate) const TIMESTAMP_TZ_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";
/// The zone every zoned timestamp column is relabelled to before it is written as text.
const UTC_OFFSET: &str = "+00:00";

fn writer_builder() -> WriterBuilder {
    WriterBuilder::new()
        .with_explicit_nulls(true)
        .with_date_format(DATE_FORMAT.to_string())
        .with_timestamp_format(TIMESTAMP_FORMAT.to_string())
        .with_timestamp_tz_format(TIMESTAMP_TZ_FORMAT.to_string())
}

fn encoder_options() -> EncoderOptions {
    EncoderOptions::default()
        .with_explicit_nulls(true)
        .with_date_format(DATE_FORMAT.to_string())
        .with_timestamp_format(TIMESTAMP_FORMAT.to_string())
        .with_timestamp_tz_format(TIMESTAMP_TZ_FORMAT.to_string())
}

/// The cacheable part of `meta`, in offloader's order: the Arrow and Parquet bodies' metadata.
#[derive(Serialize)]
struct MetaObject<'a> {
    endpoint: &'a str,
    version: u32,
    snapshot_id: &'a str,
    row_count: u64,
    serving_mode: &'a str,
    freshness: FreshnessObject<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
}

#[derive(Serialize)]
struct FreshnessObject<'a> {
    watermark: Option<&'a str>,
    max_staleness_minutes: Option<u64>,
}

/// `meta` as a JSON object without the per-request facts: the metadata of the Arrow and Parquet
/// bodies (whose bytes are cached whole; their request's facts travel in headers).
pub(crate) fn meta_object(meta: &BodyMeta, row_count: u64, out: &mut Vec<u8>) {
    let object = MetaObject {
        endpoint: &meta.endpoint,
        version: meta.version,
        snapshot_id: &meta.snapshot_id,
        row_count,
        serving_mode: meta.serving_mode.as_str(),
        freshness: FreshnessObject {
            watermark: meta.freshness.watermark.as_deref(),
            max_staleness_minutes: meta.freshness.max_staleness_minutes,
        },
        next_cursor: meta.next_cursor.as_deref(),
    };
    serde_json::to_writer(out, &object).expect("strings and integers always serialize");
}

/// The JSON envelope's `meta`, every field offloader's clients read, in offloader's order.
#[derive(Serialize)]
struct EnvelopeMeta<'a> {
    request_id: &'a str,
    endpoint: &'a str,
    version: u32,
    snapshot_id: &'a str,
    generated_at: &'a str,
    row_count: u64,
    serving_mode: &'a str,
    cache: &'a str,
    freshness: EnvelopeFreshness<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
}

#[derive(Serialize)]
struct EnvelopeFreshness<'a> {
    watermark: Option<&'a str>,
    age_seconds: Option<i64>,
    max_staleness_minutes: Option<u64>,
    stale: bool,
}

/// The envelope's head: `{"data":[rows]`, the part a cache keeps (it is the same for every
/// request with the same cache key). [`envelope_tail`] closes it.
pub(crate) fn envelope_head(batches: &[RecordBatch]) -> Result<Vec<u8>, ArrowError> {
    let row_count: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut body = Vec::with_capacity(256 + row_count * 64);
    body.extend_from_slice(b"{\"data\":");
    let mut writer = writer_builder().build::<_, JsonArray>(&mut body);
    for batch in batches {
        writer.write(&utc_batch(batch)?)?;
    }
    writer.finish()?;
    drop(writer);
    Ok(body)
}

/// The envelope's tail, `,"meta":{…}}`, written per response: the request id, the time, the
/// cache's answer and the freshness's age change from one request to the next.
pub fn envelope_tail(meta: &BodyMeta, facts: &RequestFacts<'_>, row_count: u64) -> Vec<u8> {
    let object = EnvelopeMeta {
        request_id: facts.request_id,
        endpoint: &meta.endpoint,
        version: meta.version,
        snapshot_id: &meta.snapshot_id,
        generated_at: &facts.generated_at,
        row_count,
        serving_mode: meta.serving_mode.as_str(),
        cache: facts.cache,
        freshness: EnvelopeFreshness {
            watermark: meta.freshness.watermark.as_deref(),
            age_seconds: facts.age_seconds,
            max_staleness_minutes: meta.freshness.max_staleness_minutes,
            stale: facts.stale,
        },
        next_cursor: meta.next_cursor.as_deref(),
    };
    let mut tail = Vec::with_capacity(384);
    tail.extend_from_slice(b",\"meta\":");
    serde_json::to_writer(&mut tail, &object).expect("strings and integers always serialize");
    tail.push(b'}');
    tail
}

/// The rows of one batch as NDJSON: one object per line, each line ended by `\n`.
pub(crate) fn ndjson_rows(batch: &RecordBatch, body: &mut Vec<u8>) -> Result<(), ArrowError> {
    let mut writer = writer_builder().build::<_, LineDelimited>(body);
    writer.write(&utc_batch(batch)?)?;
    writer.finish()
}

/// A nested column as a column of JSON text (null stays null), for formats without nesting.
pub(crate) fn as_json_text(field: &FieldRef, array: &dyn Array) -> Result<ArrayRef, ArrowError> {
    let options = encoder_options();
    let mut encoder = make_encoder(field, array, &options)?;
    let mut builder = StringBuilder::with_capacity(array.len(), array.len() * 32);
    let mut value = Vec::with_capacity(256);
    for row in 0..array.len() {
        if encoder.is_null(row) {
            builder.append_null();
            continue;
        }
        value.clear();
        encoder.encode(row, &mut value);
        let text = std::str::from_utf8(&value)
            .map_err(|_| ArrowError::JsonError("the JSON encoder wrote invalid UTF-8".into()))?;
        builder.append_value(text);
    }
    Ok(Arc::new(builder.finish()))
}

/// A zoned timestamp column relabelled UTC (`+00:00`), other columns as they are. The instants do
/// not change (Arrow stores them in UTC whatever the zone); the label does, because arrow's
/// formatter would otherwise need a time-zone database (chrono-tz, not built in) to write a column
/// zoned by name, such as DuckDB's `TIMESTAMPTZ` in a session zone of `Europe/Oslo`.
pub(crate) fn utc_labelled(field: &Field, column: &ArrayRef) -> (Field, ArrayRef) {
    let DataType::Timestamp(unit, Some(zone)) = field.data_type() else {
        return (field.clone(), column.clone());
    };
    if zone.as_ref() == UTC_OFFSET {
        return (field.clone(), column.clone());
    }
    let relabelled: ArrayRef = match unit {
        TimeUnit::Second => Arc::new(
            column
                .as_primitive::<TimestampSecondType>()
                .clone()
                .with_timezone(UTC_OFFSET),
        ),
        TimeUnit::Millisecond => Arc::new(
            column
                .as_primitive::<TimestampMillisecondType>()
                .clone()
                .with_timezone(UTC_OFFSET),
        ),
        TimeUnit::Microsecond => Arc::new(
            column
                .as_primitive::<TimestampMicrosecondType>()
                .clone()
                .with_timezone(UTC_OFFSET),
        ),
        TimeUnit::Nanosecond => Arc::new(
            column
                .as_primitive::<TimestampNanosecondType>()
                .clone()
                .with_timezone(UTC_OFFSET),
        ),
    };
    let field = field.clone().with_data_type(relabelled.data_type().clone());
    (field, relabelled)
}

/// The batch with its zoned timestamp columns relabelled UTC (the batch itself when it has none).
fn utc_batch(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let zoned = |field: &FieldRef| matches!(field.data_type(), DataType::Timestamp(_, Some(_)));
    if !batch.schema_ref().fields().iter().any(zoned) {
        return Ok(batch.clone());
    }
    let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = batch
        .schema_ref()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| utc_labelled(field, column))
        .unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}
