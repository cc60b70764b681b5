//! Memory for large message bodies read from a stream, used again once Arrow lets go of it.
//!
//! A reader that keeps a batch while the next one arrives (Python's and Node's loops hold the
//! previous batch until the next is assigned) frees each body only after the next is allocated,
//! and the allocator then returns the freed pages to the kernel at the top of its heap: every
//! body is read into pages mapped afresh, which the kernel's copy out of the socket faults in
//! one by one (about 1,500 faults per 10M-row query over TCP in the Python module, none with
//! the pages kept). So a few bodies released lately are kept, within a bound, and handed to the
//! next read whose length they fit.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use arrow_buffer::Buffer;

/// Bodies smaller than this come from the allocator as usual (its own free lists serve them).
pub(crate) const POOLED_MIN_BYTES: usize = 64 << 10;
/// Most bytes the pool keeps, over all its buffers.
const POOL_BYTES_MAX: usize = 64 << 20;
/// Most buffers the pool keeps.
const POOL_BUFFERS_MAX: usize = 8;

/// Released bodies, emptied, waiting for a read; shared by every stream of the process.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn pool() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An empty vector to read a body of `len` bytes into: a kept one whose capacity fits it (at
/// most twice as large, so a small body does not hold a large buffer), else a new one.
pub(crate) fn take(len: usize) -> Vec<u8> {
    if len < POOLED_MIN_BYTES {
        return Vec::new();
    }
    let mut pool = pool();
    let fitting = (0..pool.len())
        .filter(|&i| (len..=len.saturating_mul(2)).contains(&pool[i].capacity()))
        .min_by_key(|&i| pool[i].capacity());
    fitting.map_or_else(Vec::new, |i| pool.swap_remove(i))
}

/// `bytes` as a `Buffer` that gives its memory back to the pool when Arrow drops it.
pub(crate) fn into_buffer(bytes: Vec<u8>) -> Buffer {
    if bytes.capacity() < POOLED_MIN_BYTES {
        return Buffer::from_vec(bytes);
    }
    let len = bytes.len();
    let start = NonNull::new(bytes.as_ptr().cast_mut()).expect("a vector's pointer is not null");
    // SAFETY: `start` points to `len` initialised bytes of the vector's heap allocation, which
    // moving the vector into its owner does not move; the owner lives as long as the buffer.
    unsafe { Buffer::from_custom_allocation(start, len, Arc::new(Pooled(bytes))) }
}

/// A body's memory, back to the pool when the last buffer over it is dropped.
struct Pooled(Vec<u8>);

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.0);
        bytes.clear();
        let mut pool = pool();
        let held: usize = pool.iter().map(Vec::capacity).sum();
        if pool.len() < POOL_BUFFERS_MAX && held + bytes.capacity() <= POOL_BYTES_MAX {
            pool.push(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is process-wide: tests that look at it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn filled(len: usize) -> Buffer {
        let mut bytes = take(len);
        bytes.resize(len, 7);
        into_buffer(bytes)
    }

    #[test]
    fn a_released_body_is_read_into_again() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        pool().clear();
        let first = filled(3 << 20);
        let address = first.as_ptr();
        drop(first);
        let second = filled((3 << 20) - 100);
        assert_eq!(second.as_ptr(), address, "the same memory, read into again");
        assert!(second.iter().all(|b| *b == 7));
        // Held by a live buffer, the memory is not handed out twice.
        let third = filled(3 << 20);
        assert_ne!(third.as_ptr(), second.as_ptr());
    }

    #[test]
    fn the_pool_stays_within_its_bounds() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        pool().clear();
        let bodies: Vec<Buffer> = (0..3 * POOL_BUFFERS_MAX)
            .map(|_| filled(12 << 20))
            .collect();
        drop(bodies);
        let kept = pool();
        assert!(kept.len() <= POOL_BUFFERS_MAX);
        assert!(kept.iter().map(Vec::capacity).sum::<usize>() <= POOL_BYTES_MAX);
        drop(kept);
        // Small bodies and much smaller reads do not come from it.
        assert_eq!(take(1024).capacity(), 0);
        assert_eq!(
            take(POOLED_MIN_BYTES).capacity(),
            0,
            "12 MiB is too large for 64 KiB"
        );
        pool().clear();
    }
}
