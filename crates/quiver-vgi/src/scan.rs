//! What a table function's scan body sees: the connection's start ([`ScanInit`]), each
//! tick ([`Scan`]), and the trait its per-connection state implements ([`TableScan`]).

use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_rpc::{CallContext, OutputBuffer};
use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;

use crate::args::Args;
use crate::execution::SharedWork;

/// What a scan factory sees when a connection starts.
pub struct ScanInit<'a> {
    /// The bound arguments.
    pub args: &'a Args,
    /// The unprojected output schema.
    pub output_schema: &'a SchemaRef,
    /// Whether this is the primary connection of the execution.
    pub is_primary: bool,
    /// The payload of the split this connection reads, for a scan planned into splits.
    pub split: Option<&'a [u8]>,
}

/// What a scan sees on each tick.
pub struct Scan<'a> {
    pub(crate) args: &'a Args,
    pub(crate) output_schema: &'a SchemaRef,
    pub(crate) needed: &'a [bool],
    pub(crate) work: Option<&'a mut SharedWork>,
    pub(crate) call: &'a CallContext<'a>,
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

    /// Memory in the connection's shared-memory segment for one column buffer of the next
    /// batch, so the batch reaches the engine without a copy; `None` without shared memory or
    /// below its threshold (build on the heap then). See [`CallContext::output_buffer`].
    pub fn output_buffer(&self, len_bytes: usize) -> Option<OutputBuffer> {
        self.call.output_buffer(len_bytes)
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

/// The per-connection state of a table function scan.
pub trait TableScan: Send {
    /// The next batch of the unprojected output schema, or `None` at the end.
    /// Columns that [`Scan::needs_column`] reports unneeded may be all-null.
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport>;

    /// The scan's position as bytes its function's resume hook
    /// ([`crate::TableFunction::resume`]) rebuilds it from, so that over HTTP the scan's next
    /// turn can run on any replica behind a load balancer. Keep it small (a cursor, not data):
    /// it travels in every turn's token. `None` (the default, and all a closure can say) keeps
    /// the scan in the process that started it, and a turn landing on another replica is
    /// refused with the holder's name.
    fn snapshot(&self) -> Option<Vec<u8>> {
        None
    }
}

impl<F> TableScan for F
where
    F: FnMut(&mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> + Send,
{
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        self(scan)
    }
}
