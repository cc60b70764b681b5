//! Zero-copy buffers over regions: regions read from the peer, and regions filled to send.
//!
//! The buffer points straight into the mapping. Its lease keeps the segment mapped and, when the
//! last clone or slice of the buffer is dropped, frees the region in the shared table — the
//! reader frees, as vgi-rpc requires. Arrays decoded from the buffer by arrow-ipc share it, so the
//! region stays allocated exactly as long as any decoded column is alive.
//!
//! A region this side holds (one it read, or one it leased to fill) can also be *handed over*:
//! sent to the peer as it is, after which the peer frees it and dropping the buffers frees
//! nothing. That is how a batch built in the segment, or a batch passed back unchanged, crosses
//! without a copy.

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_buffer::{ArrowNativeType, Buffer};

use crate::error::{Result, ShmError};
use crate::segment::{Segment, TurnState};

/// Keeps the segment mapped while Arrow holds the bytes; frees the region on drop unless it was
/// handed to the peer.
pub(crate) struct RegionLease {
    segment: Arc<Segment>,
    offset: u64,
    handed_over: AtomicBool,
}

impl Drop for RegionLease {
    fn drop(&mut self) {
        if !self.handed_over.load(Ordering::Acquire) {
            self.segment.release_claim(self.offset);
        }
    }
}

/// A region this side holds, as found by [`Segment::held_region`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldRegion {
    /// Absolute offset of the allocation (`vgi_rpc.shm_offset` when sent).
    pub offset: u64,
    /// Allocated length.
    pub len_bytes: u64,
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
        let lease = self.lease(&mut self.lock_turn(), offset);
        // SAFETY: `address` points to `len_bytes` bytes inside the mapping; the lease keeps the
        // mapping alive (via the Arc<Segment>) and the region allocated until Arrow drops it.
        Ok(unsafe { Buffer::from_custom_allocation(address, len_bytes as usize, lease) })
    }

    /// Allocates `len_bytes` for this side to fill and send: an [`OutputRegion`] from which
    /// buffers are carved. Dropping every piece of it frees the region, unless it was handed over.
    /// `None` when the segment has no room (build the batch on the heap instead).
    pub fn lease_region(self: &Arc<Self>, len_bytes: u64) -> Option<OutputRegion> {
        let mut turn = self.own_turn("lease_region");
        self.lease_region_in_turn(&mut turn, len_bytes)
    }

    /// [`Segment::lease_region`] from a thread that may not know whose turn it is (one beside
    /// the thread that talks to the peer): `None` as well while the table is the peer's. The
    /// turn's lock is held throughout, so the peer's turn cannot begin halfway.
    pub fn lease_region_unless_peer_turn(self: &Arc<Self>, len_bytes: u64) -> Option<OutputRegion> {
        let mut turn = self.lock_turn();
        if turn.peer_turn {
            return None;
        }
        self.lease_region_in_turn(&mut turn, len_bytes)
    }

    fn lease_region_in_turn(
        self: &Arc<Self>,
        turn: &mut TurnState,
        len_bytes: u64,
    ) -> Option<OutputRegion> {
        let offset = self.allocate_in_turn(turn, len_bytes)?;
        let address = self
            .claim_in_turn(turn, offset, len_bytes)
            .expect("a region allocated a moment ago is claimable");
        Some(OutputRegion {
            lease: self.lease(turn, offset),
            address,
            len_bytes: len_bytes as usize,
            carved_bytes: 0,
        })
    }

    fn lease(self: &Arc<Self>, turn: &mut TurnState, offset: u64) -> Arc<RegionLease> {
        let lease = Arc::new(RegionLease {
            segment: Arc::clone(self),
            offset,
            handed_over: AtomicBool::new(false),
        });
        turn.leases.push((offset, Arc::downgrade(&lease)));
        lease
    }

    /// The region this side holds (claimed by a live buffer) whose allocation contains every
    /// address of `addresses`; `None` if they lie elsewhere or span several allocations.
    pub fn held_region(&self, addresses: Range<usize>) -> Option<HeldRegion> {
        let base = self.base().as_ptr() as usize;
        if addresses.start < base || addresses.end > base + self.size_bytes() as usize {
            return None;
        }
        let (start, end) = (
            (addresses.start - base) as u64,
            (addresses.end - base) as u64,
        );
        let turn = self.lock_turn();
        let allocations = self.table().allocations().ok()?;
        let allocation = allocations
            .iter()
            .find(|a| a.offset <= start && end <= a.offset + a.len_bytes)?;
        turn.claimed_offsets
            .contains(&allocation.offset)
            .then_some(HeldRegion {
                offset: allocation.offset,
                len_bytes: allocation.len_bytes,
            })
    }

    /// Copies `bytes` to `at` bytes into a region this side holds — a stream's framing around
    /// buffers already in place. The caller must not overwrite bytes a live buffer exposes.
    pub fn write_held(&self, region: HeldRegion, at: u64, bytes: &[u8]) -> Result<()> {
        let end = at.checked_add(bytes.len() as u64);
        if end.is_none_or(|end| end > region.len_bytes) {
            return Err(ShmError::LengthExceedsAllocation {
                offset: region.offset,
                len_bytes: at.saturating_add(bytes.len() as u64),
                allocated_len_bytes: region.len_bytes,
            });
        }
        let _turn = self.own_turn("write_held");
        // SAFETY: `region` lies inside the mapping (it came from the table), `[at, at + len)` inside
        // it (checked), and this side holds it, so the peer does not touch it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.base().as_ptr().add((region.offset + at) as usize),
                bytes.len(),
            );
        }
        Ok(())
    }

    /// Gives a held region to the peer, which will read and free it: buffers over it stay valid
    /// to drop but free nothing. Call in this side's turn, just before sending the pointer.
    pub fn hand_over(&self, region: HeldRegion) -> Result<()> {
        let mut turn = self.own_turn("hand_over");
        let position = turn
            .leases
            .iter()
            .position(|(offset, _)| *offset == region.offset);
        let lease = position.and_then(|p| turn.leases.swap_remove(p).1.upgrade());
        let Some(lease) = lease else {
            return Err(ShmError::NoSuchAllocation {
                offset: region.offset,
            });
        };
        lease.handed_over.store(true, Ordering::Release);
        turn.claimed_offsets
            .retain(|offset| *offset != region.offset);
        Ok(())
    }
}

