//! Projection pushdown: `InitRequest.projection_ids` are indices into the
//! unprojected output schema, in the order the engine wants the columns.
//!
//! Functions always produce the unprojected schema (filters reference it); the
//! SDK drops what was not asked for at the end, which costs an `Arc` clone per
//! kept column. [`Projection::needed`] lets a function skip computing columns
//! that neither the projection nor a filter reads.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use quiver_wire::ErrorReport;

use quiver_vgi_contract::errors;

/// Which output columns to keep, and in what order.
#[derive(Clone, Debug)]
pub struct Projection {
    /// `None`: every column, as produced.
    ids: Option<Vec<usize>>,
    schema: SchemaRef,
}

impl Projection {
    /// Every column of `output`.
    pub fn all(output: &SchemaRef) -> Projection {
        Projection {
            ids: None,
            schema: output.clone(),
        }
    }

    /// The projection `ids` over `output`; out-of-range and repeated indices are
    /// refused (both would make the engine misread its columns).
    pub fn new(output: &SchemaRef, ids: Option<&[i64]>) -> Result<Projection, ErrorReport> {
        let Some(ids) = ids else {
            return Ok(Projection::all(output));
        };
        let count = output.fields().len();
        let mut seen = vec![false; count];
        let mut kept = Vec::with_capacity(ids.len());
        for &id in ids {
            let index = usize::try_from(id)
                .ok()
                .filter(|i| *i < count)
                .ok_or_else(|| {
                    errors::invalid_argument(format!(
                        "projection id {id} is out of range: the output has {count} column(s)"
                    ))
                })?;
            if std::mem::replace(&mut seen[index], true) {
                return Err(errors::invalid_argument(format!(
                    "projection id {id} appears twice"
                )));
            }
            kept.push(index);
        }
        let fields: Vec<_> = kept.iter().map(|&i| output.fields()[i].clone()).collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, output.metadata().clone()));
        Ok(Projection {
            ids: Some(kept),
            schema,
        })
    }

    /// The projected schema: the output stream's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Per unprojected column: whether the projection keeps it.
    pub fn kept(&self, column_count: usize) -> Vec<bool> {
        match &self.ids {
            None => vec![true; column_count],
            Some(ids) => {
                let mut kept = vec![false; column_count];
                ids.iter().for_each(|&i| kept[i] = true);
                kept
            }
        }
    }

    /// Applies the projection to an unprojected batch, keeping its row count
    /// (a zero-column projection still has rows: `count(*)`).
    pub fn apply(&self, batch: RecordBatch) -> RecordBatch {
        let Some(ids) = &self.ids else {
            return batch;
        };
        let columns = ids.iter().map(|&i| batch.column(i).clone()).collect();
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .expect("projected columns keep their fields")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::{DataType, Field};

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("squared", DataType::Int64, false),
            Field::new("label", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            Arc::new(Int64Array::from(vec![1, 4])),
            Arc::new(StringArray::from(vec!["a", "b"])),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    #[test]
    fn projects_in_the_requested_order() {
        let batch = batch();
        let projection = Projection::new(batch.schema_ref(), Some(&[2, 0])).unwrap();
        let projected = projection.apply(batch);
        let names: Vec<&str> = projected
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["label", "n"]);
        assert_eq!(projection.kept(3), [true, false, true]);
    }

    #[test]
    fn an_empty_projection_keeps_rows() {
        let batch = batch();
        let projected = Projection::new(batch.schema_ref(), Some(&[]))
            .unwrap()
            .apply(batch);
        assert_eq!((projected.num_columns(), projected.num_rows()), (0, 2));
    }

    #[test]
    fn bad_ids_are_refused() {
        let schema = batch().schema();
        assert!(Projection::new(&schema, Some(&[3])).is_err());
        assert!(Projection::new(&schema, Some(&[-1])).is_err());
        assert!(Projection::new(&schema, Some(&[0, 0])).is_err());
    }
}
