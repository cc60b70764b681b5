//! A process-wide bound on the bytes of the segments this process creates.
//!
//! Segments are sparse (pages are committed only when a region is allocated for writing, see
//! `segment.rs`), so a segment costs what its in-flight batches use. A process with many
//! connections can still commit up to the sum of its segment sizes; the budget bounds that sum.
//! Creating a segment that would exceed it fails with [`ShmError::BudgetExceeded`], and the RPC
//! client then runs that connection inline.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Result, ShmError};

/// Bytes of segments currently created by this process (mapped, whether or not still named).
static RESERVED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Proof that `size_bytes` are counted against the budget; gives them back when dropped.
#[derive(Debug)]
pub(crate) struct BudgetReservation {
    size_bytes: u64,
}

/// Counts `size_bytes` against a budget of `budget_bytes`, or fails without counting anything.
pub(crate) fn reserve(size_bytes: u64, budget_bytes: u64) -> Result<BudgetReservation> {
    let reserved = RESERVED_BYTES.fetch_update(Ordering::AcqRel, Ordering::Acquire, |reserved| {
        reserved
            .checked_add(size_bytes)
            .filter(|total| *total <= budget_bytes)
    });
    match reserved {
        Ok(_) => Ok(BudgetReservation { size_bytes }),
        Err(reserved_bytes) => Err(ShmError::BudgetExceeded {
            size_bytes,
            reserved_bytes,
            budget_bytes,
        }),
    }
}

impl Drop for BudgetReservation {
    fn drop(&mut self) {
        let previous = RESERVED_BYTES.fetch_sub(self.size_bytes, Ordering::AcqRel);
        assert!(
            previous >= self.size_bytes,
            "budget released more than reserved"
        );
    }
}

/// Bytes of segments this process has created and not yet dropped.
pub fn reserved_segment_bytes() -> u64 {
    RESERVED_BYTES.load(Ordering::Acquire)
}
