//! A port's connections: HTTP/1.1 through hyper, with hyper's header-read deadline (a request
//! head must arrive whole within it, and a kept-alive connection waits at most that long for the
//! next one), a bound on open connections overall and per peer, and a graceful stop.
//!
//! At either bound a new connection displaces the oldest one that has not yet sent a request (a
//! silent or trickling one): a flood of those can hold a port only until someone asks something,
//! so `/live` and `/ready` answer while the flood lasts. A peer whose connections have all sent
//! requests is refused a new one at its bound (closed at once); at the overall bound accepting
//! waits until a connection closes.

use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tower::ServiceExt;

use super::parse_errors::WithErrorBodies;

/// One port's bounds and deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections open at once.
    pub max: usize,
    /// Most connections open at once from one address.
    pub per_peer_max: usize,
    /// How long a request head may take to arrive, counted from when the connection starts
    /// waiting for it (at accept, and after each answer on a kept-alive connection).
    pub header_read_timeout: Duration,
}

/// What a port did with its connections, for `/status`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    pub open: AtomicU64,
    pub accepted: AtomicU64,
    /// Closed to make room for a newer connection (they had sent no request).
    pub displaced: AtomicU64,
    /// Closed at once: their peer was at its bound with every connection busy.
    pub refused: AtomicU64,
}

impl ConnectionStats {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "open": self.open.load(Ordering::Relaxed),
            "accepted": self.accepted.load(Ordering::Relaxed),
            "displaced": self.displaced.load(Ordering::Relaxed),
            "refused": self.refused.load(Ordering::Relaxed),
        })
    }
}

