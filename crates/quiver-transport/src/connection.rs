use std::io::{BufReader, Read, Write};
use std::os::fd::RawFd;

use crate::spin::Spinner;

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
    /// Spins for the peer before a read that would block (see `crate::spin`).
    spinner: Option<Spinner>,
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
            spinner: None,
        }
    }

    /// Spins for the peer on `fd` (the reader's descriptor) before a read that would block.
    /// The reader itself stays the plain descriptor, whose reads into fresh memory the
    /// standard library makes without zero-filling it first.
    pub(crate) fn spinning(mut self, fd: RawFd) -> Self {
        self.spinner = Some(Spinner::new(fd));
        self
    }

    /// Runs `read`, which reads the peer's next message, once its first bytes are there:
    /// spinning for them while that pays, else asleep (see `crate::spin`).
    pub fn read_next<T>(
        &mut self,
        read: impl FnOnce(&mut BufReader<Box<dyn Read + Send>>) -> T,
    ) -> T {
        if let Some(spinner) = self.spinner.as_mut() {
            if self.reader.buffer().is_empty() && !spinner.spin() {
                spinner.wait();
            }
        }
        read(&mut self.reader)
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
