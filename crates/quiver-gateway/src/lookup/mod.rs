//! Keyed lookups: a snapshot's rows held in memory with a hash index per set of key columns its
//! endpoints look rows up by (`compile::key_columns`), so a request that equality alone selects
//! is answered without a statement on the server: its rows found through the index, put in the
//! compiled total order (NULLs last, as the statement orders), cut to the page, then encoded by
//! the same code as a statement's result. Built when a snapshot is materialized (or restored),
//! within `gateway: lookup: max_bytes` for all snapshots together; a snapshot whose rows do not
//! fit keeps only the statement path. Everything a lookup cannot answer runs the statement.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_ord::sort::{lexsort_to_indices, SortColumn, SortOptions};
use arrow_schema::{ArrowError, Field, Schema};
use arrow_select::take::take;
use quiver_client::Connection;

use crate::compile::{key_columns, Compiled, Lookup};
use crate::project::{Dataset, Endpoint, Project};

mod budget;
mod key;
mod residual;

pub use budget::Budget;
use budget::Reservation;
use key::KeyPart;

/// Bytes a hash map entry costs besides its key's and positions' heap bytes (hash, key box and
/// vector headers, the table's spare room).
const ENTRY_OVERHEAD_BYTES: usize = 64;

/// An index: each key's row positions.
type Index = HashMap<Box<[KeyPart]>, Vec<u32>>;

/// One snapshot's rows and their indexes.
pub struct Lookups {
    /// Every column of the snapshot's table, in one batch.
    rows: RecordBatch,
    /// By key columns (in `Lookup::columns` order): each key's row positions in `rows`.
    indexes: HashMap<Vec<String>, Index>,
    _reservation: Reservation,
}

impl std::fmt::Debug for Lookups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookups")
            .field("rows", &self.rows.num_rows())
            .field("indexes", &self.indexes.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The sets of key columns `project`'s endpoints over `dataset` look rows up by.
fn key_sets(project: &Project, dataset: &Dataset) -> Vec<Vec<String>> {
    let mut sets: Vec<Vec<String>> = Vec::new();
    for endpoint in project.endpoints.iter().filter(|e| e.dataset == dataset.id) {
        if let Some(columns) = key_columns(endpoint, dataset) {
            let names: Vec<String> = columns.into_iter().map(|(name, _)| name).collect();
            if !sets.contains(&names) {
                sets.push(names);
            }
        }
    }
    sets
}

/// Reads `table` (the snapshot's, on the server) and indexes it for `project`'s endpoints over
/// `dataset`. `Ok(None)`: no endpoint looks rows up, lookups are off, or the rows do not fit.
pub fn build(
    connection: &mut Connection,
    project: &Project,
    dataset: &Dataset,
    table: &str,
    budget: &Arc<Budget>,
) -> Result<Option<Lookups>, String> {
    let max = project.settings.lookup_max_bytes;
    let sets = key_sets(project, dataset);
    if sets.is_empty() || max == 0 {
        return Ok(None);
    }
    let room = max.saturating_sub(budget.used()) as usize;
    let Some(rows) = read_rows(connection, table, room)? else {
        tracing::info!(dataset = %dataset.id, "the snapshot's rows exceed gateway.lookup.max_bytes: lookups run as statements");
        return Ok(None);
    };
    if u32::try_from(rows.num_rows()).is_err() {
        return Ok(None);
    }
    let mut bytes = rows.get_array_memory_size();
    let mut indexes = HashMap::new();
    for columns in sets {
        if let Some((index, index_bytes)) = index(&rows, &columns) {
            bytes += index_bytes;
            indexes.insert(columns, index);
        }
    }
    let Some(reservation) = budget.reserve(bytes as u64, max) else {
        tracing::info!(dataset = %dataset.id, bytes, "the snapshot's rows and indexes exceed gateway.lookup.max_bytes: lookups run as statements");
        return Ok(None);
    };
    Ok(Some(Lookups {
        rows,
        indexes,
        _reservation: reservation,
    }))
}

/// The table's rows in one batch; `None` once they hold more than `room` bytes.
fn read_rows(
    connection: &mut Connection,
    table: &str,
    room: usize,
) -> Result<Option<RecordBatch>, String> {
    let read = |error| format!("reading the snapshot's rows: {error}");
    let mut stream = connection
        .query(&format!("SELECT * FROM {table}"))
        .map_err(read)?;
    let mut batches = Vec::new();
    let mut held = 0usize;
    for batch in stream.by_ref() {
        let batch = batch.map_err(read)?;
        held += slice_bytes(&batch)
            .map_err(|error| format!("measuring the snapshot's rows: {error}"))?;
        if held > room {
            let _ = stream.cancel();
            return Ok(None);
        }
        batches.push(batch);
    }
    let schema = stream
        .schema()
        .ok_or_else(|| "reading the snapshot's rows: no schema".to_string())?;
    drop(stream);
    arrow_select::concat::concat_batches(&schema, &batches)
        .map(Some)
        .map_err(|error| format!("joining the snapshot's rows: {error}"))
}

/// The bytes `batch`'s rows take once copied out (the concatenation below owns only those). A
/// batch read zero-copy from a larger message or a shared-memory segment reports that whole
/// allocation as its memory size, many times over across a stream's batches.
fn slice_bytes(batch: &RecordBatch) -> Result<usize, ArrowError> {
    batch
        .columns()
        .iter()
        .map(|column| column.to_data().get_slice_memory_size())
        .sum()
}

/// The index of `rows` on `columns`, and its bytes; `None` when a column cannot be indexed.
fn index(rows: &RecordBatch, columns: &[String]) -> Option<(Index, usize)> {
    let arrays: Vec<&ArrayRef> = columns
        .iter()
        .map(|name| rows.column_by_name(name))
        .collect::<Option<_>>()?;
    if !arrays.iter().all(|array| key::indexable(array.data_type())) {
        return None;
    }
    let mut index = Index::new();
    'rows: for row in 0..rows.num_rows() {
        let mut parts = Vec::with_capacity(arrays.len());
        for array in &arrays {
            // A NULL equals nothing: the row is never looked up.
            let Some(part) = key::of_row(array.as_ref(), row) else {
                continue 'rows;
            };
            parts.push(part);
        }
        index
            .entry(parts.into_boxed_slice())
            .or_default()
            .push(row as u32);
    }
    let bytes = index
        .iter()
        .map(|(key, positions)| {
            ENTRY_OVERHEAD_BYTES
                + key.len() * std::mem::size_of::<KeyPart>()
                + key.iter().map(KeyPart::heap_bytes).sum::<usize>()
                + positions.capacity() * 4
        })
        .sum();
    Some((index, bytes))
}

