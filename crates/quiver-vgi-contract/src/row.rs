//! One-row batches: how every vgi.v2 dataclass travels.
//!
//! [`RowBuilder`] fills a row of a declared schema, building each value with the
//! field's exact Arrow type (list item names, map entry names, dictionary index
//! widths) so the peer's strict schema-equality checks pass; anything left unset
//! gets the dataclass default (null, empty list, empty map, false, 0, "").
//! [`RowReader`] reads leniently by column name, as vgi-python does: order and
//! exact widths are not checked, missing optional columns read as absent.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{
    new_empty_array, new_null_array, Array, ArrayRef, BinaryArray, BooleanArray, DictionaryArray,
    Int32Array, Int64Array, LargeBinaryArray, ListArray, MapArray, RecordBatch, StringArray,
    StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, FieldRef, SchemaRef};
use quiver_wire::ErrorReport;

use crate::errors;

/// Builds one row of `schema`.
pub struct RowBuilder {
    schema: SchemaRef,
    values: Vec<Option<ArrayRef>>,
}

impl RowBuilder {
    /// A row with every field unset.
    pub fn new(schema: SchemaRef) -> Self {
        let values = vec![None; schema.fields().len()];
        Self { schema, values }
    }

    fn field(&self, name: &str) -> (usize, &FieldRef) {
        let index = self
            .schema
            .index_of(name)
            .unwrap_or_else(|_| panic!("field '{name}' is not in the dataclass schema"));
        (index, &self.schema.fields()[index])
    }

    /// Sets `name` to a one-element array, which must have the field's type.
    pub fn value(mut self, name: &str, value: ArrayRef) -> Self {
        let (index, field) = self.field(name);
        assert_eq!(value.len(), 1, "field '{name}' takes exactly one value");
        assert_eq!(
            value.data_type(),
            field.data_type(),
            "field '{name}' has another type"
        );
        assert!(
            field.is_nullable() || value.is_valid(0),
            "field '{name}' is not nullable"
        );
        self.values[index] = Some(value);
        self
    }

    /// A string, or an enum member name for a `dictionary<int16, utf8>` field.
    pub fn str(self, name: &str, value: Option<&str>) -> Self {
        let data_type = self.field(name).1.data_type().clone();
        let strings: ArrayRef = Arc::new(StringArray::from(vec![value]));
        let array = match &data_type {
            DataType::Utf8 => strings,
            DataType::Dictionary(_, _) => {
                arrow_cast::cast(&strings, &data_type).expect("utf8 casts to a dictionary of utf8")
            }
            other => panic!("field '{name}' of type {other} does not hold a string"),
        };
        self.value(name, array)
    }

