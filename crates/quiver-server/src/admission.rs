//! Admission before authentication: every door (a spine listener, the Flight SQL listener) keeps
//! the connections that have not authenticated yet in a small pool of their own, apart from the
//! sessions `max_connections` counts. A connection must authenticate within the deadline or it is
//! closed; when the pool is full, its oldest connection is closed to make room for the newest. So
//! strangers that connect and say nothing can hold at most a pool's worth of threads and sockets,
//! for at most the deadline each, and never a session a client who authenticates needs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default time a connection has to authenticate.
pub const AUTH_DEADLINE_DEFAULT: Duration = Duration::from_secs(10);
/// Default number of connections a door holds before they authenticate.
pub const UNAUTHENTICATED_DEFAULT: usize = 16;

/// The door a client came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// A spine TCP listener.
    Tcp,
    /// A spine Unix socket.
    Unix,
    /// The Flight SQL (gRPC) listener.
    FlightSql,
}

impl Door {
    /// The word logs and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Tcp => "tcp",
            Door::Unix => "unix",
            Door::FlightSql => "flight_sql",
        }
    }
}

/// A connection that has not authenticated, as its door's pool sees it.
pub trait Pending: Send + Sync {
    /// Whether it authenticated or ended: it then leaves the pool.
    fn is_settled(&self) -> bool;
    /// Ends it unless it authenticated meanwhile; whether it was ended.
    fn expire(&self) -> bool;
    /// The peer, as logs name it.
    fn peer(&self) -> String;
}

/// Connections a pool closed, and why.
pub type Closed = Vec<(Expiry, String)>;

/// The limits every door's pool keeps.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionLimits {
    /// How long a connection may take to authenticate.
    pub deadline: Duration,
    /// How many connections a door holds before they authenticate.
    pub unauthenticated_max: usize,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        AdmissionLimits {
            deadline: AUTH_DEADLINE_DEFAULT,
            unauthenticated_max: UNAUTHENTICATED_DEFAULT,
        }
    }
}

/// Why a pending connection was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// It did not authenticate within the deadline.
    Deadline,
    /// The pool was full and it was the oldest.
    Evicted,
}

impl Expiry {
    /// The word logs and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            Expiry::Deadline => "auth_deadline",
            Expiry::Evicted => "unauthenticated_evicted",
        }
    }
}

/// One door's connections that have not authenticated yet.
pub struct PendingPool {
    limits: AdmissionLimits,
    pending: Mutex<VecDeque<(Instant, Arc<dyn Pending>)>>,
}

impl PendingPool {
    /// An empty pool.
    pub fn new(limits: AdmissionLimits) -> PendingPool {
        PendingPool {
            limits,
            pending: Mutex::new(VecDeque::new()),
        }
    }

    /// Takes in a new connection, closing the oldest ones while the pool is full; what was closed.
    pub fn admit(&self, connection: Arc<dyn Pending>, now: Instant) -> Closed {
        let mut closed = self.sweep(now);
        let mut pending = self.lock();
        while pending.len() >= self.limits.unauthenticated_max.max(1) {
            let Some((_, oldest)) = pending.pop_front() else {
                break;
            };
            if oldest.expire() {
                closed.push((Expiry::Evicted, oldest.peer()));
            }
        }
        pending.push_back((now, connection));
        closed
    }

    /// Drops the settled connections and closes those past the deadline; what was closed.
    pub fn sweep(&self, now: Instant) -> Closed {
        let mut closed = Vec::new();
        let mut pending = self.lock();
        pending.retain(|(since, connection)| {
            if connection.is_settled() {
                return false;
            }
            if now.saturating_duration_since(*since) < self.limits.deadline {
                return true;
            }
            if connection.expire() {
                closed.push((Expiry::Deadline, connection.peer()));
            }
            false
        });
        closed
    }

    /// How many connections wait to authenticate.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Instant, Arc<dyn Pending>)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Fake {
        authenticated: AtomicBool,
        ended: AtomicBool,
    }

    impl Pending for Fake {
        fn is_settled(&self) -> bool {
            self.authenticated.load(Ordering::SeqCst) || self.ended.load(Ordering::SeqCst)
        }
        fn expire(&self) -> bool {
            !self.authenticated.load(Ordering::SeqCst) && !self.ended.swap(true, Ordering::SeqCst)
        }
        fn peer(&self) -> String {
            "fake".into()
        }
    }

    fn pool(max: usize) -> PendingPool {
        PendingPool::new(AdmissionLimits {
            deadline: Duration::from_secs(10),
            unauthenticated_max: max,
        })
    }

    #[test]
    fn a_full_pool_closes_its_oldest() {
        let pool = pool(2);
        let now = Instant::now();
        let connections: Vec<Arc<Fake>> = (0..3).map(|_| Arc::default()).collect();
        assert!(pool.admit(connections[0].clone(), now).is_empty());
        assert!(pool.admit(connections[1].clone(), now).is_empty());
        let closed = pool.admit(connections[2].clone(), now);
        assert_eq!(closed, [(Expiry::Evicted, "fake".to_string())]);
        assert!(connections[0].ended.load(Ordering::SeqCst));
        assert!(!connections[2].ended.load(Ordering::SeqCst));
        assert_eq!(pool.len(), 2);
    }

    #[test]
    fn the_deadline_closes_only_who_did_not_authenticate() {
        let pool = pool(8);
        let start = Instant::now();
        let (idle, authenticated) = (Arc::new(Fake::default()), Arc::new(Fake::default()));
        pool.admit(idle.clone(), start);
        pool.admit(authenticated.clone(), start);
        authenticated.authenticated.store(true, Ordering::SeqCst);
        assert!(pool.sweep(start + Duration::from_secs(9)).is_empty());
        assert_eq!(pool.len(), 1, "the authenticated one left the pool");
        let closed = pool.sweep(start + Duration::from_secs(10));
        assert_eq!(closed, [(Expiry::Deadline, "fake".to_string())]);
        assert!(idle.ended.load(Ordering::SeqCst));
        assert!(!authenticated.ended.load(Ordering::SeqCst));
        assert!(pool.is_empty());
    }
}
