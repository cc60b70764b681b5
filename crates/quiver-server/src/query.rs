//! A query's result as a producer stream: one DuckDB batch per client tick, so nothing is fetched
//! ahead of the client beyond DuckDB's own result buffer — a slow client holds the server to a
//! bounded amount of memory. A zero-row result is a stream with its schema and no batch.

use std::sync::Arc;

use arrow_array::RecordBatch;
use quiver_rpc::{CallContext, StreamOutput, StreamSetup, StreamState};
use quiver_wire::{BatchMetadata, ErrorReport};

use crate::duck::Cursor;
use crate::session::Session;

/// The state of one `query` / `query_prepared` call.
pub struct QueryStream {
    session: Arc<Session>,
    cursor: Option<Cursor>,
}

impl QueryStream {
    /// The stream over `cursor`'s result.
    pub fn setup(session: Arc<Session>, cursor: Cursor) -> StreamSetup {
        let schema = cursor.schema();
        StreamSetup::producer(
            schema,
            QueryStream {
                session,
                cursor: Some(cursor),
            },
        )
    }
}

impl StreamState for QueryStream {
    fn process(
        &mut self,
        _input: &RecordBatch,
        _input_metadata: &BatchMetadata,
        output: &mut StreamOutput,
        _ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let Some(cursor) = self.cursor.as_mut() else {
            output.finish();
            return Ok(());
        };
        let next = self.session.with(|_| cursor.next_batch());
        match next {
            Ok(Some(batch)) => output.emit(batch),
            Ok(None) => {
                self.cursor = None;
                output.finish();
            }
            Err(error) => {
                self.cursor = None;
                return Err(error);
            }
        }
        Ok(())
    }

    fn on_cancel(&mut self) {
        self.cursor = None;
    }
}
