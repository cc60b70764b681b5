//! A TCP listener with a bound on open connections: at the bound, accepting waits (new
//! connections queue in the kernel's backlog) until one closes.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Most connections the public port holds open at once.
pub const CONNECTIONS_MAX: usize = 8192;
/// Most connections the admin port holds open at once (probes, scrapes and operators).
pub const ADMIN_CONNECTIONS_MAX: usize = 256;

pub struct BoundedListener {
    inner: TcpListener,
    permits: Arc<Semaphore>,
}

impl BoundedListener {
    pub fn new(inner: TcpListener, connections_max: usize) -> BoundedListener {
        assert!(connections_max > 0, "a listener admits connections");
        BoundedListener {
            inner,
            permits: Arc::new(Semaphore::new(connections_max)),
        }
    }

    /// Connections open now.
    pub fn open(&self, connections_max: usize) -> usize {
        connections_max - self.permits.available_permits()
    }
}

impl Listener for BoundedListener {
    type Io = BoundedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (BoundedStream, SocketAddr) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the listener's semaphore is never closed");
        let (stream, address) = Listener::accept(&mut self.inner).await;
        (
            BoundedStream {
                stream,
                _permit: permit,
            },
            address,
        )
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// An accepted connection; its slot is given back when it is dropped.
pub struct BoundedStream {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for BoundedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(context, buffer)
    }
}

impl AsyncWrite for BoundedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(context, bytes)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_listener_waits_for_a_connection_to_close() {
        let inner = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = inner.local_addr().unwrap();
        let mut listener = BoundedListener::new(inner, 1);
        let _first_client = TcpStream::connect(address).await.unwrap();
        let (first, _) = listener.accept().await;
        assert_eq!(listener.open(1), 1);
        let _second_client = TcpStream::connect(address).await.unwrap();
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(100), listener.accept()).await;
        assert!(
            waiting.is_err(),
            "no second connection while the first is open"
        );
        drop(first);
        let (second, _) =
            tokio::time::timeout(std::time::Duration::from_secs(60), listener.accept())
                .await
                .expect("the closed connection's slot admits the next");
        assert!(second.stream.peer_addr().is_ok());
    }
}