impl Lookups {
    /// How many rows are held.
    pub fn row_count(&self) -> usize {
        self.rows.num_rows()
    }

    /// The positions of the rows the index finds for `lookup` (in no order, before its residual
    /// filters); `None` when this snapshot holds no index for its key columns, or a residual
    /// value cannot be compared here (its statement runs).
    pub fn positions(&self, lookup: &Lookup) -> Option<&[u32]> {
        let index = self.indexes.get(&lookup.columns)?;
        if !residual::comparable(&lookup.residual) {
            return None;
        }
        let key: Vec<KeyPart> = lookup
            .values
            .iter()
            .zip(&lookup.types)
            .map(|(value, column_type)| key::of_value(value, *column_type))
            .collect::<Option<_>>()?;
        Some(index.get(key.as_slice()).map_or(&[][..], Vec::as_slice))
    }

    /// The rows at `positions` that pass `lookup`'s residual filters, as `compiled`'s statement
    /// yields them: its `selected` columns, in its total order, from the lookup's offset on, at
    /// most `limit + 1` rows. `None` when a residual value cannot be compared here.
    pub fn page(
        &self,
        endpoint: &Endpoint,
        compiled: &Compiled,
        lookup: &Lookup,
        positions: &[u32],
    ) -> Option<Result<RecordBatch, ArrowError>> {
        let kept = residual::filter(&self.rows, positions, &lookup.residual)?;
        Some(kept.and_then(|kept| self.sorted(endpoint, compiled, lookup.offset, &kept)))
    }

    fn sorted(
        &self,
        endpoint: &Endpoint,
        compiled: &Compiled,
        offset: u64,
        positions: &[u32],
    ) -> Result<RecordBatch, ArrowError> {
        let found = self.selected(endpoint, compiled, &UInt32Array::from(positions.to_vec()))?;
        let sort: Vec<SortColumn> = compiled
            .order_keys()
            .map(|(output, descending)| {
                let values = found.column_by_name(output).cloned().ok_or_else(|| {
                    ArrowError::SchemaError(format!("order key {output} is not selected"))
                });
                values.map(|values| SortColumn {
                    values,
                    options: Some(SortOptions {
                        descending,
                        nulls_first: false,
                    }),
                })
            })
            .collect::<Result<_, _>>()?;
        let wanted = offset.saturating_add(compiled.limit + 1);
        let order = if sort.is_empty() || found.num_rows() == 0 {
            UInt32Array::from_iter_values(0..found.num_rows() as u32)
        } else {
            lexsort_to_indices(&sort, usize::try_from(wanted).ok())?
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(order.len());
        let end = usize::try_from(wanted)
            .unwrap_or(usize::MAX)
            .min(order.len());
        let page = order.slice(start, end - start);
        let columns = found
            .columns()
            .iter()
            .map(|column| take(column.as_ref(), &page, None))
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(found.schema(), columns)
    }

    /// The rows at `positions`, with the compiled `selected` outputs as columns.
    fn selected(
        &self,
        endpoint: &Endpoint,
        compiled: &Compiled,
        positions: &UInt32Array,
    ) -> Result<RecordBatch, ArrowError> {
        let mut fields = Vec::with_capacity(compiled.selected.len());
        let mut columns = Vec::with_capacity(compiled.selected.len());
        for output in &compiled.selected {
            let column = endpoint
                .select
                .iter()
                .find(|item| &item.output == output)
                .map(|item| item.column.as_str())
                .ok_or_else(|| ArrowError::SchemaError(format!("no select item {output}")))?;
            let (at, field) = self
                .rows
                .schema_ref()
                .column_with_name(column)
                .ok_or_else(|| {
                    ArrowError::SchemaError(format!("the snapshot has no column {column}"))
                })?;
            fields.push(
                Field::new(output, field.data_type().clone(), field.is_nullable())
                    .with_metadata(field.metadata().clone()),
            );
            columns.push(take(self.rows.column(at).as_ref(), positions, None)?);
        }
        let schema = Schema::new_with_metadata(fields, self.rows.schema_ref().metadata().clone());
        RecordBatch::try_new(Arc::new(schema), columns)
    }
}