/// Serves `router` on `listener` until `stop` resolves; then stops accepting and gives open
/// connections until `grace` to finish what they were answering.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stats: Arc<ConnectionStats>,
    stop: impl Future<Output = ()>,
    grace: Duration,
) {
    let table = Arc::new(Table::new(limits, stats.clone()));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, or a connection reset before it was accepted: wait a
                // moment rather than spin.
                tracing::warn!(error = %error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = admit(&table, peer, &mut stop).await else {
            continue;
        };
        let connection = builder.serve_connection(
            TokioIo::new(WithErrorBodies::new(stream)),
            service(router.clone(), &slot),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            tokio::select! {
                _ = connection => {}
                () = slot.displaced.notified() => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace_s = grace.as_secs(), "connections outlived the grace");
    }
}

/// A slot for the connection from `peer`, waiting at the overall bound; `None`: refused, or the
/// stop came while waiting.
async fn admit(
    table: &Arc<Table>,
    peer: SocketAddr,
    stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Option<Slot> {
    loop {
        match table.admit(peer.ip().to_canonical()) {
            Admission::Open(slot) => return Some(slot),
            Admission::Refused => {
                table.stats.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            Admission::Full => {
                tokio::select! {
                    () = table.released.notified() => {}
                    () = stop.as_mut() => return None,
                }
            }
        }
    }
}

/// The router, marking the connection as having asked something when a request arrives.
fn service(
    router: Router,
    slot: &Slot,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future + Send,
> + Send
       + 'static {
    let asked = slot.asked.clone();
    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        asked.store(true, Ordering::Relaxed);
        router.clone().oneshot(request.map(axum::body::Body::new))
    })
}

/// The open connections, oldest first.
struct Table {
    limits: ConnectionLimits,
    stats: Arc<ConnectionStats>,
    open: Mutex<Open>,
    /// Notified each time a connection closes (the accept loop may be waiting at the bound).
    released: Notify,
}

#[derive(Default)]
struct Open {
    entries: VecDeque<Entry>,
    next_id: u64,
}

struct Entry {
    id: u64,
    peer: IpAddr,
    asked: Arc<AtomicBool>,
    displaced: Arc<Notify>,
}

enum Admission {
    Open(Slot),
    Refused,
    Full,
}

impl Table {
    fn new(limits: ConnectionLimits, stats: Arc<ConnectionStats>) -> Table {
        assert!(
            limits.max > 0 && limits.per_peer_max > 0,
            "a port admits connections"
        );
        Table {
            limits,
            stats,
            open: Mutex::new(Open::default()),
            released: Notify::new(),
        }
    }

    fn admit(self: &Arc<Table>, peer: IpAddr) -> Admission {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_peer = open.entries.iter().filter(|e| e.peer == peer).count();
        if from_peer >= self.limits.per_peer_max
            && !self.displace(&mut open, |entry| entry.peer == peer)
        {
            return Admission::Refused;
        }
        if open.entries.len() >= self.limits.max && !self.displace(&mut open, |_| true) {
            return Admission::Full;
        }
        let id = open.next_id;
        open.next_id += 1;
        let asked = Arc::new(AtomicBool::new(false));
        let displaced = Arc::new(Notify::new());
        open.entries.push_back(Entry {
            id,
            peer,
            asked: asked.clone(),
            displaced: displaced.clone(),
        });
        self.stats.open.fetch_add(1, Ordering::Relaxed);
        Admission::Open(Slot {
            id,
            table: self.clone(),
            asked,
            displaced,
        })
    }

    /// Closes the oldest connection matching `which` that has not asked anything; whether there
    /// was one.
    fn displace(&self, open: &mut Open, which: impl Fn(&Entry) -> bool) -> bool {
        let Some(index) = open
            .entries
            .iter()
            .position(|entry| which(entry) && !entry.asked.load(Ordering::Relaxed))
        else {
            return false;
        };
        if let Some(entry) = open.entries.remove(index) {
            entry.displaced.notify_one();
            self.stats.displaced.fetch_add(1, Ordering::Relaxed);
            self.stats.open.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    fn release(&self, id: u64) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = open.entries.iter().position(|entry| entry.id == id) {
            open.entries.remove(index);
            self.stats.open.fetch_sub(1, Ordering::Relaxed);
        }
        drop(open);
        self.released.notify_one();
    }
}

/// An admitted connection's place in the table, given back when its task ends.
struct Slot {
    id: u64,
    table: Arc<Table>,
    asked: Arc<AtomicBool>,
    displaced: Arc<Notify>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(max: usize, per_peer_max: usize) -> Arc<Table> {
        Arc::new(Table::new(
            ConnectionLimits {
                max,
                per_peer_max,
                header_read_timeout: Duration::from_secs(1),
            },
            Arc::default(),
        ))
    }

    fn open(admission: Admission) -> Slot {
        match admission {
            Admission::Open(slot) => slot,
            Admission::Refused => panic!("refused"),
            Admission::Full => panic!("full"),
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_peer_at_its_bound_displaces_its_oldest_silent_connection() {
        let table = table(100, 2);
        let first = open(table.admit(A));
        let second = open(table.admit(A));
        let _other_peer = open(table.admit(B));
        let third = open(table.admit(A));
        assert_eq!(table.stats.displaced.load(Ordering::Relaxed), 1);
        // The first was told to close; its slot is no longer counted.
        let open_ids: Vec<u64> = table
            .open
            .lock()
            .unwrap()
            .entries
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(open_ids, vec![second.id, 2, third.id]);
        drop(first);
        assert_eq!(table.stats.open.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_peer_whose_connections_all_asked_is_refused() {
        let table = table(100, 2);
        let first = open(table.admit(A));
        let second = open(table.admit(A));
        first.asked.store(true, Ordering::Relaxed);
        second.asked.store(true, Ordering::Relaxed);
        assert!(matches!(table.admit(A), Admission::Refused));
        assert!(matches!(table.admit(B), Admission::Open(_)));
    }

    #[test]
    fn the_overall_bound_displaces_any_silent_connection_else_waits() {
        let table = table(2, 10);
        let first = open(table.admit(A));
        let _second = open(table.admit(B));
        let _third = open(table.admit(B));
        assert_eq!(table.stats.displaced.load(Ordering::Relaxed), 1);
        drop(first);
        for entry in &table.open.lock().unwrap().entries {
            entry.asked.store(true, Ordering::Relaxed);
        }
        assert!(matches!(table.admit(A), Admission::Full));
    }
}
