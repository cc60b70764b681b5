//! Split scans: a table function that declares `supports_splits` is planned first
//! (`table_function_plan`, paged by cursors), and its splits are then redeemed one `init` each,
//! claimed greedily by the scan's threads, each on whatever pooled connection it checks out (a
//! process per connection for stdio workers, a session for `launch:` ones).
//!
//! The API is two steps, so that an engine other than DuckDB's scan can drive it: [`plan`] returns
//! a [`SplitPlan`] (tokens and the plan's facts), and [`SplitPlan::redeem`] opens the producer
//! stream of one token on any connection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow_schema::SchemaRef;
use quiver_vgi_contract::splits::{PlanRequest, PlanResponse, PLAN_PAGES_MAX, PLAN_SPLITS_MAX};
use quiver_vgi_contract::{methods, InitRequest};

use crate::bind::Bound;
use crate::calls::StreamSource;
use crate::catalog::result_bytes;
use crate::ffi::{Failure, FailureCode, Outcome};
use crate::stream::{request_batch, Stream};
use crate::worker::Worker;

/// The environment variable that lowers the bound on plan pages (at most [`PLAN_PAGES_MAX`]).
pub const PAGES_MAX_VARIABLE: &str = "QUIVER_VGI_PLAN_PAGES_MAX";

/// The bound on plan pages: [`PAGES_MAX_VARIABLE`] when set to 1..=[`PLAN_PAGES_MAX`].
fn pages_max() -> usize {
    std::env::var(PAGES_MAX_VARIABLE)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| (1..=PLAN_PAGES_MAX).contains(&n))
        .unwrap_or(PLAN_PAGES_MAX)
}

/// A planned scan: the split tokens in plan order and what the worker said about the whole.
pub struct SplitPlan {
    /// One token per split, in the order the plan listed them.
    pub tokens: Vec<Vec<u8>>,
    /// Most splits in flight at once (the plan's, else the catalog's), at least 1.
    pub max_workers: i64,
    /// The worker's estimate of the scan's rows, if it gave one.
    pub estimated_total_rows: Option<i64>,
    /// Plan pages read.
    pub pages: usize,
    worker: Arc<Worker>,
    /// The `init` every split sends, its `split_tokens` set per split.
    init: InitRequest,
    output: SchemaRef,
    during: String,
}

/// Plans the scan of `bound`: `projection` and `filters` as the scan's `init` would carry them
/// (`output` is the projected schema every split answers). Follows `next_cursors` until none is
/// left; more than [`PLAN_PAGES_MAX`] pages or [`PLAN_SPLITS_MAX`] splits is refused by name.
pub fn plan(mut init: InitRequest, bound: &Bound, output: SchemaRef) -> Outcome<SplitPlan> {
    let worker = bound.attached.worker.clone();
    let during = format!("the split plan of {}", bound.call_name());
    let mut request = PlanRequest {
        bind_call: init.bind_call.encode(),
        bind_opaque_data: init.bind_opaque_data.clone(),
        projection_ids: init.projection_ids.clone(),
        pushdown_filters: init.pushdown_filters.clone(),
        ..PlanRequest::default()
    };
    let mut tokens = Vec::new();
    let mut cursors: VecDeque<Option<Vec<u8>>> = VecDeque::from([None]);
    let mut first: Option<PlanResponse> = None;
    let mut pages = 0;
    let pages_max = pages_max();
    while let Some(cursor) = cursors.pop_front() {
        if pages == pages_max {
            return Err(Failure::new(
                FailureCode::Worker,
                format!(
                    "{} planned more than {pages_max} plan pages during {during}; quiver's \
                     engine follows at most {pages_max} ({PAGES_MAX_VARIABLE})",
                    worker.label()
                ),
            ));
        }
        pages += 1;
        request.cursor = cursor;
        let page = one_page(&worker, &request, PLAN_SPLITS_MAX - tokens.len(), &during)?;
        tokens.extend(page.splits.iter().map(|s| s.token.clone()));
        cursors.extend(page.next_cursors.iter().cloned().map(Some));
        first.get_or_insert(page);
    }
    let first = first.unwrap_or_default();
    init.execution_id = first.execution_id.clone();
    init.init_opaque_data = first.init_opaque_data.clone();
    let max_workers = first
        .max_workers
        .or(bound.desc().max_workers)
        .unwrap_or(1)
        .max(1);
    Ok(SplitPlan {
        tokens,
        max_workers,
        estimated_total_rows: first.estimated_total_rows,
        pages,
        worker,
        init,
        output,
        during: format!("a split of {}", bound.call_name()),
    })
}

