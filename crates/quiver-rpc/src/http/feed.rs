//! The reply side of an HTTP client: response bodies queued as one byte stream, so the client
//! reads an HTTP reply with the same stream reader it reads a pipe with.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use quiver_transport::{Connection, TransportKind};

/// Response bodies in arrival order, each with how much of it has been read.
type Bodies = VecDeque<(Vec<u8>, usize)>;

/// Bytes of the responses not yet read, shared between the client and its connection's reader.
#[derive(Clone, Default)]
pub(crate) struct ReplyFeed {
    pending: Arc<Mutex<Bodies>>,
}

impl ReplyFeed {
    /// A feed and the connection whose reader drains it. Writing to the connection is refused:
    /// requests leave through the HTTP peer.
    pub fn connection(peer: &str) -> (ReplyFeed, Connection) {
        let feed = ReplyFeed::default();
        let connection = Connection::new(
            Box::new(feed.clone()),
            Box::new(NoWrites),
            TransportKind::Tcp,
            peer,
        );
        (feed, connection)
    }

    /// Queues a response body behind whatever is still unread.
    pub fn push(&self, body: Vec<u8>) {
        if !body.is_empty() {
            self.pending
                .lock()
                .expect("reply feed lock")
                .push_back((body, 0));
        }
    }
}

impl Read for ReplyFeed {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let mut pending = self.pending.lock().expect("reply feed lock");
        // Nothing queued reads as the end of input: a reply cut short is a truncated stream.
        let Some((body, read)) = pending.front_mut() else {
            return Ok(0);
        };
        let count = buffer.len().min(body.len() - *read);
        buffer[..count].copy_from_slice(&body[*read..*read + count]);
        *read += count;
        if *read == body.len() {
            pending.pop_front();
        }
        Ok(count)
    }
}

struct NoWrites;

impl Write for NoWrites {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "an HTTP client sends its requests through its HTTP peer",
        ))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
