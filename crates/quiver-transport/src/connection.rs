use std::io::{BufReader, Read, Write};

/// Capacity of a connection's read buffer. Reads larger than this bypass it.
pub const READ_BUFFER_BYTES: usize = 256 * 1024;

/// Which transport a connection runs over; shared memory is negotiated only over
/// transports whose peer is on the same machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// Two OS pipes inside one process.
    Pipe,
    /// A child process's (or our own) stdin and stdout.
    Stdio,
    /// A Unix domain socket.
    Unix,
    /// A TCP socket.
    Tcp,
}

impl TransportKind {
    /// Whether both peers necessarily share a machine (and so can share memory).
    pub fn is_local(self) -> bool {
        !matches!(self, TransportKind::Tcp)
    }

    /// A short name for logs.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Pipe => "pipe",
            TransportKind::Stdio => "stdio",
            TransportKind::Unix => "unix",
            TransportKind::Tcp => "tcp",
        }
    }
}

/// One end of a duplex byte stream.
pub struct Connection {
    /// Buffered input from the peer.
    pub reader: BufReader<Box<dyn Read + Send>>,
    /// Unbuffered output to the peer; write whole messages.
    pub writer: Box<dyn Write + Send>,
    /// The transport underneath.
    pub kind: TransportKind,
    /// A human-readable description of the peer, for errors and logs.
    pub peer: String,
}

impl Connection {
    /// Wraps a reader and a writer.
    pub fn new(
        reader: Box<dyn Read + Send>,
        writer: Box<dyn Write + Send>,
        kind: TransportKind,
        peer: impl Into<String>,
    ) -> Self {
        Self {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            writer,
            kind,
            peer: peer.into(),
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("kind", &self.kind)
            .field("peer", &self.peer)
            .finish()
    }
}