fn one_page(
    worker: &Arc<Worker>,
    request: &PlanRequest,
    splits_left: usize,
    during: &str,
) -> Outcome<PlanResponse> {
    let reply = worker.with_conn(during, |client| {
        client.call(
            methods::TABLE_FUNCTION_PLAN,
            &request_batch(&request.encode()),
        )
    })?;
    let unreadable = |why: String| {
        Failure::new(
            FailureCode::Worker,
            format!(
                "{} answered an unreadable plan during {during}: {why}",
                worker.label()
            ),
        )
    };
    let bytes =
        result_bytes(reply, methods::TABLE_FUNCTION_PLAN).map_err(|e| unreadable(e.message))?;
    PlanResponse::decode(&bytes, splits_left).map_err(|e| unreadable(e.message))
}

impl SplitPlan {
    /// Opens the producer stream of one split, on any pooled connection.
    pub fn redeem(&mut self, token: Vec<u8>) -> Outcome<Stream> {
        let request = self.request_for(token);
        Ok(Stream::open(&self.worker, &request, self.during.clone())?
            .expecting(self.output.clone()))
    }

    /// The encoded `init` of every split, in plan order: what an engine that redeems splits in
    /// other processes (quiver's Spark source) hands to each, to open with [`Stream::open`] on a
    /// worker of its own.
    pub fn requests(&mut self) -> Vec<Vec<u8>> {
        let tokens = std::mem::take(&mut self.tokens);
        let requests = tokens.iter().map(|t| self.request_for(t.clone())).collect();
        self.tokens = tokens;
        requests
    }

    /// The encoded `init` redeeming `token`.
    fn request_for(&mut self, token: Vec<u8>) -> Vec<u8> {
        self.init.split_tokens = Some(vec![token]);
        let request = self.init.encode();
        self.init.split_tokens = None;
        request
    }

    /// How many streams a scan should run: one per split up to `max_workers`, and at least one
    /// (a plan of zero splits still needs a reader to end the scan).
    pub fn streams(&self) -> i64 {
        i64::try_from(self.tokens.len())
            .unwrap_or(i64::MAX)
            .min(self.max_workers)
            .max(1)
    }
}

/// The splits of one plan, claimed by the scan's threads in plan order.
pub struct SplitQueue {
    plan: Mutex<(SplitPlan, usize)>,
}

impl SplitQueue {
    /// A queue over `plan`'s splits.
    pub fn new(plan: SplitPlan) -> Arc<SplitQueue> {
        Arc::new(SplitQueue {
            plan: Mutex::new((plan, 0)),
        })
    }

    /// A reader for one thread of the scan.
    pub fn reader(self: &Arc<Self>) -> Box<dyn StreamSource> {
        Box::new(SplitReader {
            queue: self.clone(),
        })
    }

    /// The stream of the next unclaimed split; `None` when all are claimed.
    fn claim(&self) -> Outcome<Option<Stream>> {
        let (request, worker, during, output) = {
            let mut guard = self.plan.lock().expect("split queue lock");
            let (plan, next) = &mut *guard;
            let Some(token) = plan.tokens.get(*next).cloned() else {
                return Ok(None);
            };
            *next += 1;
            (
                plan.request_for(token),
                plan.worker.clone(),
                plan.during.clone(),
                plan.output.clone(),
            )
        };
        // Opened outside the lock: the other threads claim while this one waits on the worker.
        Ok(Some(
            Stream::open(&worker, &request, during)?.expecting(output),
        ))
    }
}

struct SplitReader {
    queue: Arc<SplitQueue>,
}

impl StreamSource for SplitReader {
    fn next(&mut self, finished: Option<Stream>) -> Outcome<Option<Stream>> {
        if let Some(stream) = finished {
            stream.close()?;
        }
        self.queue.claim()
    }
}
