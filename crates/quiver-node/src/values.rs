//! Arrow values as JS values, built with N-API's C calls directly: a result of a million rows
//! makes tens of millions of values, and each safe wrapper would add a check and a lookup.
//! Integers up to 32 bits and floats become numbers, 64-bit integers BigInts (a number would
//! lose precision above 2^53), strings strings, booleans booleans, nulls `null`; every other
//! type becomes its text as Arrow's display writes it (dates, timestamps, decimals).

use std::ffi::c_char;
use std::ptr;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, BooleanArray, LargeStringArray, PrimitiveArray, StringArray};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::DataType;
use napi::{check_status, sys};

/// A JS value under construction (valid while the call's handle scope lives).
pub type Value = sys::napi_value;

/// The env of the call building values.
#[derive(Clone, Copy)]
pub struct Js(pub sys::napi_env);

impl Js {
    /// `{}`.
    pub fn object(self) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_create_object(self.0, &mut value) })?;
        Ok(value)
    }

    /// An array of `length` holes.
    pub fn array(self, length: usize) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_create_array_with_length(self.0, length, &mut value) })?;
        Ok(value)
    }

    /// `object[key] = value`.
    pub fn set(self, object: Value, key: Value, value: Value) -> napi::Result<()> {
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_set_property(self.0, object, key, value) })
    }

    /// `array[index] = value`.
    pub fn set_element(self, array: Value, index: usize, value: Value) -> napi::Result<()> {
        let index = u32::try_from(index)
            .map_err(|_| napi::Error::from_reason("an array index above 2^32"))?;
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_set_element(self.0, array, index, value) })
    }

    /// A string.
    pub fn string(self, text: &str) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe {
            sys::napi_create_string_utf8(
                self.0,
                text.as_ptr() as *const c_char,
                text.len() as isize,
                &mut value,
            )
        })?;
        Ok(value)
    }

    /// A number.
    pub fn number(self, number: f64) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_create_double(self.0, number, &mut value) })?;
        Ok(value)
    }

    /// A BigInt.
    pub fn bigint_i64(self, number: i64) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_create_bigint_int64(self.0, number, &mut value) })?;
        Ok(value)
    }

    /// A BigInt.
    pub fn bigint_u64(self, number: u64) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_create_bigint_uint64(self.0, number, &mut value) })?;
        Ok(value)
    }

    /// `true` or `false`.
    pub fn boolean(self, flag: bool) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_get_boolean(self.0, flag, &mut value) })?;
        Ok(value)
    }

    /// `null`.
    pub fn null(self) -> napi::Result<Value> {
        let mut value = ptr::null_mut();
        // SAFETY: `self.0` is the env of the call in progress (valid while its handle scope lives); the out-parameter is a live local.
        check_status!(unsafe { sys::napi_get_null(self.0, &mut value) })?;
        Ok(value)
    }
}

/// One column of one batch, read cell by cell as JS values.
pub enum Cells<'a> {
    /// Booleans.
    Boolean(&'a BooleanArray),
    /// Integers of up to 32 bits and floats, as numbers.
    Number(Box<dyn Fn(usize) -> f64 + 'a>),
    /// Signed 64-bit integers, as BigInts.
    Int64(&'a PrimitiveArray<Int64Type>),
    /// Unsigned 64-bit integers, as BigInts.
    UInt64(&'a PrimitiveArray<UInt64Type>),
    /// Text.
    Utf8(&'a StringArray),
    /// Text with 64-bit offsets.
    LargeUtf8(&'a LargeStringArray),
    /// Anything else, as its display text.
    Display(ArrayFormatter<'a>),
}

fn number<'a, T>(array: &'a dyn Array) -> Cells<'a>
where
    T: arrow_array::ArrowPrimitiveType,
    T::Native: Into<f64>,
{
    let values = array.as_primitive::<T>().values();
    Cells::Number(Box::new(move |row| values[row].into()))
}

impl<'a> Cells<'a> {
    /// The reader of `array`'s cells.
    pub fn new(array: &'a dyn Array) -> napi::Result<Cells<'a>> {
        Ok(match array.data_type() {
            DataType::Boolean => Cells::Boolean(array.as_boolean()),
            DataType::Int8 => number::<Int8Type>(array),
            DataType::Int16 => number::<Int16Type>(array),
            DataType::Int32 => number::<Int32Type>(array),
            DataType::UInt8 => number::<UInt8Type>(array),
            DataType::UInt16 => number::<UInt16Type>(array),
            DataType::UInt32 => number::<UInt32Type>(array),
            DataType::Float32 => number::<Float32Type>(array),
            DataType::Float64 => number::<Float64Type>(array),
            DataType::Int64 => Cells::Int64(array.as_primitive::<Int64Type>()),
            DataType::UInt64 => Cells::UInt64(array.as_primitive::<UInt64Type>()),
            DataType::Utf8 => Cells::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Cells::LargeUtf8(array.as_string::<i64>()),
            _ => Cells::Display(
                ArrayFormatter::try_new(array, &FormatOptions::default())
                    .map_err(|error| napi::Error::from_reason(error.to_string()))?,
            ),
        })
    }

    /// The JS value of `row` (not null: the caller checks validity).
    pub fn value(&self, js: Js, row: usize) -> napi::Result<Value> {
        match self {
            Cells::Boolean(array) => js.boolean(array.value(row)),
            Cells::Number(read) => js.number(read(row)),
            Cells::Int64(array) => js.bigint_i64(array.value(row)),
            Cells::UInt64(array) => js.bigint_u64(array.value(row)),
            Cells::Utf8(array) => js.string(array.value(row)),
            Cells::LargeUtf8(array) => js.string(array.value(row)),
            Cells::Display(formatter) => js.string(&formatter.value(row).to_string()),
        }
    }
}
