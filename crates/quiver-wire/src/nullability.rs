//! Whether a reader holds batches to the nullability their schema declares.
//!
//! arrow-rs refuses a batch with a null in a field declared non-nullable; Arrow's C++, Java and
//! Python readers do not check. Peers built on those send such batches (vgi-java 0.26 answers
//! every `init` with a `GlobalInitResponse` whose non-nullable `opaque_data` is null), and the
//! reference implementations accept them, so a client reading replies tolerates them. What we
//! send is still checked when it is built.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

/// How a reader treats a null in a field its schema declares non-nullable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nullability {
    /// Refuse the batch, as arrow-rs does (the default: requests a server reads).
    #[default]
    Enforced,
    /// Accept the batch, on the schema with such fields made nullable (replies a client reads).
    Tolerated,
}

/// `schema` with every field, nested ones included, nullable; the same `Arc` when it already is.
pub(crate) fn relaxed(schema: &SchemaRef) -> SchemaRef {
    if schema.fields().iter().all(|f| is_relaxed(f)) {
        return schema.clone();
    }
    let fields: Vec<FieldRef> = schema.fields().iter().map(relaxed_field).collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn is_relaxed(field: &Field) -> bool {
    field.is_nullable() && children(field.data_type()).iter().all(|f| is_relaxed(f))
}

/// The nested fields whose nullability arrow-rs checks: list items and struct children. A map's
/// entries and keys are never null by the format's rules and stay as declared.
fn children(data_type: &DataType) -> Vec<&FieldRef> {
    match data_type {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => vec![f],
        DataType::Struct(fields) => fields.iter().collect(),
        _ => Vec::new(),
    }
}

fn relaxed_field(field: &FieldRef) -> FieldRef {
    let data_type = match field.data_type() {
        DataType::List(f) => DataType::List(relaxed_field(f)),
        DataType::LargeList(f) => DataType::LargeList(relaxed_field(f)),
        DataType::ListView(f) => DataType::ListView(relaxed_field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(relaxed_field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(relaxed_field(f), *n),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(relaxed_field).collect()),
        other => other.clone(),
    };
    Arc::new(
        field
            .as_ref()
            .clone()
            .with_data_type(data_type)
            .with_nullable(true),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_becomes_nullable_nested_ones_too() {
        let item = Arc::new(Field::new("item", DataType::Int64, false));
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Binary, false),
            Field::new("b", DataType::List(item), false),
        ]));
        let relaxed = relaxed(&schema);
        assert!(relaxed.fields().iter().all(|f| f.is_nullable()));
        let DataType::List(item) = relaxed.field(1).data_type() else {
            panic!("a list");
        };
        assert!(item.is_nullable());
        assert!(Arc::ptr_eq(&relaxed, &super::relaxed(&relaxed)));
    }
}
