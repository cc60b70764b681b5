//! The memory keyed lookups may hold, all datasets' snapshots together: a snapshot's rows and
//! indexes are reserved before they are kept and released when the snapshot is dropped, so a
//! swap holds both only while the old one still serves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes held for keyed lookups.
#[derive(Debug, Default)]
pub struct Budget {
    used: AtomicU64,
}

impl Budget {
    /// Reserves `bytes` when they fit under `max`; `None` when they do not.
    pub fn reserve(self: &Arc<Self>, bytes: u64, max: u64) -> Option<Reservation> {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|total| *total <= max)
            })
            .ok()?;
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }
}

/// Bytes held until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_under_the_bound_and_are_released_when_dropped() {
        let budget = Arc::new(Budget::default());
        let first = budget.reserve(60, 100).expect("fits");
        assert!(budget.reserve(50, 100).is_none(), "over the bound");
        assert_eq!(budget.used(), 60);
        drop(first);
        assert_eq!(budget.used(), 0);
        let _second = budget.reserve(100, 100).expect("fits once released");
        assert!(budget.reserve(1, 0).is_none());
    }
}
