//! Record batches from apache-arrow's own buffers (`ArrowInserter.write` of a Table or a
//! RecordBatch): one copy of each buffer into Rust memory on the JS thread, where the buffers
//! are readable, instead of an IPC stream written by apache-arrow and then copied again. The
//! types are those `crate::batches` shares; for others `stage` answers false and the caller
//! sends IPC bytes.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer as ArrowBuffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, SchemaRef};
use napi::bindgen_prelude::{Buffer, Uint8Array};
use napi_derive::napi;

use crate::batches::shared_layout;
use crate::error::invalid;

/// One column of an apache-arrow batch: its `Data`'s buffers as bytes.
#[napi(object)]
pub struct ColumnBuffers {
    /// The column's first value in its buffers.
    pub offset: u32,
    /// Its values.
    pub length: u32,
    /// Its nulls.
    pub null_count: u32,
    /// The validity bitmap (absent without nulls).
    pub validity: Option<Uint8Array>,
    /// The values (a bitmap for booleans, the bytes for strings and binaries).
    pub values: Uint8Array,
    /// The offsets of strings and binaries.
    pub offsets: Option<Uint8Array>,
}

/// The schema of an IPC stream's bytes, when every column has a layout this module takes.
pub fn schema(schema_ipc: Buffer) -> napi::Result<Option<SchemaRef>> {
    let (schema, _) = crate::ipc::decode(schema_ipc.to_vec())?;
    Ok(schema
        .fields()
        .iter()
        .all(|field| shared_layout(field.data_type()))
        .then_some(schema))
}

fn copied(bytes: &[u8]) -> ArrowBuffer {
    ArrowBuffer::from_slice_ref(bytes)
}

fn array(data_type: &DataType, column: &ColumnBuffers) -> napi::Result<ArrayRef> {
    let mut buffers = Vec::with_capacity(2);
    if let Some(offsets) = &column.offsets {
        buffers.push(copied(offsets));
    }
    buffers.push(copied(&column.values));
    let nulls = column
        .validity
        .as_ref()
        .filter(|_| column.null_count > 0)
        .map(|bitmap| copied(bitmap));
    let data = ArrayData::try_new(
        data_type.clone(),
        column.length as usize,
        nulls,
        column.offset as usize,
        buffers,
        Vec::new(),
    )
    .map_err(|error| invalid(format!("a column's buffers: {error}")))?;
    Ok(make_array(data))
}

/// A batch of `schema` from its columns' buffers.
pub fn batch(
    schema: &SchemaRef,
    num_rows: u32,
    columns: &[ColumnBuffers],
) -> napi::Result<RecordBatch> {
    if columns.len() != schema.fields().len() {
        return Err(invalid(format!(
            "a batch of {} columns, its schema has {}",
            columns.len(),
            schema.fields().len()
        )));
    }
    let arrays = schema
        .fields()
        .iter()
        .zip(columns)
        .map(|(field, column)| array(field.data_type(), column))
        .collect::<napi::Result<Vec<ArrayRef>>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(num_rows as usize));
    RecordBatch::try_new_with_options(Arc::clone(schema), arrays, &options)
        .map_err(|error| invalid(format!("a batch: {error}")))
}