    /// Bytes, for `binary`, `large_binary` and `dictionary<int32, binary>` fields.
    pub fn bytes(self, name: &str, value: Option<&[u8]>) -> Self {
        let data_type = self.field(name).1.data_type().clone();
        let array: ArrayRef = match &data_type {
            DataType::Binary => Arc::new(BinaryArray::from(vec![value])),
            DataType::LargeBinary => Arc::new(LargeBinaryArray::from(vec![value])),
            DataType::Dictionary(key, _) if **key == DataType::Int32 => {
                let keys = Int32Array::from(vec![value.map(|_| 0)]);
                let values = BinaryArray::from(vec![value.unwrap_or_default()]);
                Arc::new(
                    DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values))
                        .expect("one key into one value"),
                )
            }
            other => panic!("field '{name}' of type {other} does not hold bytes"),
        };
        self.value(name, array)
    }

    /// A boolean.
    pub fn bool(self, name: &str, value: Option<bool>) -> Self {
        self.value(name, Arc::new(BooleanArray::from(vec![value])))
    }

    /// An integer, for `int64` and `int32` fields.
    pub fn int(self, name: &str, value: Option<i64>) -> Self {
        let data_type = self.field(name).1.data_type().clone();
        let array: ArrayRef = match data_type {
            DataType::Int64 => Arc::new(Int64Array::from(vec![value])),
            DataType::Int32 => Arc::new(Int32Array::from(vec![
                value.map(|v| i32::try_from(v).expect("value fits the int32 field"))
            ])),
            other => panic!("field '{name}' of type {other} does not hold an integer"),
        };
        self.value(name, array)
    }

    /// A `list<utf8>`.
    pub fn strs(self, name: &str, items: &[&str]) -> Self {
        let items: ArrayRef = Arc::new(StringArray::from(items.to_vec()));
        self.list(name, items)
    }

    /// A `list<binary>` or `list<large_binary>`, by the field's item type.
    pub fn bytes_list(self, name: &str, items: &[Vec<u8>]) -> Self {
        let large = matches!(
            self.field(name).1.data_type(),
            DataType::List(item) if item.data_type() == &DataType::LargeBinary
        );
        let items: ArrayRef = if large {
            Arc::new(LargeBinaryArray::from_iter_values(items.iter()))
        } else {
            Arc::new(BinaryArray::from_iter_values(items.iter()))
        };
        self.list(name, items)
    }

    /// A list whose elements are `items`, under the field's own item field.
    pub fn list(self, name: &str, items: ArrayRef) -> Self {
        let DataType::List(item_field) = self.field(name).1.data_type().clone() else {
            panic!("field '{name}' is not a list");
        };
        let offsets = OffsetBuffer::from_lengths([items.len()]);
        let list = ListArray::try_new(item_field, offsets, items, None)
            .expect("list items match the declared item type");
        self.value(name, Arc::new(list))
    }

    /// A `map<utf8, V>` with `keys[i] -> values[i]`; `values` has V's type.
    pub fn map(self, name: &str, keys: &[&str], values: ArrayRef) -> Self {
        let DataType::Map(entries_field, sorted) = self.field(name).1.data_type().clone() else {
            panic!("field '{name}' is not a map");
        };
        let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
            panic!("map entries of '{name}' are not a struct");
        };
        assert_eq!(keys.len(), values.len(), "a map needs one value per key");
        let keys: ArrayRef = Arc::new(StringArray::from(keys.to_vec()));
        let entries = StructArray::try_new(entry_fields, vec![keys, values], None)
            .expect("map entries match the declared types");
        let offsets = OffsetBuffer::from_lengths([entries.len()]);
        let map = MapArray::try_new(entries_field, offsets, entries, None, sorted)
            .expect("a well-formed map");
        self.value(name, Arc::new(map))
    }

    /// The row, unset fields at their defaults.
    pub fn finish(self) -> RecordBatch {
        let columns: Vec<ArrayRef> = self
            .schema
            .fields()
            .iter()
            .zip(self.values)
            .map(|(field, value)| match value {
                Some(value) => value,
                None if field.is_nullable() => new_null_array(field.data_type(), 1),
                None => default_value(field),
            })
            .collect();
        RecordBatch::try_new(self.schema, columns).expect("every field holds one value")
    }
}

/// The default of a NOT NULL dataclass field left unset.
fn default_value(field: &FieldRef) -> ArrayRef {
    match field.data_type() {
        DataType::Boolean => Arc::new(BooleanArray::from(vec![false])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![0])),
        DataType::Utf8 => Arc::new(StringArray::from(vec![""])),
        DataType::Binary => Arc::new(BinaryArray::from(vec![&b""[..]])),
        DataType::List(item) => Arc::new(ListArray::new(
            item.clone(),
            OffsetBuffer::from_lengths([0]),
            new_empty_array(item.data_type()),
            None,
        )),
        DataType::Map(entries, sorted) => {
            let entries_array = new_empty_array(entries.data_type());
            Arc::new(MapArray::new(
                entries.clone(),
                OffsetBuffer::from_lengths([0]),
                entries_array.as_struct().clone(),
                None,
                *sorted,
            ))
        }
        other => panic!(
            "field '{}' of type {other} has no default; set it",
            field.name()
        ),
    }
}

/// Reads one row of a decoded dataclass, by column name.
pub struct RowReader<'a> {
    batch: &'a RecordBatch,
    what: &'static str,
}

impl<'a> RowReader<'a> {
    /// Reads `batch` (one row) of the dataclass `what`.
    pub fn new(batch: &'a RecordBatch, what: &'static str) -> Self {
        debug_assert_eq!(batch.num_rows(), 1);
        Self { batch, what }
    }

