//! One-value replies for unary method bodies, so a body ends with
//! `Ok(reply::f64(a + b))` instead of building an array by hand.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, StringArray};

/// A float result.
pub fn f64(value: f64) -> Option<ArrayRef> {
    Some(Arc::new(Float64Array::from(vec![value])))
}

/// An integer result.
pub fn i64(value: i64) -> Option<ArrayRef> {
    Some(Arc::new(Int64Array::from(vec![value])))
}

/// A boolean result.
pub fn bool(value: bool) -> Option<ArrayRef> {
    Some(Arc::new(BooleanArray::from(vec![value])))
}

/// A string result.
pub fn str(value: impl AsRef<str>) -> Option<ArrayRef> {
    Some(Arc::new(StringArray::from(vec![value.as_ref()])))
}

/// A bytes result.
pub fn bytes(value: &[u8]) -> Option<ArrayRef> {
    Some(Arc::new(BinaryArray::from(vec![value])))
}

/// No result: the reply of a void method.
pub fn void() -> Option<ArrayRef> {
    None
}
