//! A cache miss's work: a connection (through [`Admission`](super::admission::Admission)), the
//! compiled statement run on the server with its values bound, the batches collected up to the
//! response's limit, the next page's cursor, and the body encoded. Blocking client calls run on
//! tokio's blocking threads; a request that gives up (timeout, dropped connection) cancels its
//! statement on the server.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use quiver_client::{params, CancelHandle};

use crate::cache::{self, CachedBody};
use crate::compile::Compiled;
use crate::gateway::Gateway;
use crate::project::{ColumnType, Dataset, Endpoint};
use crate::representation::{self, BodyMeta, Encoding, Format};

use super::admission::Refused;
use super::errors::{ApiError, Family};

/// Seconds an overloaded gateway asks a caller to wait.
const OVERLOADED_RETRY_SECONDS: u64 = 1;

/// The identity body of one request: run, cut to the page, encoded.
pub async fn answer(
    gateway: &Gateway,
    endpoint: &Endpoint,
    compiled: Compiled,
    format: Format,
    mut meta: BodyMeta,
    request_id: &str,
) -> Result<CachedBody, ApiError> {
    let batches = fetch(gateway, &compiled, request_id).await?;
    let page = compiled.finish(batches).map_err(|error| {
        tracing::error!(request_id, error = %error, "the result did not fit the compiled shape");
        ApiError::internal()
    })?;
    meta.next_cursor = page.next_cursor.clone();
    let dataset = gateway
        .project
        .dataset(&endpoint.dataset)
        .expect("an endpoint's dataset exists (checked at load)");
    let schema = page
        .batches
        .first()
        .map(RecordBatch::schema)
        .unwrap_or_else(|| schema_without_rows(endpoint, dataset, &compiled.columns));
    let request_id = request_id.to_owned();
    let encoded = tokio::task::spawn_blocking(move || {
        representation::encode(format, &schema, &page.batches, &meta)
            .map(|bytes| CachedBody::identity(bytes, format, page.row_count, page.next_cursor))
    })
    .await;
    match encoded {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(error)) => {
            tracing::error!(request_id, error = %error, "encoding the response failed");
            Err(ApiError::internal())
        }
        Err(join_error) => {
            tracing::error!(request_id, error = %join_error, "encoding task failed");
            Err(ApiError::internal())
        }
    }
}

/// An uncached body in the caller's coding (the cache makes its own copies).
pub async fn compressed(identity: CachedBody, encoding: Encoding) -> Arc<CachedBody> {
    cache::compressed_copy(Arc::new(identity), encoding).await
}

/// Runs the statement on a pooled connection and collects its batches: at most the page's rows
/// and the one more that says another page follows.
async fn fetch(
    gateway: &Gateway,
    compiled: &Compiled,
    request_id: &str,
) -> Result<Vec<RecordBatch>, ApiError> {
    let (permit, waited) = gateway.admission.enter().await.map_err(|refused| {
        let message = match refused {
            Refused::Shed => {
                gateway.metrics.record_load_shed();
                "too many requests are waiting for the database"
            }
            Refused::TimedOut => "no database connection came free in time",
        };
        ApiError::new(Family::Overloaded, message).retry_after(OVERLOADED_RETRY_SECONDS)
    })?;
    gateway.metrics.record_pool_wait(waited.as_secs_f64());

    let pool = gateway.backend.pool().clone();
    let cancel = CancelOnDrop::default();
    let cancel_slot = cancel.slot.clone();
    let sql = compiled.sql.clone();
    let values = compiled.values.clone();
    let rows_max = compiled.limit + 1;
    let fetched = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut connection = pool.get()?;
        *lock(&cancel_slot) = Some(connection.cancel_handle());
        let stream = if values.is_empty() {
            connection.query(&sql)?
        } else {
            connection.query_with(&sql, &params::row(&values)?)?
        };
        let mut batches = Vec::new();
        let mut rows = 0u64;
        for batch in stream {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            batches.push(batch);
            if rows >= rows_max {
                break;
            }
        }
        lock(&cancel_slot).take();
        Ok::<_, quiver_client::Error>(batches)
    })
    .await;
    cancel.disarm();
    match fetched {
        Ok(Ok(batches)) => Ok(batches),
        Ok(Err(error)) => {
            tracing::error!(request_id, error = %error, "query failed");
            Err(ApiError::internal())
        }
        Err(join_error) => {
            tracing::error!(request_id, error = %join_error, "query task failed");
            Err(ApiError::internal())
        }
    }
}

/// The result schema of a response without rows (the server sends no batch to read it from):
/// the output columns with the types their select items yield.
fn schema_without_rows(endpoint: &Endpoint, dataset: &Dataset, columns: &[String]) -> SchemaRef {
    let fields: Vec<Field> = columns
        .iter()
        .map(|output| {
            let column_type = endpoint
                .select
                .iter()
                .find(|item| &item.output == output)
                .map_or(ColumnType::Varchar, |item| item.output_type(dataset));
            Field::new(output, arrow_type(column_type), true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn arrow_type(column_type: ColumnType) -> DataType {
    match column_type {
        ColumnType::Date => DataType::Date32,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        ColumnType::Varchar | ColumnType::Json => DataType::Utf8,
        ColumnType::Integer => DataType::Int32,
        ColumnType::Bigint => DataType::Int64,
        ColumnType::Double => DataType::Float64,
        ColumnType::Boolean => DataType::Boolean,
    }
}

/// Cancels the running statement if the request's future is dropped before it ends.
#[derive(Default)]
struct CancelOnDrop {
    slot: Arc<Mutex<Option<CancelHandle>>>,
    disarmed: bool,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.disarmed = true;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.disarmed {
            return;
        }
        if let Some(handle) = lock(&self.slot).take() {
            // Cancelling talks to the server: not on an async thread.
            tokio::task::spawn_blocking(move || {
                let _ = handle.cancel();
            });
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_type_has_an_arrow_type() {
        for column_type in [
            ColumnType::Date,
            ColumnType::Timestamp,
            ColumnType::Varchar,
            ColumnType::Integer,
            ColumnType::Bigint,
            ColumnType::Double,
            ColumnType::Boolean,
            ColumnType::Json,
        ] {
            assert_ne!(arrow_type(column_type), DataType::Null);
        }
    }
}
