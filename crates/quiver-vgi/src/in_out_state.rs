//! What a table-in-out body sees: the substream's start ([`InOutInit`]), the [`Emitter`] its
//! output goes into, and the trait its per-substream state implements ([`InOutState`]).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_wire::ErrorReport;

use crate::args::Args;
use crate::limits::OUTPUT_BATCHES_PER_INPUT_MAX;

/// What a state factory sees when a substream starts.
pub struct InOutInit<'a> {
    /// The bound (non-TABLE) arguments.
    pub args: &'a Args,
    /// The input table's schema.
    pub input_schema: &'a SchemaRef,
    /// The unprojected output schema batches must have.
    pub output_schema: &'a SchemaRef,
}

/// Collects the batches a table-in-out function emits for one input (or for its
/// finalize).
pub struct Emitter {
    pub(crate) batches: Vec<RecordBatch>,
    pub(crate) overflowed: bool,
}

impl Emitter {
    pub(crate) fn new() -> Emitter {
        Emitter {
            batches: Vec::new(),
            overflowed: false,
        }
    }

    /// Emits one batch of the (unprojected) output schema. Beyond
    /// `OUTPUT_BATCHES_PER_INPUT_MAX` batches for one input the call fails.
    pub fn emit(&mut self, batch: RecordBatch) {
        if self.batches.len() < OUTPUT_BATCHES_PER_INPUT_MAX {
            self.batches.push(batch);
        } else {
            self.overflowed = true;
        }
    }
}

/// The per-substream state of a table-in-out function.
pub trait InOutState: Send + 'static {
    /// Handles one input batch, emitting any number of output batches.
    fn process(&mut self, input: &RecordBatch, out: &mut Emitter) -> Result<(), ErrorReport>;

    /// Emits what remains once the input has ended (only called for functions
    /// that declare a finalize).
    fn finalize(&mut self, _out: &mut Emitter) -> Result<(), ErrorReport> {
        Ok(())
    }

    /// The state as bytes its function's resume hook ([`crate::TableInOutFunction::resume`])
    /// rebuilds it from, so that over HTTP the substream's next turn can run on any replica
    /// behind a load balancer. Keep it small: it travels in every turn's token. `None` (the
    /// default) keeps the state in the process that started it. A function with a finalize
    /// always stays there: its state waits in that process for FINALIZE.
    fn snapshot(&self) -> Option<Vec<u8>> {
        None
    }
}
