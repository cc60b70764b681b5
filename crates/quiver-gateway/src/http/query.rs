//! A cache miss's work: a connection (through `access::admission::Admission`), the
//! compiled statement run on the server with its values bound, the batches collected up to the
//! response's limit, the next page's cursor, and the body encoded. Blocking client calls run on
//! tokio's blocking threads; a request that gives up (timeout, dropped connection) cancels its
//! statement on the server.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use quiver_client::{params, CancelHandle, Pool};

use crate::cache::{self, CachedBody};
use crate::compile::Compiled;
use crate::gateway::Gateway;
use crate::lookup::Lookups;
use crate::project::{ColumnType, Dataset, Endpoint};
use crate::representation::{self, BodyMeta, Encoding, Format};

use super::errors::{ApiError, Family};
use crate::access::admission::Refused;

/// What a caller is told when no database connection is free (offloader's words).
pub const BUSY_MESSAGE: &str = "service is busy, retry shortly";

/// Seconds an overloaded gateway asks a caller to wait.
const OVERLOADED_RETRY_SECONDS: u64 = 1;

/// Rows a keyed lookup sorts on the async thread; more move to a blocking thread.
const INLINE_LOOKUP_ROWS_MAX: usize = 4096;

/// The identity body of one request: looked up in the snapshot's rows in memory when its
/// endpoint and params allow (see `crate::lookup`), else run on the server, cut to the page and
/// encoded, all on one blocking thread (a hop between threads costs a wake-up; the query and
/// its encoding need no async thread).
// What a body depends on, as `endpoint.rs`'s `Call` holds it: one call site, no bundle to make.
#[allow(clippy::too_many_arguments)]
pub async fn answer(
    gateway: &Gateway,
    endpoint: &Endpoint,
    dataset: &Dataset,
    compiled: Compiled,
    format: Format,
    meta: BodyMeta,
    lookups: Option<Arc<Lookups>>,
    request_id: &str,
) -> Result<CachedBody, ApiError> {
    let looked_up = match lookups {
        Some(lookups) => looked_up(lookups, endpoint, dataset, &compiled, format, &meta).await,
        None => None,
    };
    let answered = match looked_up {
        Some(answered) => {
            gateway.metrics.record_lookup();
            answered
        }
        None => queried(gateway, endpoint, dataset, compiled, format, meta).await?,
    };
    match answered {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(failure)) => {
            failure.log(request_id);
            Err(ApiError::internal())
        }
        Err(join_error) => {
            tracing::error!(request_id, error = %join_error, "query task failed");
            Err(ApiError::internal())
        }
    }
}

/// A body's page encoded, or why not; or the blocking task's failure.
type Answered = Result<Result<CachedBody, Failure>, tokio::task::JoinError>;

/// The body from the snapshot's keyed lookups; `None` when they cannot answer this request.
async fn looked_up(
    lookups: Arc<Lookups>,
    endpoint: &Endpoint,
    dataset: &Dataset,
    compiled: &Compiled,
    format: Format,
    meta: &BodyMeta,
) -> Option<Answered> {
    let lookup = compiled.lookup.as_ref()?;
    let found = lookups.positions(lookup)?.len();
    let schema_if_empty = schema_without_rows(endpoint, dataset, &compiled.columns);
    let work = {
        let (endpoint, compiled, meta) = (endpoint.clone(), compiled.clone(), meta.clone());
        move || {
            let lookup = compiled.lookup.as_ref().expect("checked above");
            let positions = lookups.positions(lookup).expect("checked above");
            let batch = lookups
                .page(&endpoint, &compiled, lookup, positions)
                .expect("`positions` checked the residual values")
                .map_err(Failure::Shape)?;
            encoded(&compiled, vec![batch], schema_if_empty, format, meta)
        }
    };
    if found <= INLINE_LOOKUP_ROWS_MAX {
        Some(Ok(work()))
    } else {
        Some(tokio::task::spawn_blocking(work).await)
    }
}

/// The page of a statement's (or a lookup's) batches, encoded.
fn encoded(
    compiled: &Compiled,
    batches: Vec<RecordBatch>,
    schema_if_empty: SchemaRef,
    format: Format,
    mut meta: BodyMeta,
) -> Result<CachedBody, Failure> {
    let page = compiled.finish(batches).map_err(Failure::Shape)?;
    meta.next_cursor = page.next_cursor.clone();
    let schema = page
        .batches
        .first()
        .map_or(schema_if_empty, RecordBatch::schema);
    representation::encode(format, &schema, &page.batches, &meta)
        .map(|bytes| CachedBody::identity(bytes, format, page.row_count, page.next_cursor))
        .map_err(Failure::Encode)
}

