//! The clients' TCP connections, watched: when one closes, the transactions begun on it are
//! rolled back at once. ADBC's Flight SQL driver does not end its transaction when a connection
//! closes (it begins the next one right after each commit or rollback), so without this a closed
//! client would hold a DuckDB session and its snapshot until the idle reaper came by.
//!
//! Until one of its calls passes the credentials check (`auth.rs` marks it), a connection waits in
//! the door's pool of unauthenticated connections (`crate::admission`): past the deadline, or as
//! the oldest of a full pool, it is shut down.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use prometheus_client::metrics::gauge::Gauge;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming};

use super::transactions::Transactions;
use crate::admission::{Door, Pending, PendingPool};
use crate::events::Field;
use crate::metrics::metrics;
use crate::server::{log_closed_unauthenticated, Shared};

/// One client connection, as admission sees it.
pub struct GrpcConnection {
    fd: RawFd,
    peer: Option<SocketAddr>,
    authenticated: AtomicBool,
    /// Set (under this lock) before the socket closes, so `expire` never touches a reused fd.
    ended: Mutex<bool>,
}

impl GrpcConnection {
    fn is_ended(&self) -> bool {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn peer_text(&self) -> String {
        self.peer
            .map_or_else(|| "unknown".into(), |peer| peer.to_string())
    }
}

impl Pending for GrpcConnection {
    fn is_settled(&self) -> bool {
        self.authenticated.load(Ordering::SeqCst) || self.is_ended()
    }

    fn expire(&self) -> bool {
        let ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if *ended || self.authenticated.load(Ordering::SeqCst) {
            return false;
        }
        // The reads of the connection end; hyper then drops it.
        // SAFETY: the descriptor is open: `ended` is set, under this lock, before it closes.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        true
    }

    fn peer(&self) -> String {
        self.peer_text()
    }
}

/// The door's open connections by peer address, and those waiting to authenticate.
pub struct Connections {
    shared: Arc<Shared>,
    by_peer: Mutex<HashMap<SocketAddr, Arc<GrpcConnection>>>,
    pending: PendingPool,
    waiting: Gauge,
}

impl Connections {
    /// None yet.
    pub fn new(shared: &Arc<Shared>) -> Connections {
        Connections {
            shared: Arc::clone(shared),
            by_peer: Mutex::new(HashMap::new()),
            pending: PendingPool::new(shared.admission),
            waiting: metrics().unauthenticated_at(Door::FlightSql.as_str()),
        }
    }

    fn accepted(&self, stream: &TcpStream) -> Arc<GrpcConnection> {
        let connection = Arc::new(GrpcConnection {
            fd: stream.as_raw_fd(),
            peer: stream.peer_addr().ok(),
            authenticated: AtomicBool::new(false),
            ended: Mutex::new(false),
        });
        if let Some(peer) = connection.peer {
            self.lock().insert(peer, Arc::clone(&connection));
        }
        let closed = self
            .pending
            .admit(Arc::clone(&connection) as _, Instant::now());
        log_closed_unauthenticated(&self.shared, Door::FlightSql, &closed);
        self.waiting.set(self.pending.len() as i64);
        connection
    }

    /// Marks the connection of `peer` authenticated (a call of it passed the check).
    pub fn authenticated(&self, peer: Option<SocketAddr>) {
        let Some(peer) = peer else {
            return;
        };
        let connection = self.lock().get(&peer).cloned();
        let Some(connection) = connection else {
            return;
        };
        if !connection.authenticated.swap(true, Ordering::SeqCst) {
            self.log("session_opened", &connection);
            metrics().sessions_opened_at(Door::FlightSql);
        }
    }

    fn ended(&self, connection: &Arc<GrpcConnection>) {
        *connection.ended.lock().unwrap_or_else(|e| e.into_inner()) = true;
        if let Some(peer) = connection.peer {
            let mut by_peer = self.lock();
            if by_peer
                .get(&peer)
                .is_some_and(|known| Arc::ptr_eq(known, connection))
            {
                by_peer.remove(&peer);
            }
        }
        if connection.authenticated.load(Ordering::SeqCst) {
            self.log("session_closed", connection);
        }
    }

    /// Shuts the connections that did not authenticate in time.
    pub fn sweep(&self) {
        let closed = self.pending.sweep(Instant::now());
        log_closed_unauthenticated(&self.shared, Door::FlightSql, &closed);
        self.waiting.set(self.pending.len() as i64);
    }

    fn log(&self, event: &str, connection: &GrpcConnection) {
        let peer = connection.peer_text();
        self.shared.events.emit(
            event,
            &[
                ("door", Field::Text(Door::FlightSql.as_str())),
                ("peer", Field::Text(&peer)),
            ],
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, Arc<GrpcConnection>>> {
        self.by_peer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A client's connection that tells the transactions and the door when it ends.
pub struct WatchedStream {
    inner: TcpStream,
    peer: Option<SocketAddr>,
    transactions: Arc<Transactions>,
    connection: Arc<GrpcConnection>,
    connections: Arc<Connections>,
}

/// The accepted connections of `incoming`, watched.
pub fn watched(
    incoming: TcpIncoming,
    transactions: Arc<Transactions>,
    connections: Arc<Connections>,
) -> impl Stream<Item = io::Result<WatchedStream>> {
    incoming.map(move |accepted| {
        accepted.map(|inner| WatchedStream {
            peer: inner.peer_addr().ok(),
            connection: connections.accepted(&inner),
            connections: Arc::clone(&connections),
            inner,
            transactions: Arc::clone(&transactions),
        })
    })
}

impl Drop for WatchedStream {
    fn drop(&mut self) {
        self.connections.ended(&self.connection);
        let Some(peer) = self.peer else {
            return;
        };
        let transactions = Arc::clone(&self.transactions);
        // Rolling back waits for DuckDB: not on the gRPC worker that drops the connection.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || transactions.forget_peer(peer));
            }
            Err(_) => transactions.forget_peer(peer),
        }
    }
}

impl Connected for WatchedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.inner.connect_info()
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
