//! The scalar `init` stream: an exchange of input batches (the column
//! arguments) for one-column `result` batches with the same row count. Its only
//! state is its binding, so every turn can travel in its token (`carry.rs`).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use quiver_rpc::{CallContext, StreamOutput, StreamState};
use quiver_vgi_contract::errors;
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::args::Args;
use crate::carry::{self, Request, Writer};
use crate::function::{Body, Function, ScalarBody, ScalarInput};

/// One connection's scalar stream.
pub struct ScalarStream {
    name: String,
    body: Arc<ScalarBody>,
    args: Args,
    column_types: Vec<DataType>,
    output_schema: SchemaRef,
    request: Option<Request>,
}

impl ScalarStream {
    /// The stream of `function` with its bound constant arguments.
    pub fn new(function: &Function, args: Args, output_schema: SchemaRef) -> ScalarStream {
        let Body::Scalar { body, result_type } = &function.body else {
            panic!("{} is not a scalar function", function.name);
        };
        assert_eq!(
            output_schema.fields().len(),
            1,
            "a scalar produces one column"
        );
        assert_eq!(output_schema.field(0).data_type(), result_type);
        ScalarStream {
            name: function.name.clone(),
            body: body.clone(),
            args,
            column_types: function
                .column_args()
                .map(|a| a.data_type.clone())
                .collect(),
            output_schema,
            request: None,
        }
    }

    /// Lets the stream travel in its token: `request` is the `init` it was opened with.
    pub fn carrying(mut self, request: Request) -> ScalarStream {
        self.request = Some(request);
        self
    }

    fn columns(&self, input: &RecordBatch) -> Result<Vec<ArrayRef>, ErrorReport> {
        if input.num_columns() != self.column_types.len() {
            return Err(errors::invalid_argument(format!(
                "{}() takes {} column(s), the input batch has {}",
                self.name,
                self.column_types.len(),
                input.num_columns()
            )));
        }
        input
            .columns()
            .iter()
            .zip(&self.column_types)
            .map(|(column, declared)| {
                if column.data_type() == declared {
                    return Ok(column.clone());
                }
                arrow_cast::cast(column, declared).map_err(|e| {
                    errors::argument_validation(format!(
                        "{}(): input column does not cast to {declared}: {e}",
                        self.name
                    ))
                })
            })
            .collect()
    }
}

impl StreamState for ScalarStream {
    fn process(
        &mut self,
        input: &RecordBatch,
        _metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let columns = self.columns(input)?;
        let num_rows = input.num_rows();
        let result = (self.body)(&ScalarInput {
            columns: &columns,
            args: &self.args,
            num_rows,
        })?;
        if result.len() != num_rows {
            return Err(errors::internal(format!(
                "{}() returned {} value(s) for {num_rows} input row(s)",
                self.name,
                result.len()
            )));
        }
        let declared = self.output_schema.field(0).data_type();
        if result.data_type() != declared {
            return Err(errors::internal(format!(
                "{}() returned {}, but declares {declared}",
                self.name,
                result.data_type()
            )));
        }
        let batch = RecordBatch::try_new(self.output_schema.clone(), vec![result])
            .map_err(|e| errors::internal(format!("{}() result: {e}", self.name)))?;
        output.emit(batch);
        Ok(())
    }

    /// A scalar body keeps nothing between batches: the binding is all there is.
    fn snapshot(&self) -> Option<Vec<u8>> {
        Writer::new(carry::SCALAR, self.request.as_ref()?).finish()
    }
}
