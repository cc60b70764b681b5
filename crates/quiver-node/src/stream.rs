//! `QueryStream`: a query's batches, one per `next()`, each handed over without a copy
//! (`crate::batches`).
//! The client holds at most `quiver_client::QUERY_CHANNEL_BATCHES` batches ahead of JS, so a
//! result of any size streams in constant memory; dropping or closing the stream cancels the
//! statement.

use std::sync::Arc;

use napi_derive::napi;
use quiver_client::AsyncQueryStream;
use tokio::sync::Mutex;

use crate::batches::Batches;
use crate::error::to_js;

/// The batches of one query.
#[napi]
pub struct QueryStream {
    /// `None` once ended or closed.
    batches: Arc<Mutex<Option<AsyncQueryStream>>>,
}

impl QueryStream {
    pub(crate) fn new(stream: AsyncQueryStream) -> QueryStream {
        QueryStream {
            batches: Arc::new(Mutex::new(Some(stream))),
        }
    }
}

#[napi]
impl QueryStream {
    /// The next batch, or `null` at the end.
    #[napi]
    pub async fn next(&self) -> napi::Result<Option<Batches>> {
        let mut guard = self.batches.lock().await;
        let Some(stream) = guard.as_mut() else {
            return Ok(None);
        };
        match stream.next_batch().await {
            None => {
                *guard = None;
                Ok(None)
            }
            Some(Err(error)) => {
                *guard = None;
                Err(to_js(error))
            }
            Some(Ok(batch)) => Ok(Some(Batches {
                schema: batch.schema(),
                batches: vec![batch],
            })),
        }
    }

    /// Stops the query (the server interrupts the statement).
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.batches.lock().await.take();
        Ok(())
    }
}
