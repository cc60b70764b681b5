//! Record batches from apache-arrow's own buffers (`ArrowInserter.write` of a Table or a
//! RecordBatch): one copy of each buffer on the JS thread, where the buffers are readable,
//! instead of an IPC stream written by apache-arrow and then copied again. On a connection with
//! shared memory the copy lands in one region of the segment (the connection's `OutputSpace`),
//! from where the batch crosses to the server without another; elsewhere in Rust's heap. The
//! types are those `crate::batches` shares; for others `stage` answers false and the caller
//! sends IPC bytes.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer as ArrowBuffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, SchemaRef};
use napi::bindgen_prelude::{Buffer, Uint8Array};
use napi_derive::napi;
use quiver_client::{OutputRegion, OutputSpace};
use quiver_server_protocol::limits;

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

/// Where a batch's buffers are copied: one region of the segment when the connection lends
/// one, else the heap (a buffer the region has no room for, too). A batch above the insert
/// bound goes to the heap: the inserter sends it in slices, each a copy, so a region would be
/// held for nothing.
struct Destination {
    region: Option<OutputRegion>,
}

impl Destination {
    fn for_columns(space: &OutputSpace, columns: &[ColumnBuffers]) -> Destination {
        let carved = |bytes: &[u8]| bytes.len().next_multiple_of(64);
        let total = columns
            .iter()
            .map(|column| {
                let offsets = column.offsets.as_deref().map_or(0, carved);
                let validity = kept_validity(column).map_or(0, carved);
                offsets + carved(&column.values) + validity
            })
            .sum();
        let whole = total <= limits::INSERT_BATCH_BYTES_MAX;
        Destination {
            region: whole.then(|| space.region(total)).flatten(),
        }
    }

    fn copy(&mut self, bytes: &[u8]) -> ArrowBuffer {
        let carved = self.region.as_mut().and_then(|r| r.buffer(bytes.len()));
        match carved {
            Some(mut buffer) => {
                buffer.as_mut_slice().copy_from_slice(bytes);
                buffer.into_buffer()
            }
            None => ArrowBuffer::from_slice_ref(bytes),
        }
    }
}

/// The validity bitmap a column sends: none when it has no nulls.
fn kept_validity(column: &ColumnBuffers) -> Option<&[u8]> {
    column.validity.as_deref().filter(|_| column.null_count > 0)
}

fn array(
    data_type: &DataType,
    column: &ColumnBuffers,
    into: &mut Destination,
) -> napi::Result<ArrayRef> {
    let mut buffers = Vec::with_capacity(2);
    if let Some(offsets) = &column.offsets {
        buffers.push(into.copy(offsets));
    }
    buffers.push(into.copy(&column.values));
    let nulls = kept_validity(column).map(|bitmap| into.copy(bitmap));
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
    space: &OutputSpace,
) -> napi::Result<RecordBatch> {
    if columns.len() != schema.fields().len() {
        return Err(invalid(format!(
            "a batch of {} columns, its schema has {}",
            columns.len(),
            schema.fields().len()
        )));
    }
    let mut into = Destination::for_columns(space, columns);
    let arrays = schema
        .fields()
        .iter()
        .zip(columns)
        .map(|(field, column)| array(field.data_type(), column, &mut into))
        .collect::<napi::Result<Vec<ArrayRef>>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(num_rows as usize));
    RecordBatch::try_new_with_options(Arc::clone(schema), arrays, &options)
        .map_err(|error| invalid(format!("a batch: {error}")))
}
