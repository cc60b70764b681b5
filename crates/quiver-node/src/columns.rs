//! A query's result column by column (`executeQueryColumnar`): numeric columns as typed arrays
//! (their bytes handed to JS without a per-value call), 64-bit integers as BigInt64Array /
//! BigUint64Array, booleans as Uint8Array (0/1), strings and every other type as arrays of
//! values (`crate::values`). A column with nulls also gets a Uint8Array in `nulls` (1 = null;
//! the typed array holds 0 there). Columns are listed by position with their names;
//! `node/index.js` keys them by name (`executeQueryColumnar`) or builds row objects from them
//! (`executeQuery`), so rows cost one JS object each and no call across the boundary.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use napi::bindgen_prelude::{
    BigInt64Array, BigUint64Array, Float32Array, Float64Array, Int16Array, Int32Array, Int8Array,
    ToNapiValue, Uint16Array, Uint32Array, Uint8Array,
};
use napi::sys;

use crate::values::{Cells, Js, Value};

/// Batches to hand to JS as columns.
pub struct Columns {
    /// The result's schema (the column names).
    pub schema: SchemaRef,
    /// The result.
    pub batches: Vec<RecordBatch>,
}

/// One column's values across every batch, null slots zeroed.
fn gather<T: ArrowPrimitiveType>(batches: &[RecordBatch], column: usize) -> Vec<T::Native> {
    let total = batches.iter().map(RecordBatch::num_rows).sum();
    let mut values = Vec::with_capacity(total);
    for batch in batches {
        let array = batch.column(column).as_primitive::<T>();
        match array.nulls() {
            None => values.extend_from_slice(array.values()),
            Some(nulls) => values.extend(
                array
                    .values()
                    .iter()
                    .zip(nulls.iter())
                    .map(|(value, valid)| if valid { *value } else { T::Native::default() }),
            ),
        }
    }
    values
}

fn typed(
    env: sys::napi_env,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    column: usize,
) -> napi::Result<Option<Value>> {
    // SAFETY: `env` is the env of the conversion in progress; each typed array takes ownership of
    // the values gathered for it.
    let value = unsafe {
        match schema.field(column).data_type() {
            DataType::Int8 => {
                Int8Array::to_napi_value(env, Int8Array::new(gather::<Int8Type>(batches, column)))?
            }
            DataType::Int16 => Int16Array::to_napi_value(
                env,
                Int16Array::new(gather::<Int16Type>(batches, column)),
            )?,
            DataType::Int32 => Int32Array::to_napi_value(
                env,
                Int32Array::new(gather::<Int32Type>(batches, column)),
            )?,
            DataType::Int64 => BigInt64Array::to_napi_value(
                env,
                BigInt64Array::new(gather::<Int64Type>(batches, column)),
            )?,
            DataType::UInt8 => Uint8Array::to_napi_value(
                env,
                Uint8Array::new(gather::<UInt8Type>(batches, column)),
            )?,
            DataType::UInt16 => Uint16Array::to_napi_value(
                env,
                Uint16Array::new(gather::<UInt16Type>(batches, column)),
            )?,
            DataType::UInt32 => Uint32Array::to_napi_value(
                env,
                Uint32Array::new(gather::<UInt32Type>(batches, column)),
            )?,
            DataType::UInt64 => BigUint64Array::to_napi_value(
                env,
                BigUint64Array::new(gather::<UInt64Type>(batches, column)),
            )?,
            DataType::Float32 => Float32Array::to_napi_value(
                env,
                Float32Array::new(gather::<Float32Type>(batches, column)),
            )?,
            DataType::Float64 => Float64Array::to_napi_value(
                env,
                Float64Array::new(gather::<Float64Type>(batches, column)),
            )?,
            DataType::Boolean => {
                let flags = batches
                    .iter()
                    .flat_map(|batch| {
                        let array = batch.column(column).as_boolean();
                        (0..array.len())
                            .map(move |row| u8::from(array.is_valid(row) && array.value(row)))
                    })
                    .collect();
                Uint8Array::to_napi_value(env, Uint8Array::new(flags))?
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(value))
}

/// A column of any other type as an array of JS values.
fn values(js: Js, batches: &[RecordBatch], column: usize, total: usize) -> napi::Result<Value> {
    let array = js.array(total)?;
    let null = js.null()?;
    let mut index = 0;
    for batch in batches {
        let source = batch.column(column);
        let cells = Cells::new(source.as_ref())?;
        for row in 0..batch.num_rows() {
            let value = if source.is_null(row) {
                null
            } else {
                cells.value(js, row)?
            };
            js.set_element(array, index, value)?;
            index += 1;
        }
    }
    Ok(array)
}

/// 1 where the column is null, when it has a null.
fn nulls(batches: &[RecordBatch], column: usize) -> Option<Vec<u8>> {
    if batches
        .iter()
        .all(|batch| batch.column(column).null_count() == 0)
    {
        return None;
    }
    Some(
        batches
            .iter()
            .flat_map(|batch| {
                let array = batch.column(column);
                (0..array.len()).map(move |row| u8::from(array.is_null(row)))
            })
            .collect(),
    )
}

impl ToNapiValue for Columns {
    unsafe fn to_napi_value(env: sys::napi_env, result: Columns) -> napi::Result<sys::napi_value> {
        let js = Js(env);
        let total: usize = result.batches.iter().map(RecordBatch::num_rows).sum();
        let fields = result.schema.fields();
        let out = js.object()?;
        let (names, booleans) = (js.array(fields.len())?, js.array(fields.len())?);
        let (columns, null_maps) = (js.array(fields.len())?, js.array(fields.len())?);
        for (index, field) in fields.iter().enumerate() {
            js.set_element(names, index, js.string(field.name())?)?;
            let boolean = field.data_type() == &arrow_schema::DataType::Boolean;
            js.set_element(booleans, index, js.boolean(boolean)?)?;
            let value = match typed(env, &result.schema, &result.batches, index)? {
                Some(value) => value,
                None => values(js, &result.batches, index, total)?,
            };
            js.set_element(columns, index, value)?;
            let flags = match nulls(&result.batches, index) {
                Some(flags) => Uint8Array::to_napi_value(env, Uint8Array::new(flags))?,
                None => js.null()?,
            };
            js.set_element(null_maps, index, flags)?;
        }
        js.set(out, js.string("numRows")?, js.number(total as f64)?)?;
        js.set(out, js.string("names")?, names)?;
        js.set(out, js.string("booleans")?, booleans)?;
        js.set(out, js.string("columns")?, columns)?;
        js.set(out, js.string("nulls")?, null_maps)?;
        Ok(out)
    }
}
