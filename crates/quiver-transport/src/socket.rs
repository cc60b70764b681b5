//! Unix-domain and TCP sockets: listeners for servers, connectors for clients.

use std::io;
use std::net::{TcpListener as StdTcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener as StdUnixListener, UnixStream};
use std::path::{Path, PathBuf};

use quiver_process::cleanup;

use crate::connection::{Connection, TransportKind};

/// Connects to a Unix socket.
pub fn connect_unix(path: &Path) -> io::Result<Connection> {
    let stream = UnixStream::connect(path)?;
    unix_connection(stream, path.display().to_string())
}

/// Connects to a TCP address, with Nagle off (messages are written whole).
pub fn connect_tcp(address: impl ToSocketAddrs) -> io::Result<Connection> {
    let stream = TcpStream::connect(address)?;
    tcp_connection(stream)
}

fn unix_connection(stream: UnixStream, peer: String) -> io::Result<Connection> {
    let reader = stream.try_clone()?;
    let fd = reader.as_raw_fd();
    Ok(Connection::new(
        Box::new(reader),
        Box::new(stream),
        TransportKind::Unix,
        peer,
    )
    .spinning(fd))
}

fn tcp_connection(stream: TcpStream) -> io::Result<Connection> {
    stream.set_nodelay(true)?;
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "tcp".into());
    let reader = stream.try_clone()?;
    let fd = reader.as_raw_fd();
    Ok(Connection::new(Box::new(reader), Box::new(stream), TransportKind::Tcp, peer).spinning(fd))
}

/// A listening Unix socket that removes its path when dropped, and (through the process-wide
/// cleanup registry of `quiver-process`) when the process ends by `SIGTERM`/`SIGINT` or `exit`.
pub struct UnixListener {
    listener: StdUnixListener,
    path: PathBuf,
    cleanup: Option<cleanup::Registration>,
}

impl UnixListener {
    /// Binds `path` (made absolute), replacing a stale socket file left there.
    pub fn bind(path: &Path) -> io::Result<Self> {
        let path = std::path::absolute(path)?;
        if path.exists() && UnixStream::connect(&path).is_err() {
            std::fs::remove_file(&path)?;
        }
        let listener = StdUnixListener::bind(&path)?;
        let cleanup = match cleanup::register_file(&path) {
            Ok(registration) => Some(registration),
            Err(error) => {
                drop(listener);
                let _ = std::fs::remove_file(&path);
                return Err(io::Error::other(format!("{}: {error}", path.display())));
            }
        };
        Ok(Self {
            listener,
            path,
            cleanup,
        })
    }

    /// The absolute path bound.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<Connection> {
        let (stream, _) = self.listener.accept()?;
        unix_connection(stream, format!("{} client", self.path.display()))
    }

    /// The underlying listener (for non-blocking accept loops).
    pub fn inner(&self) -> &StdUnixListener {
        &self.listener
    }
}

impl Drop for UnixListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(registration) = self.cleanup.take() {
            cleanup::unregister(registration);
        }
    }
}

/// A listening TCP socket.
pub struct TcpListener {
    listener: StdTcpListener,
}

impl TcpListener {
    /// Binds `address` (use port 0 for any free port).
    pub fn bind(address: impl ToSocketAddrs) -> io::Result<Self> {
        Ok(Self {
            listener: StdTcpListener::bind(address)?,
        })
    }

    /// The bound port.
    pub fn port(&self) -> io::Result<u16> {
        Ok(self.listener.local_addr()?.port())
    }

    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<Connection> {
        let (stream, _) = self.listener.accept()?;
        tcp_connection(stream)
    }

    /// The underlying listener.
    pub fn inner(&self) -> &StdTcpListener {
        &self.listener
    }
}
