//! Request batches: one row, one column per parameter, in the order the protocol's field list
//! (`quiver-server-protocol/src/methods.rs`) gives them.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};

/// One parameter value.
pub(crate) enum Value<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Bytes(Option<&'a [u8]>),
}

/// The request batch of a method whose parameters are `fields`, with `values` in the same order.
pub(crate) fn request(fields: Vec<Field>, values: &[Value<'_>]) -> RecordBatch {
    assert_eq!(fields.len(), values.len(), "one value per parameter");
    let columns: Vec<ArrayRef> = values
        .iter()
        .map(|value| match value {
            Value::Text(text) => Arc::new(StringArray::from(vec![*text])) as ArrayRef,
            Value::Int(int) => Arc::new(Int64Array::from(vec![*int])) as ArrayRef,
            Value::Bytes(bytes) => Arc::new(BinaryArray::from(vec![*bytes])) as ArrayRef,
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .expect("request values match the protocol's parameter types")
}
