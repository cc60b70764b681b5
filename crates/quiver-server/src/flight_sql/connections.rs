//! The clients' TCP connections, watched: when one closes, the transactions begun on it are
//! rolled back at once. ADBC's Flight SQL driver does not end its transaction when a connection
//! closes (it begins the next one right after each commit or rollback), so without this a closed
//! client would hold a DuckDB session and its snapshot until the idle reaper came by.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming};

use super::transactions::Transactions;

/// A client's connection that tells the transactions when it ends.
pub struct WatchedStream {
    inner: TcpStream,
    peer: Option<SocketAddr>,
    transactions: Arc<Transactions>,
}

/// The accepted connections of `incoming`, watched.
pub fn watched(
    incoming: TcpIncoming,
    transactions: Arc<Transactions>,
) -> impl Stream<Item = io::Result<WatchedStream>> {
    incoming.map(move |accepted| {
        accepted.map(|inner| WatchedStream {
            peer: inner.peer_addr().ok(),
            inner,
            transactions: Arc::clone(&transactions),
        })
    })
}

impl Drop for WatchedStream {
    fn drop(&mut self) {
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
