//! The Arrow-native bodies: an Arrow IPC stream, and a Parquet file of one row group. Both carry
//! the envelope's `meta` object as JSON under the schema metadata key [`META_KEY`], so a reader of
//! the body alone knows its snapshot and freshness.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;

use super::json::meta_object;
use super::BodyMeta;

/// The schema metadata key holding the `meta` object (JSON).
pub const META_KEY: &str = "quiver.gateway.meta";

/// Parquet pages: zstd level 1, the cheapest level that still beats snappy's size on text.
const PARQUET_ZSTD_LEVEL: i32 = 1;

fn with_meta(schema: &SchemaRef, meta: &BodyMeta, row_count: u64) -> Schema {
    let mut meta_json = Vec::with_capacity(256);
    meta_object(meta, row_count, &mut meta_json);
    let mut metadata = schema.metadata().clone();
    metadata.insert(
        META_KEY,
        String::from_utf8(meta_json).expect("serde_json writes UTF-8"),
    );
    Schema::new_with_metadata(schema.fields().clone(), metadata)
}

pub(crate) fn arrow_stream(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    meta: &BodyMeta,
) -> Result<Vec<u8>, ArrowError> {
    let row_count: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
    let schema = with_meta(schema, meta, row_count as u64);
    let mut writer = StreamWriter::try_new(Vec::with_capacity(1024 + bytes), &schema)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()?;
    writer.into_inner()
}

pub(crate) fn parquet_file(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    meta: &BodyMeta,
) -> Result<Vec<u8>, ParquetError> {
    let row_count: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let schema = Arc::new(with_meta(schema, meta, row_count as u64));
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(PARQUET_ZSTD_LEVEL)?))
        // No row or byte bound: one row group per response (a response is bounded already, by
        // the endpoint's max_limit).
        .set_max_row_group_row_count(None)
        .set_max_row_group_bytes(None)
        .build();
    let mut writer = ArrowWriter::try_new(Vec::with_capacity(4096), schema, Some(properties))?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.into_inner()
}
