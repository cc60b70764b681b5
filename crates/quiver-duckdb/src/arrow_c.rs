//! Record batches across the C ABI: a batch travels as a struct `ArrowArray` (one child per
//! column) with a struct `ArrowSchema`, the form DuckDB's `ArrowConverter` writes and its Arrow
//! scan reads. Importing takes ownership of the array (its buffers stay where the producer put
//! them); exporting hands ours over the same way — no copy either direction.

use std::sync::Arc;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::{Schema, SchemaRef};

use crate::ffi::{Failure, Outcome};

/// Takes the array at `array` (leaving a released one behind) and reads it as a batch of
/// `schema`, which the caller keeps.
///
/// # Safety
/// `array` must point to a valid, unreleased `ArrowArray` of a struct type matching `schema`.
pub unsafe fn import_batch(
    array: *mut FFI_ArrowArray,
    schema: &FFI_ArrowSchema,
    what: &str,
) -> Outcome<RecordBatch> {
    if array.is_null() {
        return Err(Failure::invalid(format!("{what}: array is null")));
    }
    // SAFETY: by this function's contract; the replacement is a released (empty) array.
    let owned = unsafe { std::ptr::replace(array, FFI_ArrowArray::empty()) };
    // SAFETY: `owned` is valid for `schema` by this function's contract.
    let data =
        unsafe { from_ffi(owned, schema) }.map_err(|e| Failure::invalid(format!("{what}: {e}")))?;
    let struct_array = StructArray::from(data);
    if struct_array.null_count() > 0 {
        return Err(Failure::invalid(format!("{what}: null rows in a batch")));
    }
    Ok(RecordBatch::from(struct_array))
}

/// Reads a schema the caller keeps.
///
/// # Safety
/// `schema` must be null or point to a valid `ArrowSchema`.
pub unsafe fn import_schema(schema: *const FFI_ArrowSchema, what: &str) -> Outcome<SchemaRef> {
    // SAFETY: by this function's contract.
    let schema =
        unsafe { schema.as_ref() }.ok_or_else(|| Failure::invalid(format!("{what} is null")))?;
    Schema::try_from(schema)
        .map(Arc::new)
        .map_err(|e| Failure::invalid(format!("{what}: {e}")))
}

/// Exports `batch` as a struct array into `out` (the caller releases it).
///
/// # Safety
/// `out` must be valid for one write.
pub unsafe fn export_batch(batch: RecordBatch, out: *mut FFI_ArrowArray) -> Outcome<()> {
    let data = StructArray::from(batch).into_data();
    let (array, _schema) = to_ffi(&data)?;
    // SAFETY: by this function's contract.
    unsafe { crate::ffi::write_out(out, array, "out") }
}

/// Exports a schema into `out` (the caller releases it).
///
/// # Safety
/// `out` must be valid for one write.
pub unsafe fn export_schema(schema: &Schema, out: *mut FFI_ArrowSchema) -> Outcome<()> {
    let exported = FFI_ArrowSchema::try_from(schema)?;
    // SAFETY: by this function's contract.
    unsafe { crate::ffi::write_out(out, exported, "out") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field};

    #[test]
    fn batches_round_trip() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
        )
        .unwrap();
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: valid out pointer.
        unsafe { export_batch(batch.clone(), &mut array) }.unwrap();
        let ffi_schema =
            FFI_ArrowSchema::try_from(&DataType::Struct(schema.fields().clone())).unwrap();
        // SAFETY: the array was just exported with that schema.
        let back = unsafe { import_batch(&mut array, &ffi_schema, "test") }.unwrap();
        assert_eq!(back, batch);
        assert!(array.is_released());
    }
}
