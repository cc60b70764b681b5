//! Admission to the server's connections: as many requests query at once as the pool has
//! connections; the next wait at most the project's `pool.wait_ms` (then `503 not_ready`, busy), and
//! beyond a bounded number of waiters a request is shed at once (counted). Cache hits never come
//! here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Most requests waiting for a connection, per connection.
pub const WAITERS_PER_CONNECTION_MAX: usize = 16;

pub struct Admission {
    permits: Arc<Semaphore>,
    size: usize,
    waiting: AtomicUsize,
    waiting_max: usize,
    wait_max: Duration,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Too many were waiting already.
    Shed,
    /// No connection came free in time.
    TimedOut,
}

impl Admission {
    pub fn new(size: usize, wait_max: Duration) -> Admission {
        assert!(size > 0, "at least one connection");
        Admission {
            permits: Arc::new(Semaphore::new(size)),
            size,
            waiting: AtomicUsize::new(0),
            waiting_max: size * WAITERS_PER_CONNECTION_MAX,
            wait_max,
        }
    }

    /// A permit to use one connection, and how long it took.
    pub async fn enter(&self) -> Result<(OwnedSemaphorePermit, Duration), Refused> {
        let started = Instant::now();
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok((permit, started.elapsed()));
        }
        // Counted out by the guard's drop, also when the request is dropped while it waits (its
        // caller went away): a count left behind would shed every later request.
        let waiting = Waiting::enter(&self.waiting);
        if waiting.count_before >= self.waiting_max {
            return Err(Refused::Shed);
        }
        let acquired =
            tokio::time::timeout(self.wait_max, self.permits.clone().acquire_owned()).await;
        match acquired {
            Ok(Ok(permit)) => Ok((permit, started.elapsed())),
            Ok(Err(_)) | Err(_) => Err(Refused::TimedOut),
        }
    }

    /// Connections lent to requests now.
    pub fn busy(&self) -> usize {
        self.size - self.permits.available_permits()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn wait_max(&self) -> Duration {
        self.wait_max
    }
}

/// One request in the waiting room, for as long as the value lives.
struct Waiting<'a> {
    waiting: &'a AtomicUsize,
    count_before: usize,
}

impl<'a> Waiting<'a> {
    fn enter(waiting: &'a AtomicUsize) -> Waiting<'a> {
        let count_before = waiting.fetch_add(1, Ordering::AcqRel);
        Waiting {
            waiting,
            count_before,
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_dropped_while_waiting_leaves_the_room() {
        let admission = Arc::new(Admission::new(1, Duration::from_secs(60)));
        let (held, _) = admission.enter().await.unwrap();
        for _ in 0..3 * WAITERS_PER_CONNECTION_MAX {
            let waiter = {
                let admission = admission.clone();
                tokio::spawn(async move { admission.enter().await.map(|_| ()) })
            };
            tokio::task::yield_now().await;
            assert_eq!(admission.waiting.load(Ordering::Acquire), 1, "it waits");
            // The caller went away (a client that disconnected mid-request).
            waiter.abort();
            assert!(waiter.await.unwrap_err().is_cancelled());
        }
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
        drop(held);
        assert!(admission.enter().await.is_ok(), "nobody is shed");
    }

    #[tokio::test]
    async fn waits_then_times_out_then_sheds() {
        let brief = Admission::new(1, Duration::from_millis(50));
        let (_held, _) = brief.enter().await.unwrap();
        assert_eq!(brief.busy(), 1);
        assert_eq!(brief.enter().await.unwrap_err(), Refused::TimedOut);

        let admission = Arc::new(Admission::new(1, Duration::from_secs(60)));
        let (held, _) = admission.enter().await.unwrap();
        // Fill the waiting room, then one more is shed at once.
        let mut waiters = Vec::new();
        for _ in 0..WAITERS_PER_CONNECTION_MAX {
            let admission = admission.clone();
            waiters.push(tokio::spawn(
                async move { admission.enter().await.map(|_| ()) },
            ));
        }
        tokio::task::yield_now().await;
        let mut shed = false;
        for _ in 0..1000 {
            if admission.waiting.load(Ordering::Acquire) == WAITERS_PER_CONNECTION_MAX {
                shed = admission.enter().await.unwrap_err() == Refused::Shed;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(shed, "a request beyond the waiting room is shed");
        drop(held);
        let mut admitted = 0;
        for waiter in waiters {
            admitted += usize::from(waiter.await.unwrap().is_ok());
        }
        assert_eq!(
            admitted, WAITERS_PER_CONNECTION_MAX,
            "each freed connection admits the next waiter"
        );
    }
}