/// A region leased to be filled: carve buffers from it in order, fill them, build arrays over
/// them. A batch whose buffers all lie in one region goes to the peer without a copy.
pub struct OutputRegion {
    lease: Arc<RegionLease>,
    address: NonNull<u8>,
    len_bytes: usize,
    carved_bytes: usize,
}

// SAFETY: the region is exclusively this side's until handed over; the lease is Send + Sync.
unsafe impl Send for OutputRegion {}

impl OutputRegion {
    /// Absolute offset of the region in the segment.
    pub fn offset(&self) -> u64 {
        self.lease.offset
    }

    /// Skips `len_bytes` (rounded up to 64) without handing them out: room for framing.
    pub fn reserve(&mut self, len_bytes: usize) -> bool {
        self.carve(len_bytes).is_some()
    }

    /// The next `len_bytes` of the region (64-byte aligned), or `None` when it is used up.
    pub fn buffer(&mut self, len_bytes: usize) -> Option<OutputBuffer> {
        let at = self.carve(len_bytes)?;
        Some(OutputBuffer {
            lease: Arc::clone(&self.lease),
            // SAFETY: `at + len_bytes <= self.len_bytes`, inside the region.
            address: unsafe { NonNull::new_unchecked(self.address.as_ptr().add(at)) },
            len_bytes,
        })
    }

    fn carve(&mut self, len_bytes: usize) -> Option<usize> {
        let at = self.carved_bytes;
        let end = at.checked_add(len_bytes)?.next_multiple_of(64);
        (end <= self.len_bytes).then(|| {
            self.carved_bytes = end;
            at
        })
    }
}

/// A piece of an [`OutputRegion`], writable until it becomes an Arrow `Buffer`.
pub struct OutputBuffer {
    lease: Arc<RegionLease>,
    address: NonNull<u8>,
    len_bytes: usize,
}

// SAFETY: the bytes are this buffer's alone (carved disjointly); the lease is Send + Sync.
unsafe impl Send for OutputBuffer {}

impl OutputBuffer {
    /// The bytes to fill (their initial contents are unspecified).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: carved disjointly from a region this side holds, inside the mapping the lease
        // keeps alive; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.address.as_ptr(), self.len_bytes) }
    }

    /// The bytes as values of `T` (a length that is not a multiple of `T`'s size leaves the tail
    /// out).
    pub fn typed_data_mut<T: ArrowNativeType>(&mut self) -> &mut [T] {
        // SAFETY: every bit pattern is a valid ArrowNativeType; `align_to_mut` handles alignment.
        let (head, values, _) = unsafe { self.as_mut_slice().align_to_mut::<T>() };
        assert!(head.is_empty(), "output buffers are 64-byte aligned");
        values
    }

    /// Freezes the bytes into a `Buffer` that shares the region's lease.
    pub fn into_buffer(self) -> Buffer {
        // SAFETY: as in `as_mut_slice`; the lease keeps mapping and region alive.
        unsafe { Buffer::from_custom_allocation(self.address, self.len_bytes, self.lease) }
    }
}