    /// The column `name`, if present and not null.
    pub fn column(&self, name: &str) -> Option<&'a ArrayRef> {
        let column = self.batch.column_by_name(name)?;
        column.is_valid(0).then_some(column)
    }

    fn wrong(&self, name: &str, wanted: &str) -> ErrorReport {
        errors::malformed(self.what, format!("field '{name}' is not {wanted}"))
    }

    /// A required field that is missing or null.
    pub fn missing(&self, name: &str) -> ErrorReport {
        errors::malformed(self.what, format!("required field '{name}' is missing"))
    }

    /// A string, or the member name of an enum (`dictionary<_, utf8>`).
    pub fn str(&self, name: &str) -> Result<Option<String>, ErrorReport> {
        let Some(column) = self.column(name) else {
            return Ok(None);
        };
        let text = match column.data_type() {
            DataType::Utf8 => column.as_string::<i32>().value(0).to_string(),
            DataType::LargeUtf8 => column.as_string::<i64>().value(0).to_string(),
            DataType::Utf8View => column.as_string_view().value(0).to_string(),
            DataType::Dictionary(_, value)
                if matches!(
                    value.as_ref(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) =>
            {
                let strings = arrow_cast::cast(column, &DataType::Utf8)
                    .map_err(|_| self.wrong(name, "a string"))?;
                strings.as_string::<i32>().value(0).to_string()
            }
            _ => return Err(self.wrong(name, "a string")),
        };
        Ok(Some(text))
    }

    /// Bytes of a `binary`-like field (dictionary-encoded binary included).
    pub fn bytes(&self, name: &str) -> Result<Option<&'a [u8]>, ErrorReport> {
        let Some(column) = self.column(name) else {
            return Ok(None);
        };
        let bytes = match column.data_type() {
            DataType::Binary => column.as_binary::<i32>().value(0),
            DataType::LargeBinary => column.as_binary::<i64>().value(0),
            DataType::BinaryView => column.as_binary_view().value(0),
            DataType::Dictionary(key, _) => {
                let values = match key.as_ref() {
                    DataType::Int32 => column.as_dictionary::<Int32Type>().values(),
                    DataType::Int16 => column.as_dictionary::<Int16Type>().values(),
                    DataType::Int8 => column.as_dictionary::<Int8Type>().values(),
                    DataType::Int64 => column.as_dictionary::<Int64Type>().values(),
                    _ => return Err(self.wrong(name, "binary")),
                };
                let key = dictionary_key(column).ok_or_else(|| self.wrong(name, "binary"))?;
                match values.data_type() {
                    DataType::Binary if key < values.len() => values.as_binary::<i32>().value(key),
                    _ => return Err(self.wrong(name, "binary")),
                }
            }
            _ => return Err(self.wrong(name, "binary")),
        };
        Ok(Some(bytes))
    }

    /// A boolean.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ErrorReport> {
        let Some(column) = self.column(name) else {
            return Ok(None);
        };
        match column.data_type() {
            DataType::Boolean => Ok(Some(column.as_boolean().value(0))),
            _ => Err(self.wrong(name, "a boolean")),
        }
    }

    /// An integer (any signed width).
    pub fn int(&self, name: &str) -> Result<Option<i64>, ErrorReport> {
        let Some(column) = self.column(name) else {
            return Ok(None);
        };
        let value = match column.data_type() {
            DataType::Int64 => column.as_primitive::<Int64Type>().value(0),
            DataType::Int32 => column.as_primitive::<Int32Type>().value(0) as i64,
            DataType::Int16 => column.as_primitive::<Int16Type>().value(0) as i64,
            _ => return Err(self.wrong(name, "an integer")),
        };
        Ok(Some(value))
    }

    /// The elements of a `list<T>` value, as an array.
    pub fn list(&self, name: &str) -> Result<Option<ArrayRef>, ErrorReport> {
        let Some(column) = self.column(name) else {
            return Ok(None);
        };
        match column.data_type() {
            DataType::List(_) => Ok(Some(column.as_list::<i32>().value(0))),
            DataType::LargeList(_) => Ok(Some(column.as_list::<i64>().value(0))),
            _ => Err(self.wrong(name, "a list")),
        }
    }

    /// A `list<utf8>` (null elements are refused).
    pub fn strs(&self, name: &str) -> Result<Option<Vec<String>>, ErrorReport> {
        let Some(items) = self.list(name)? else {
            return Ok(None);
        };
        let items = arrow_cast::cast(&items, &DataType::Utf8)
            .map_err(|_| self.wrong(name, "a list of strings"))?;
        let items = items.as_string::<i32>();
        if items.null_count() > 0 {
            return Err(self.wrong(name, "a list of non-null strings"));
        }
        Ok(Some(
            items
                .iter()
                .map(|s| s.unwrap_or_default().to_string())
                .collect(),
        ))
    }

    /// A `list<int64>` (null elements are refused).
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, ErrorReport> {
        let Some(items) = self.list(name)? else {
            return Ok(None);
        };
        let items = arrow_cast::cast(&items, &DataType::Int64)
            .map_err(|_| self.wrong(name, "a list of integers"))?;
        let items = items.as_primitive::<Int64Type>();
        if items.null_count() > 0 {
            return Err(self.wrong(name, "a list of non-null integers"));
        }
        Ok(Some(items.values().to_vec()))
    }

    /// A `list<binary>` or `list<large_binary>` (null elements are refused).
    pub fn bytes_list(&self, name: &str) -> Result<Option<Vec<Vec<u8>>>, ErrorReport> {
        let Some(items) = self.list(name)? else {
            return Ok(None);
        };
        if items.null_count() > 0 {
            return Err(self.wrong(name, "a list of non-null binaries"));
        }
        let values: Vec<Vec<u8>> = match items.data_type() {
            DataType::Binary => items
                .as_binary::<i32>()
                .iter()
                .flatten()
                .map(<[u8]>::to_vec)
                .collect(),
            DataType::LargeBinary => items
                .as_binary::<i64>()
                .iter()
                .flatten()
                .map(<[u8]>::to_vec)
                .collect(),
            _ => return Err(self.wrong(name, "a list of binaries")),
        };
        Ok(Some(values))
    }
}

