//! A query's result as an array of plain row objects (`executeQuery`), built on the JS thread
//! once the whole result has arrived (its size was bounded by `limits::ROWS_MAX`).

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use napi::bindgen_prelude::ToNapiValue;
use napi::sys;

use crate::values::{Cells, Js};

/// Batches to hand to JS as row objects.
pub struct Rows {
    /// The result's schema (the keys of every row).
    pub schema: SchemaRef,
    /// The result.
    pub batches: Vec<RecordBatch>,
}

impl ToNapiValue for Rows {
    unsafe fn to_napi_value(env: sys::napi_env, rows: Rows) -> napi::Result<sys::napi_value> {
        let js = Js(env);
        let total: usize = rows.batches.iter().map(RecordBatch::num_rows).sum();
        let array = js.array(total)?;
        // One key string per column, shared by every row.
        let keys = rows
            .schema
            .fields()
            .iter()
            .map(|field| js.string(field.name()))
            .collect::<napi::Result<Vec<_>>>()?;
        let null = js.null()?;
        let mut index = 0;
        for batch in &rows.batches {
            // The row objects live on in the array: a scope per batch keeps the handle table
            // of the call from growing with the whole result.
            let mut scope = std::ptr::null_mut();
            napi::check_status!(unsafe { sys::napi_open_handle_scope(env, &mut scope) })?;
            let columns = batch
                .columns()
                .iter()
                .map(|column| Cells::new(column.as_ref()))
                .collect::<napi::Result<Vec<_>>>()?;
            for row in 0..batch.num_rows() {
                let object = js.object()?;
                for ((key, cells), column) in keys.iter().zip(&columns).zip(batch.columns()) {
                    let value = if column.is_null(row) {
                        null
                    } else {
                        cells.value(js, row)?
                    };
                    js.set(object, *key, value)?;
                }
                js.set_element(array, index, object)?;
                index += 1;
            }
            napi::check_status!(unsafe { sys::napi_close_handle_scope(env, scope) })?;
        }
        debug_assert_eq!(index, total);
        Ok(array)
    }
}
