//! A connection as the client and the server hold it, and the one way either reads the peer.
//!
//! While one side blocks waiting on the other, the shared-memory allocation table belongs to the
//! peer (see `quiver_shm::Segment::begin_peer_turn`): a free or allocation from here would race
//! the peer's. The peer's bytes are therefore private to this module and reachable only through
//! [`Link::wait_for_peer`], which hands the turn over before the read and takes it back after,
//! even when the read unwinds. A read site that skipped the bracket would not compile.

use std::io::{BufReader, Read, Write};

use quiver_shm::ShmError;
use quiver_transport::{Connection, TransportKind};
use quiver_wire::WireError;

use crate::shm_route::ShmRoute;

/// Why a connection, or the shared-memory segment beside it, failed. Each layer's error keeps
/// its own type, so a caller can tell a broken pipe from a corrupt allocation table.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The bytes or the transport failed.
    #[error("wire: {0}")]
    Wire(#[from] WireError),
    /// The segment refused an operation (bad pointer, corrupt table, failed mapping).
    #[error("shm: {0}")]
    Shm(#[from] ShmError),
}

impl ConnectionError {
    /// Whether the peer went away (EOF or broken pipe) rather than misbehaved.
    pub fn is_disconnect(&self) -> bool {
        matches!(self, ConnectionError::Wire(error) if error.is_disconnect())
    }
}

impl From<std::io::Error> for ConnectionError {
    fn from(error: std::io::Error) -> Self {
        ConnectionError::Wire(WireError::Io(error))
    }
}

/// The peer's input in the buffered form every wire reader takes.
pub(crate) type PeerInput = BufReader<Box<dyn Read + Send>>;

/// One connection whose input only [`Link::wait_for_peer`] reads.
pub(crate) struct Link {
    /// Private to this module: no read of the peer outside the bracket.
    connection: Connection,
}

impl Link {
    /// Takes over `connection`.
    pub fn new(connection: Connection) -> Link {
        Link { connection }
    }

    /// Unbuffered output to the peer; write whole messages.
    pub fn writer(&mut self) -> &mut (dyn Write + Send) {
        &mut *self.connection.writer
    }

    /// The transport underneath.
    pub fn kind(&self) -> TransportKind {
        self.connection.kind
    }

    /// A human-readable description of the peer, for errors and logs.
    pub fn peer(&self) -> &str {
        &self.connection.peer
    }

    /// Runs `read` (which blocks on the peer) inside the peer's turn on `shm`'s table.
    pub fn wait_for_peer<T>(
        &mut self,
        shm: Option<&mut ShmRoute>,
        read: impl FnOnce(&mut PeerInput) -> T,
    ) -> T {
        let _turn = PeerTurn::begin(shm);
        self.connection.read_next(read)
    }
}

/// The peer's turn on a segment's table, ended when dropped.
struct PeerTurn<'r> {
    route: Option<&'r mut ShmRoute>,
}

impl<'r> PeerTurn<'r> {
    fn begin(mut route: Option<&'r mut ShmRoute>) -> PeerTurn<'r> {
        if let Some(route) = route.as_deref_mut() {
            route.begin_peer_turn();
        }
        PeerTurn { route }
    }
}

impl Drop for PeerTurn<'_> {
    fn drop(&mut self) {
        if let Some(route) = self.route.as_deref_mut() {
            route.end_peer_turn();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use quiver_shm::{Segment, ShmConfig};
    use quiver_transport::pipe_pair;

    use super::*;

    #[test]
    fn the_peer_has_the_table_during_the_read_and_not_after_even_on_unwind() {
        let (client_end, mut server_end) = pipe_pair().unwrap();
        // A wait ends when the peer's bytes are there: the peer has sent some (left unread).
        server_end.writer.write_all(b"peer").unwrap();
        let mut link = Link::new(client_end);
        let segment = Segment::create(1 << 20).unwrap();
        let mut route = ShmRoute::new(segment.clone(), &ShmConfig::default());

        let during = link.wait_for_peer(Some(&mut route), |_| segment.is_peer_turn());
        assert!(during);
        assert!(!segment.is_peer_turn());

        let unwound = catch_unwind(AssertUnwindSafe(|| {
            link.wait_for_peer(Some(&mut route), |_| panic!("a read that unwinds"))
        }));
        assert!(unwound.is_err());
        assert!(!segment.is_peer_turn(), "the turn must come back on unwind");

        // Without a segment there is no turn to take.
        assert!(!link.wait_for_peer(None, |_| segment.is_peer_turn()));
    }
}
