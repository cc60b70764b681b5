//! Record batches handed to JS without a copy: each Arrow buffer becomes an external
//! ArrayBuffer over the client's own memory (a shared-memory region or the bytes read from the
//! socket), kept alive until V8 collects it; `node/index.js` assembles apache-arrow
//! RecordBatches over them with the schema, which crosses as IPC bytes. A batch with a column
//! whose layout apache-arrow does not share (nested, dictionary, decimal, interval types), or
//! whose validity starts at another offset than its values, crosses as IPC bytes instead.

use std::ffi::c_void;
use std::ptr;

use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer as ArrowBuffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, SchemaRef};
use napi::bindgen_prelude::{Buffer, ToNapiValue};
use napi::{check_status, sys};

use crate::ipc;
use crate::values::{Js, Value};

/// Batches to hand to JS, each as buffers or as IPC bytes.
pub struct Batches {
    /// Their schema.
    pub schema: SchemaRef,
    /// The batches.
    pub batches: Vec<RecordBatch>,
}

/// Whether apache-arrow lays out `data_type` as arrow-rs does: one values buffer, or offsets
/// then values, and no children.
pub fn shared_layout(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Utf8
            | LargeUtf8
            | Binary
            | LargeBinary
    )
}

fn shareable(data: &ArrayData) -> bool {
    shared_layout(data.data_type())
        && data
            .nulls()
            .is_none_or(|nulls| nulls.offset() == data.offset())
}

unsafe extern "C" fn release(env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the box `external` leaked for this ArrayBuffer, released once.
    let buffer = unsafe { Box::from_raw(hint as *mut ArrowBuffer) };
    let mut adjusted = 0;
    // SAFETY: `env` is the one V8 passes to this finalizer; the call only adjusts V8's accounting.
    unsafe { sys::napi_adjust_external_memory(env, -(buffer.len() as i64), &mut adjusted) };
}

/// An ArrayBuffer over `buffer`'s bytes, holding it until collected. V8 is told the size, so
/// a large result makes it collect sooner (and give shared-memory regions back).
fn external(js: Js, buffer: &ArrowBuffer) -> napi::Result<Value> {
    let mut value = ptr::null_mut();
    if buffer.is_empty() {
        // SAFETY: an empty ArrayBuffer needs no data pointer; `js.0` is the call's env.
        check_status!(unsafe {
            sys::napi_create_arraybuffer(js.0, 0, ptr::null_mut(), &mut value)
        })?;
        return Ok(value);
    }
    let owner = Box::into_raw(Box::new(buffer.clone()));
    // SAFETY: V8 keeps `buffer`'s bytes only while the ArrayBuffer lives, and `owner` (which holds
    // them) is released exactly once, by `release`, when it is collected.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            js.0,
            buffer.as_ptr() as *mut c_void,
            buffer.len(),
            Some(release),
            owner as *mut c_void,
            &mut value,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to V8, so still ours.
        drop(unsafe { Box::from_raw(owner) });
        check_status!(status)?;
    }
    let mut adjusted = 0;
    // SAFETY: `js.0` is the call's env; this only adjusts V8's accounting.
    check_status!(unsafe {
        sys::napi_adjust_external_memory(js.0, buffer.len() as i64, &mut adjusted)
    })?;
    Ok(value)
}

/// `{ offset, length, nullCount, validity, values, offsets }` of one column.
fn column(js: Js, data: &ArrayData) -> napi::Result<Value> {
    let object = js.object()?;
    let null = js.null()?;
    js.set(
        object,
        js.string("offset")?,
        js.number(data.offset() as f64)?,
    )?;
    js.set(object, js.string("length")?, js.number(data.len() as f64)?)?;
    js.set(
        object,
        js.string("nullCount")?,
        js.number(data.null_count() as f64)?,
    )?;
    let validity = match data.nulls() {
        Some(nulls) if nulls.null_count() > 0 => external(js, nulls.buffer())?,
        _ => null,
    };
    js.set(object, js.string("validity")?, validity)?;
    let buffers = data.buffers();
    let (offsets, values) = match buffers {
        [values] => (null, external(js, values)?),
        [offsets, values] => (external(js, offsets)?, external(js, values)?),
        _ => return Err(napi::Error::from_reason("an array of an unexpected layout")),
    };
    js.set(object, js.string("offsets")?, offsets)?;
    js.set(object, js.string("values")?, values)?;
    Ok(object)
}

/// `{ numRows, columns }`, or `{ ipc }` for a batch that cannot be shared.
fn batch(js: Js, batch: &RecordBatch) -> napi::Result<Value> {
    let object = js.object()?;
    let data: Vec<ArrayData> = batch.columns().iter().map(|c| c.to_data()).collect();
    if !data.iter().all(shareable) {
        let bytes = ipc::encode(batch.schema_ref(), std::slice::from_ref(batch))?;
        // SAFETY: `js.0` is the env of the call in progress; the Buffer takes ownership of `bytes`.
        let bytes = unsafe { Buffer::to_napi_value(js.0, bytes.into())? };
        js.set(object, js.string("ipc")?, bytes)?;
        return Ok(object);
    }
    let columns = js.array(data.len())?;
    for (index, data) in data.iter().enumerate() {
        js.set_element(columns, index, column(js, data)?)?;
    }
    js.set(
        object,
        js.string("numRows")?,
        js.number(batch.num_rows() as f64)?,
    )?;
    js.set(object, js.string("columns")?, columns)?;
    Ok(object)
}

impl ToNapiValue for Batches {
    unsafe fn to_napi_value(env: sys::napi_env, result: Batches) -> napi::Result<sys::napi_value> {
        let js = Js(env);
        let out = js.object()?;
        let schema = ipc::encode(&result.schema, &[])?;
        // SAFETY: `env` is the env napi passes to this conversion; the Buffer owns `schema`.
        js.set(out, js.string("schema")?, unsafe {
            Buffer::to_napi_value(env, schema.into())?
        })?;
        let batches = js.array(result.batches.len())?;
        for (index, one) in result.batches.iter().enumerate() {
            js.set_element(batches, index, batch(js, one)?)?;
        }
        js.set(out, js.string("batches")?, batches)?;
        Ok(out)
    }
}
