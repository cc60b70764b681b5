//! Zero-copy reads: an allocated region as an `arrow_buffer::Buffer`.
//!
//! The buffer points straight into the mapping. Its owner object keeps the segment mapped and,
//! when the last clone or slice of the buffer is dropped, frees the region in the shared table —
//! the reader frees, as vgi-rpc requires. Arrays decoded from the buffer by arrow-ipc share it, so
//! the region stays allocated exactly as long as any decoded column is alive.

use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;

use crate::error::Result;
use crate::segment::Segment;

/// Keeps the segment mapped while Arrow holds the bytes; frees the region on drop.
struct RegionLease {
    segment: Arc<Segment>,
    offset: u64,
}

impl Drop for RegionLease {
    fn drop(&mut self) {
        self.segment.release_claim(self.offset);
    }
}

impl Segment {
    /// Wraps `len_bytes` at the start of the allocation at `offset` (as named by a pointer batch)
    /// in a `Buffer` without copying, and transfers the duty to free the region to that buffer.
    ///
    /// Fails if no allocation starts at `offset`, if `len_bytes` exceeds it, or if a buffer already
    /// claims it. While claimed, `free(offset, ..)` is refused. If the last buffer is dropped during
    /// the peer's turn, the free waits for [`Segment::end_peer_turn`].
    pub fn claim_buffer(self: &Arc<Self>, offset: u64, len_bytes: u64) -> Result<Buffer> {
        let address: NonNull<u8> = self.claim(offset, len_bytes)?;
        let lease = Arc::new(RegionLease {
            segment: Arc::clone(self),
            offset,
        });
        // SAFETY: `address` points to `len_bytes` bytes inside the mapping; the lease keeps the
        // mapping alive (via the Arc<Segment>) and the region allocated until Arrow drops it.
        Ok(unsafe { Buffer::from_custom_allocation(address, len_bytes as usize, lease) })
    }
}
