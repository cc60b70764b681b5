//! `QueryStream`: a query's batches, one per `next()`, each as an Arrow IPC stream of one batch.
//! The client holds at most `quiver_client::QUERY_CHANNEL_BATCHES` batches ahead of JS, so a
//! result of any size streams in constant memory; dropping or closing the stream cancels the
//! statement.

use std::sync::Arc;

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use quiver_client::AsyncQueryStream;
use tokio::sync::Mutex;

use crate::error::{invalid, to_js};
use crate::ipc;

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
    /// The next batch as an IPC stream, or `null` at the end.
    #[napi]
    pub async fn next(&self) -> napi::Result<Option<Buffer>> {
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
            Some(Ok(batch)) => {
                let bytes = tokio::task::spawn_blocking(move || {
                    ipc::encode(batch.schema_ref(), std::slice::from_ref(&batch))
                })
                .await
                .map_err(|error| invalid(error.to_string()))??;
                Ok(Some(bytes.into()))
            }
        }
    }

    /// Stops the query (the server interrupts the statement).
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.batches.lock().await.take();
        Ok(())
    }
}
