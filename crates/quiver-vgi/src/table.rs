//! The table function `init` stream: a producer. Per tick the scan makes the
//! next batch of the unprojected schema; the SDK filters it, projects it, and
//! emits it, or ends the stream when the scan is done.

use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::{CallContext, StreamOutput, StreamState};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::arguments::Args;
use crate::errors;
use crate::execution::SharedWork;
use crate::filters::Filters;
use crate::function::TableScan;
use crate::logging::{self, Level};
use crate::projection::Projection;

/// Batches a filter may empty in one tick before the tick answers with an
/// empty batch anyway, so one tick's work stays bounded.
const EMPTY_BATCHES_PER_TICK_MAX: usize = 256;

/// What a scan factory sees when a connection starts.
pub struct ScanInit<'a> {
    /// The bound arguments.
    pub args: &'a Args,
    /// The unprojected output schema.
    pub output_schema: &'a SchemaRef,
    /// Whether this is the primary connection of the execution.
    pub is_primary: bool,
}

/// What a scan sees on each tick.
pub struct Scan<'a> {
    args: &'a Args,
    output_schema: &'a SchemaRef,
    needed: &'a [bool],
    work: Option<&'a mut SharedWork>,
}

impl Scan<'_> {
    /// The bound arguments.
    pub fn args(&self) -> &Args {
        self.args
    }

    /// The unprojected output schema batches must have.
    pub fn output_schema(&self) -> &SchemaRef {
        self.output_schema
    }

    /// Whether column `index` is read by the projection or a filter; a scan may
    /// fill unneeded columns with nulls.
    pub fn needs_column(&self, index: usize) -> bool {
        self.needed.get(index).copied().unwrap_or(false)
    }

    /// Claims up to `units_max` units of the execution's shared work; `None`
    /// once every unit has been claimed by some connection.
    pub fn claim(&mut self, units_max: u64) -> Result<Option<Range<u64>>, ErrorReport> {
        match self.work.as_deref_mut() {
            Some(work) => work.claim(units_max),
            None => Err(errors::internal(
                "claim() needs the function to declare shared_work()",
            )),
        }
    }
}

/// One connection's table stream.
pub struct TableStream {
    name: String,
    scan: Box<dyn TableScan>,
    args: Args,
    output_schema: SchemaRef,
    needed: Vec<bool>,
    work: Option<SharedWork>,
    filters: Filters,
    projection: Projection,
    rows_emitted: u64,
    batches_emitted: u64,
}

impl TableStream {
    /// A stream driving `scan`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        scan: Box<dyn TableScan>,
        args: Args,
        output_schema: SchemaRef,
        work: Option<SharedWork>,
        filters: Filters,
        projection: Projection,
    ) -> TableStream {
        let mut needed = projection.kept(output_schema.fields().len());
        filters.columns().into_iter().for_each(|i| needed[i] = true);
        TableStream {
            name: name.to_string(),
            scan,
            args,
            output_schema,
            needed,
            work,
            filters,
            projection,
            rows_emitted: 0,
            batches_emitted: 0,
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>, ErrorReport> {
        let mut scan = Scan {
            args: &self.args,
            output_schema: &self.output_schema,
            needed: &self.needed,
            work: self.work.as_mut(),
        };
        let Some(batch) = self.scan.next_batch(&mut scan)? else {
            return Ok(None);
        };
        conform(&self.name, &self.output_schema, batch).map(Some)
    }
}

/// A produced batch must have the declared output schema; one that differs only
/// in field metadata or nullability flags is re-labelled (after Arrow's checks).
pub(crate) fn conform(
    name: &str,
    schema: &SchemaRef,
    batch: RecordBatch,
) -> Result<RecordBatch, ErrorReport> {
    if batch.schema_ref() == schema {
        return Ok(batch);
    }
    RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).map_err(|e| {
        errors::internal(format!(
            "{name}() produced a batch that does not match its output schema: {e}"
        ))
    })
}

impl StreamState for TableStream {
    fn process(
        &mut self,
        _tick: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        for _ in 0..EMPTY_BATCHES_PER_TICK_MAX {
            let Some(batch) = self.next_batch()? else {
                output.finish();
                return Ok(());
            };
            let batch = self.filters.apply(batch)?;
            if batch.num_rows() > 0 {
                self.rows_emitted += batch.num_rows() as u64;
                self.batches_emitted += 1;
                output.emit(self.projection.apply(batch));
                return Ok(());
            }
        }
        output.emit(RecordBatch::new_empty(self.projection.schema().clone()));
        Ok(())
    }
}

impl Drop for TableStream {
    fn drop(&mut self) {
        logging::log(
            Level::Debug,
            format!(
                "{}(): connection emitted {} row(s) in {} batch(es)",
                self.name, self.rows_emitted, self.batches_emitted
            ),
        );
    }
}
