//! The row inserter: values added one at a time, column by column, into Arrow builders; every
//! `batch_rows` rows become a batch sent through an [`ArrowInserter`]. Types are checked as each
//! value is added, so a wrong call fails at once and names its column.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder,
    StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema, SchemaRef};
use quiver_server_protocol::InsertMode;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::insert::ArrowInserter;

/// Rows per batch a row inserter sends by default (the server's own default batch size).
pub const ROW_BATCH_ROWS_DEFAULT: usize = 1 << 17;

enum Column {
    Boolean(BooleanBuilder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Utf8(StringBuilder),
}

impl Column {
    fn new(data_type: &DataType, rows: usize) -> Option<Column> {
        Some(match data_type {
            DataType::Boolean => Column::Boolean(BooleanBuilder::with_capacity(rows)),
            DataType::Int16 => Column::Int16(Int16Builder::with_capacity(rows)),
            DataType::Int32 => Column::Int32(Int32Builder::with_capacity(rows)),
            DataType::Int64 => Column::Int64(Int64Builder::with_capacity(rows)),
            DataType::Float32 => Column::Float32(Float32Builder::with_capacity(rows)),
            DataType::Float64 => Column::Float64(Float64Builder::with_capacity(rows)),
            DataType::Utf8 => Column::Utf8(StringBuilder::with_capacity(rows, rows * 16)),
            _ => return None,
        })
    }

    fn append_null(&mut self) {
        match self {
            Column::Boolean(b) => b.append_null(),
            Column::Int16(b) => b.append_null(),
            Column::Int32(b) => b.append_null(),
            Column::Int64(b) => b.append_null(),
            Column::Float32(b) => b.append_null(),
            Column::Float64(b) => b.append_null(),
            Column::Utf8(b) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Boolean(b) => Arc::new(b.finish()),
            Column::Int16(b) => Arc::new(b.finish()),
            Column::Int32(b) => Arc::new(b.finish()),
            Column::Int64(b) => Arc::new(b.finish()),
            Column::Float32(b) => Arc::new(b.finish()),
            Column::Float64(b) => Arc::new(b.finish()),
            Column::Utf8(b) => Arc::new(b.finish()),
        }
    }
}

/// Adds rows value by value: `add_*` for each column in order, then [`RowInserter::end_row`].
pub struct RowInserter<'c> {
    inserter: ArrowInserter<'c>,
    schema: SchemaRef,
    columns: Vec<Column>,
    /// The column the next value goes to.
    next_column: usize,
    rows_buffered: usize,
    batch_rows: usize,
}

impl Connection {
    /// A row inserter into `table` for rows of `schema` (columns of type boolean, int16, int32,
    /// int64, float32, float64 or utf8), flushing every [`ROW_BATCH_ROWS_DEFAULT`] rows.
    pub fn row_inserter(
        &mut self,
        table: &str,
        schema: &Schema,
        mode: InsertMode,
    ) -> Result<RowInserter<'_>> {
        RowInserter::new(
            self.arrow_inserter(table, schema, mode)?,
            ROW_BATCH_ROWS_DEFAULT,
        )
    }
}

macro_rules! add_value {
    ($name:ident, $type:ty, $variant:ident, $doc:literal) => {
        #[doc = $doc]
        pub fn $name(&mut self, value: $type) -> Result<()> {
            match self.columns.get_mut(self.next_column) {
                Some(Column::$variant(builder)) => builder.append_value(value),
                _ => return Err(self.wrong_type(stringify!($variant))),
            }
            self.next_column += 1;
            Ok(())
        }
    };
}

impl<'c> RowInserter<'c> {
    /// A row inserter over an open Arrow inserter, sending every `batch_rows` rows.
    pub fn new(inserter: ArrowInserter<'c>, batch_rows: usize) -> Result<RowInserter<'c>> {
        if batch_rows == 0 {
            return Err(Error::InvalidInput("batch_rows must be at least 1".into()));
        }
        let schema = inserter.schema().clone();
        let columns = schema
            .fields()
            .iter()
            .map(|field| {
                Column::new(field.data_type(), batch_rows).ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "column '{}': the row inserter does not take {}",
                        field.name(),
                        field.data_type()
                    ))
                })
            })
            .collect::<Result<Vec<Column>>>()?;
        Ok(RowInserter {
            inserter,
            schema,
            columns,
            next_column: 0,
            rows_buffered: 0,
            batch_rows,
        })
    }

    add_value!(
        add_bool,
        bool,
        Boolean,
        "Adds a boolean to the current column."
    );
    add_value!(add_i16, i16, Int16, "Adds an int16 to the current column.");
    add_value!(add_i32, i32, Int32, "Adds an int32 to the current column.");
    add_value!(add_i64, i64, Int64, "Adds an int64 to the current column.");
    add_value!(
        add_f32,
        f32,
        Float32,
        "Adds a float32 to the current column."
    );
    add_value!(
        add_f64,
        f64,
        Float64,
        "Adds a float64 to the current column."
    );
    add_value!(add_str, &str, Utf8, "Adds a string to the current column.");

    /// Adds a null to the current column (refused for a `NOT NULL` column).
    pub fn add_null(&mut self) -> Result<()> {
        let field = self.schema.fields().get(self.next_column).ok_or_else(|| {
            Error::InvalidInput(format!("the row already has {} values", self.columns.len()))
        })?;
        if !field.is_nullable() {
            return Err(Error::InvalidInput(format!(
                "column '{}' is not nullable",
                field.name()
            )));
        }
        self.columns[self.next_column].append_null();
        self.next_column += 1;
        Ok(())
    }

    /// Ends the row (every column must have its value); sends a batch every `batch_rows` rows.
    pub fn end_row(&mut self) -> Result<()> {
        if self.next_column != self.columns.len() {
            return Err(Error::InvalidInput(format!(
                "the row has {} of {} values",
                self.next_column,
                self.columns.len()
            )));
        }
        self.next_column = 0;
        self.rows_buffered += 1;
        if self.rows_buffered == self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    /// Rows added so far (sent or buffered).
    pub fn rows(&self) -> u64 {
        self.inserter.rows() + self.rows_buffered as u64
    }

    /// Sends the buffered rows and commits; returns the rows inserted.
    pub fn finish(mut self) -> Result<u64> {
        if self.next_column != 0 {
            return Err(Error::InvalidInput("the last row is not ended".into()));
        }
        self.flush()?;
        self.inserter.finish()
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows_buffered == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        // A finished builder starts again from no capacity and would grow by copying; fresh
        // builders of a whole batch's capacity write each value once.
        for (column, field) in self.columns.iter_mut().zip(self.schema.fields().iter()) {
            *column = Column::new(field.data_type(), self.batch_rows)
                .expect("the type was accepted when the inserter was made");
        }
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|error| Error::InvalidInput(error.to_string()))?;
        debug_assert_eq!(batch.num_rows(), self.rows_buffered);
        self.rows_buffered = 0;
        self.inserter.write(&batch)
    }

    fn wrong_type(&self, given: &str) -> Error {
        match self.schema.fields().get(self.next_column) {
            Some(field) => Error::InvalidInput(format!(
                "column '{}' is {}, not {given}",
                field.name(),
                field.data_type()
            )),
            None => {
                Error::InvalidInput(format!("the row already has {} values", self.columns.len()))
            }
        }
    }
}
