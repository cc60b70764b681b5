//! Memory for the buffers of a batch a call is about to send.
//!
//! On a connection with a shared-memory segment, a large buffer is carved from a region of the
//! segment with room left in front for the stream's framing, so the batch built over it is sent by
//! writing only that framing: no copy of the body (`ShmRoute::try_write`). Elsewhere the method
//! uses heap memory as usual and builds the same Arrow arrays.
//!
//! A client takes its connection's [`OutputSpace`] ([`crate::Client::output_space`]) to build
//! what it will send the same way, from any thread: a region is leased only while the
//! connection is not waiting on its peer.

use std::sync::Arc;

use quiver_shm::{OutputBuffer, OutputRegion, Segment};

/// Room kept in front of a buffer for the schema and batch messages. A batch whose framing does
/// not fit (a very wide schema) is copied instead, which is always correct.
const FRAMING_ROOM_BYTES: usize = 16 << 10;
/// Room after the buffer for the end-of-stream marker and padding.
const TAIL_ROOM_BYTES: usize = 64;

/// Where a connection's output buffers come from.
#[derive(Clone, Default)]
pub struct OutputSpace {
    segment: Option<Arc<Segment>>,
    min_batch_bytes: u64,
}

impl OutputSpace {
    pub(crate) fn shared(segment: Arc<Segment>, min_batch_bytes: u64) -> OutputSpace {
        OutputSpace {
            segment: Some(segment),
            min_batch_bytes,
        }
    }

    /// `len_bytes` to fill in the segment, when there is one, the buffer reaches the threshold for
    /// shared memory and a region is free.
    pub(crate) fn buffer(&self, len_bytes: usize) -> Option<OutputBuffer> {
        self.region(len_bytes)?.buffer(len_bytes)
    }

    /// A region with room for `len_bytes` of buffers after the framing, to carve a batch's
    /// buffers from ([`OutputRegion::buffer`] rounds each up to 64 bytes: count them so);
    /// `None` without a segment, below the threshold for shared memory, when no region is free,
    /// and while the connection waits on its peer (build on the heap then). A batch whose
    /// buffers all come from one region, and that nothing else holds when it is sent, crosses
    /// without a copy.
    pub fn region(&self, len_bytes: usize) -> Option<OutputRegion> {
        let segment = self.segment.as_ref()?;
        if len_bytes == 0 || (len_bytes as u64) < self.min_batch_bytes {
            return None;
        }
        let region_bytes = FRAMING_ROOM_BYTES + len_bytes.next_multiple_of(64) + TAIL_ROOM_BYTES;
        let mut region = segment.lease_region_unless_peer_turn(region_bytes as u64)?;
        region.reserve(FRAMING_ROOM_BYTES);
        Some(region)
    }
}