/// The key of row 0 of a dictionary array, as an index.
fn dictionary_key(column: &ArrayRef) -> Option<usize> {
    let key = match column.data_type() {
        DataType::Dictionary(key, _) => match key.as_ref() {
            DataType::Int32 => column.as_dictionary::<Int32Type>().keys().value(0) as i64,
            DataType::Int16 => column.as_dictionary::<Int16Type>().keys().value(0) as i64,
            DataType::Int8 => column.as_dictionary::<Int8Type>().keys().value(0) as i64,
            DataType::Int64 => column.as_dictionary::<Int64Type>().keys().value(0),
            _ => return None,
        },
        _ => return None,
    };
    usize::try_from(key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{Field, Schema};

    fn schema() -> SchemaRef {
        let entries = Field::new(
            "entries",
            DataType::Struct(
                vec![
                    Field::new("key", DataType::Utf8, false),
                    Field::new("value", DataType::Utf8, true),
                ]
                .into(),
            ),
            false,
        );
        Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new(
                "kind",
                DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8)),
                false,
            ),
            Field::new(
                "blob",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary)),
                true,
            ),
            Field::new(
                "path",
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                false,
            ),
            Field::new("tags", DataType::Map(Arc::new(entries), false), false),
            Field::new("flag", DataType::Boolean, false),
            Field::new("count", DataType::Int32, true),
        ]))
    }

    #[test]
    fn built_rows_read_back() {
        let batch = RowBuilder::new(schema())
            .str("name", Some("numbers"))
            .str("kind", Some("TABLE"))
            .bytes("blob", Some(b"xyz"))
            .strs("path", &["main"])
            .int("count", Some(7))
            .finish();
        let row = RowReader::new(&batch, "test");
        assert_eq!(row.str("name").unwrap().as_deref(), Some("numbers"));
        assert_eq!(row.str("kind").unwrap().as_deref(), Some("TABLE"));
        assert_eq!(row.bytes("blob").unwrap(), Some(&b"xyz"[..]));
        assert_eq!(row.strs("path").unwrap(), Some(vec!["main".to_string()]));
        assert_eq!(row.bool("flag").unwrap(), Some(false));
        assert_eq!(row.int("count").unwrap(), Some(7));
        assert_eq!(row.str("absent").unwrap(), None);
        // Defaults: an empty map for a NOT NULL map.
        assert_eq!(
            batch
                .column_by_name("tags")
                .unwrap()
                .as_map()
                .value(0)
                .len(),
            0
        );
        assert!(row.int("name").is_err());
    }
}
