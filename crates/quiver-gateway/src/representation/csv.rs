//! CSV bodies (RFC 4180): a header row of the output columns, then one line per row. Dates and
//! timestamps are written as in JSON; a nested column becomes its JSON text in one quoted field;
//! null is an empty field.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use super::json::{as_json_text, utc_labelled, DATE_FORMAT, TIMESTAMP_FORMAT, TIMESTAMP_TZ_FORMAT};

pub(crate) fn body(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<u8>, ArrowError> {
    let flat_schema = flat(schema);
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut body = Vec::with_capacity(256 + rows * 48);
    let mut writer = arrow_csv::WriterBuilder::new()
        .with_header(true)
        .with_date_format(DATE_FORMAT.to_string())
        .with_timestamp_format(TIMESTAMP_FORMAT.to_string())
        .with_timestamp_tz_format(TIMESTAMP_TZ_FORMAT.to_string())
        .build(&mut body);
    // The header comes from the first batch written: an empty one, so that a response without
    // rows still names its columns.
    writer.write(&RecordBatch::new_empty(flat_schema.clone()))?;
    for batch in batches {
        writer.write(&flatten(&flat_schema, batch)?)?;
    }
    drop(writer);
    Ok(body)
}

/// The schema with every nested column turned into text and every zoned timestamp labelled UTC.
fn flat(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            if field.data_type().is_nested() {
                Field::new(field.name(), DataType::Utf8, true)
            } else {
                let empty = arrow_array::new_empty_array(field.data_type());
                utc_labelled(field, &empty).0
            }
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn flatten(flat_schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let schema = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| -> Result<ArrayRef, ArrowError> {
            if field.data_type().is_nested() {
                as_json_text(field, column.as_ref())
            } else {
                Ok(utc_labelled(field, column).1)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(flat_schema.clone(), columns)
}
