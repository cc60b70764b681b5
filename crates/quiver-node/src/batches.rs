//! Record batches handed to JS without a copy: each Arrow buffer becomes a view into an external
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

unsafe extern "C" fn release(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the box `external` leaked for this ArrayBuffer, released once.
    drop(unsafe { Box::from_raw(hint as *mut Span) });
}

/// Bytes `[start, start + len)`, which the buffers in `owners` keep alive.
struct Span {
    /// Held, never read: the memory lives while they do.
    _owners: Vec<ArrowBuffer>,
    start: *const u8,
    len: usize,
}

/// An ArrayBuffer over `span`'s bytes, holding its owners until collected. V8 counts its bytes
/// as external memory itself, so a large result makes it collect sooner (and give shared-memory
/// regions back); reporting them again through `napi_adjust_external_memory` would double the
/// count, and the collections.
fn external(js: Js, span: Span) -> napi::Result<Value> {
    let mut value = ptr::null_mut();
    if span.len == 0 {
        // SAFETY: an empty ArrayBuffer needs no data pointer; `js.0` is the call's env.
        check_status!(unsafe {
            sys::napi_create_arraybuffer(js.0, 0, ptr::null_mut(), &mut value)
        })?;
        return Ok(value);
    }
    let (start, len) = (span.start, span.len);
    let owner = Box::into_raw(Box::new(span));
    // SAFETY: V8 keeps the span's bytes only while the ArrayBuffer lives, and `owner` (which holds
    // them) is released exactly once, by `release`, when it is collected.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            js.0,
            start as *mut c_void,
            len,
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
    Ok(value)
}

/// A view's offset into its ArrayBuffer must suit any element type apache-arrow reads from it.
const VIEW_ALIGNMENT: usize = 8;

/// One allocation a batch's buffers lie in (all of them start at `data`, so every byte between
/// their lowest start and highest end belongs to one of their allocations).
struct Allocation {
    data: *const u8,
    buffers: Vec<ArrowBuffer>,
    start: *const u8,
    end: *const u8,
    array_buffer: Option<Value>,
}

impl Allocation {
    /// Whether `buffer` (not empty, so within `start..end`) lies in this allocation at an
    /// offset a typed array may start at.
    fn holds(&self, buffer: &ArrowBuffer) -> bool {
        ptr::eq(buffer.data_ptr().as_ptr(), self.data)
            && (buffer.as_ptr() as usize - self.start as usize).is_multiple_of(VIEW_ALIGNMENT)
    }

    /// The allocation's ArrayBuffer, made on first use.
    fn array_buffer(&mut self, js: Js) -> napi::Result<Value> {
        if let Some(made) = self.array_buffer {
            return Ok(made);
        }
        let span = Span {
            _owners: self.buffers.clone(),
            start: self.start,
            len: self.end as usize - self.start as usize,
        };
        Ok(*self.array_buffer.insert(external(js, span)?))
    }
}

/// The ArrayBuffers of one batch: one per allocation its buffers lie in (a shared-memory region,
/// or the body read from the socket), so a batch costs V8 a few external buffers instead of one
/// per Arrow buffer. A buffer at an offset no typed array may start at gets one of its own.
struct Spans {
    allocations: Vec<Allocation>,
}

impl Spans {
    fn new<'a>(buffers: impl Iterator<Item = &'a ArrowBuffer>) -> Spans {
        let mut allocations: Vec<Allocation> = Vec::new();
        for buffer in buffers.filter(|buffer| !buffer.is_empty()) {
            let data = buffer.data_ptr().as_ptr() as *const u8;
            let (start, end) = (buffer.as_ptr(), buffer.as_ptr().wrapping_add(buffer.len()));
            match allocations.iter_mut().find(|each| each.data == data) {
                Some(each) => {
                    each.start = each.start.min(start);
                    each.end = each.end.max(end);
                    each.buffers.push(buffer.clone());
                }
                None => allocations.push(Allocation {
                    data,
                    buffers: vec![buffer.clone()],
                    start,
                    end,
                    array_buffer: None,
                }),
            }
        }
        Spans { allocations }
    }

    /// A Uint8Array over `buffer`'s bytes.
    fn view(&mut self, js: Js, buffer: &ArrowBuffer) -> napi::Result<Value> {
        let shared = match buffer.is_empty() {
            true => None,
            false => self.allocations.iter_mut().find(|each| each.holds(buffer)),
        };
        let (array_buffer, offset) = match shared {
            Some(each) => (
                each.array_buffer(js)?,
                buffer.as_ptr() as usize - each.start as usize,
            ),
            _ => {
                let span = Span {
                    _owners: vec![buffer.clone()],
                    start: buffer.as_ptr(),
                    len: buffer.len(),
                };
                (external(js, span)?, 0)
            }
        };
        let mut value = ptr::null_mut();
        // SAFETY: `js.0` is the call's env; `offset + len` lies inside `array_buffer` (a span
        // covers every buffer of its allocation).
        check_status!(unsafe {
            sys::napi_create_typedarray(
                js.0,
                sys::TypedarrayType::uint8_array,
                buffer.len(),
                array_buffer,
                offset,
                &mut value,
            )
        })?;
        Ok(value)
    }
}

/// `{ offset, length, nullCount, validity, values, offsets }` of one column, the buffers as
/// Uint8Arrays.
fn column(js: Js, spans: &mut Spans, data: &ArrayData) -> napi::Result<Value> {
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
        Some(nulls) if nulls.null_count() > 0 => spans.view(js, nulls.buffer())?,
        _ => null,
    };
    js.set(object, js.string("validity")?, validity)?;
    let (offsets, values) = match data.buffers() {
        [values] => (null, spans.view(js, values)?),
        [offsets, values] => (spans.view(js, offsets)?, spans.view(js, values)?),
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
    let mut spans = Spans::new(data.iter().flat_map(|data| {
        let validity = data
            .nulls()
            .filter(|nulls| nulls.null_count() > 0)
            .map(|nulls| nulls.buffer());
        data.buffers().iter().chain(validity)
    }));
    let columns = js.array(data.len())?;
    for (index, data) in data.iter().enumerate() {
        js.set_element(columns, index, column(js, &mut spans, data)?)?;
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