/// The body from a statement on the server.
async fn queried(
    gateway: &Gateway,
    endpoint: &Endpoint,
    dataset: &Dataset,
    compiled: Compiled,
    format: Format,
    meta: BodyMeta,
) -> Result<Answered, ApiError> {
    let (permit, waited) = gateway.admission.enter().await.map_err(|refused| {
        if refused == Refused::Shed {
            gateway.metrics.record_load_shed();
        }
        // offloader's answer to a saturated pool: the same for a shed and a timed-out wait.
        ApiError::new(Family::NotReady, BUSY_MESSAGE).retry_after(OVERLOADED_RETRY_SECONDS)
    })?;
    gateway.metrics.record_pool_wait(waited.as_secs_f64());

    let schema_if_empty = schema_without_rows(endpoint, dataset, &compiled.columns);
    let pool = gateway.backend.pool().clone();
    let cancel = CancelOnDrop::default();
    let cancel_slot = cancel.slot.clone();
    let answered = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let batches = fetch(&pool, &compiled, &cancel_slot).map_err(Failure::Query)?;
        encoded(&compiled, batches, schema_if_empty, format, meta)
    })
    .await;
    cancel.disarm();
    Ok(answered)
}

/// An uncached body in the caller's coding (the cache makes its own copies).
pub async fn compressed(identity: CachedBody, encoding: Encoding) -> Arc<CachedBody> {
    cache::compressed_copy(Arc::new(identity), encoding).await
}

/// Why a cache miss found no body (each logged, each a 500 to the caller).
enum Failure {
    Query(quiver_client::Error),
    Shape(arrow_schema::ArrowError),
    Encode(representation::EncodeError),
}

impl Failure {
    fn log(&self, request_id: &str) {
        match self {
            Failure::Query(error) => tracing::error!(request_id, error = %error, "query failed"),
            Failure::Shape(error) => tracing::error!(
                request_id, error = %error, "the result did not fit the compiled shape"
            ),
            Failure::Encode(error) => {
                tracing::error!(request_id, error = %error, "encoding the response failed");
            }
        }
    }
}

/// Runs the statement on a pooled connection (prepared once per connection: endpoints ask the
/// same few shapes) and collects its batches: at most the page's rows and the one more that
/// says another page follows.
fn fetch(
    pool: &Pool,
    compiled: &Compiled,
    cancel_slot: &Mutex<Running>,
) -> Result<Vec<RecordBatch>, quiver_client::Error> {
    let mut connection = pool.get()?;
    {
        let mut running = lock(cancel_slot);
        if running.abandoned {
            return Err(quiver_client::Error::InvalidInput(
                "the request was abandoned before its query started".into(),
            ));
        }
        running.handle = Some(connection.cancel_handle());
    }
    // Declared after the connection, so dropped before it goes back to the pool, on every path.
    let _clear = ClearOnDrop(cancel_slot);
    let values = if compiled.values.is_empty() {
        None
    } else {
        Some(params::row(&bound(&compiled.values))?)
    };
    let rows_max = compiled.limit + 1;
    let mut batches = Vec::new();
    let mut rows = 0u64;
    for batch in connection.query_cached(&compiled.sql, values.as_ref())? {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        batches.push(batch);
        if rows >= rows_max {
            break;
        }
    }
    Ok(batches)
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

/// A request's statement as its canceller sees it: the handle while it runs on a lent connection.
#[derive(Default)]
struct Running {
    handle: Option<CancelHandle>,
    /// The request went away before its query started: it never starts.
    abandoned: bool,
}

/// Takes the handle back before the connection returns to the pool: from then on a cancel of
/// this request would reach whatever statement the connection runs next, someone else's.
struct ClearOnDrop<'a>(&'a Mutex<Running>);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        lock(self.0).handle = None;
    }
}

/// Cancels the running statement if the request's future is dropped before it ends.
#[derive(Default)]
struct CancelOnDrop {
    slot: Arc<Mutex<Running>>,
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
        let slot = self.slot.clone();
        // Cancelling talks to the server: not on an async thread. The lock is held while it does,
        // so the query's thread cannot hand its connection back (see `ClearOnDrop`) until the
        // cancel has reached this request's statement, or found none running.
        tokio::task::spawn_blocking(move || {
            let mut running = lock(&slot);
            running.abandoned = true;
            if let Some(handle) = &running.handle {
                let _ = handle.cancel();
            }
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A compiled statement's values as the quiver client binds them.
pub fn bound(values: &[crate::value::Value]) -> Vec<quiver_client::Param> {
    use crate::value::Value;
    use quiver_client::Param;
    values
        .iter()
        .map(|value| match value {
            Value::Null => Param::Null,
            Value::Bool(value) => Param::Bool(*value),
            Value::I64(value) => Param::I64(*value),
            Value::F64(value) => Param::F64(*value),
            Value::Str(value) => Param::Str(value.clone()),
        })
        .collect()
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
