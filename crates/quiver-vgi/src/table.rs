//! The table function `init` stream: a producer. Per tick the scan makes the
//! next batch of the unprojected schema; the SDK filters it, projects it, and
//! emits it, or ends the stream when the scan is done. A scan whose function can
//! resume it travels between turns in its token (`carry.rs`).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::{CallContext, StreamOutput, StreamState};
use quiver_vgi_contract::errors;
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::args::Args;
use crate::carry::{self, Request, Writer};
use crate::execution::{ExecutionId, SharedWork};
use crate::filters::Filters;
use crate::logging::{self, Level};
use crate::projection::Projection;
use crate::scan::{Scan, TableScan};

/// Batches a filter may empty in one tick before the tick answers with an
/// empty batch anyway, so one tick's work stays bounded.
const EMPTY_BATCHES_PER_TICK_MAX: usize = 256;

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
    carry: Option<TableCarry>,
}

/// What a resumable scan carries besides its position.
pub struct TableCarry {
    /// The `init` request it was opened with.
    pub request: Request,
    /// Its execution.
    pub execution: ExecutionId,
    /// Whether it is its execution's primary connection.
    pub is_primary: bool,
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
            carry: None,
        }
    }

    /// Lets the stream travel in its token when its scan can say where it stands.
    pub fn carrying(mut self, carry: Option<TableCarry>) -> TableStream {
        self.carry = carry;
        self
    }

    /// Resumes the counts a carried stream reached on earlier turns.
    pub fn with_counts(mut self, rows: u64, batches: u64) -> TableStream {
        (self.rows_emitted, self.batches_emitted) = (rows, batches);
        self
    }

    fn next_batch(&mut self, call: &CallContext<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        let mut scan = Scan {
            args: &self.args,
            output_schema: &self.output_schema,
            needed: &self.needed,
            work: self.work.as_mut(),
            call,
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
        ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        for _ in 0..EMPTY_BATCHES_PER_TICK_MAX {
            let Some(batch) = self.next_batch(ctx)? else {
                logging::log(
                    Level::Debug,
                    format!(
                        "{}(): connection emitted {} row(s) in {} batch(es)",
                        self.name, self.rows_emitted, self.batches_emitted
                    ),
                );
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

    /// Where the scan stands: its `init` request, its shared-work counter and its own cursor.
    /// `None` (held) when the scan cannot say, or shares a counter with other connections.
    fn snapshot(&self) -> Option<Vec<u8>> {
        let carry = self.carry.as_ref()?;
        let work = match &self.work {
            Some(work) => Some(work.carried()?),
            None => None,
        };
        let scan = self.scan.snapshot()?;
        let mut writer = Writer::new(carry::TABLE, &carry.request);
        writer.blob(&carry.execution).u8(u8::from(carry.is_primary));
        match work {
            Some((next, total)) => writer.u8(1).u64(next).u64(total),
            None => writer.u8(0),
        };
        writer
            .u64(self.rows_emitted)
            .u64(self.batches_emitted)
            .blob(&scan)
            .finish()
    }
}
