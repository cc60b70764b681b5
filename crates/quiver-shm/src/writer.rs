//! `io::Write` into one allocated region, for serialising an IPC stream in place.

use std::io;

use crate::segment::Segment;

/// Sequential writer over one allocation; see [`Segment::region_writer`].
///
/// Bytes go straight into the shared mapping. The writer never crosses the allocation's end, so a
/// wrong size estimate surfaces as `ErrorKind::StorageFull` (fall back to sending inline), never
/// as a write into a neighbour's region.
pub struct RegionWriter<'a> {
    segment: &'a Segment,
    offset: u64,
    capacity_bytes: u64,
    written_bytes: u64,
}

impl<'a> RegionWriter<'a> {
    pub(crate) fn new(segment: &'a Segment, offset: u64, capacity_bytes: u64) -> RegionWriter<'a> {
        assert!(offset
            .checked_add(capacity_bytes)
            .is_some_and(|end| end <= segment.size_bytes()));
        RegionWriter {
            segment,
            offset,
            capacity_bytes,
            written_bytes: 0,
        }
    }

    /// Absolute offset of the region (`vgi_rpc.shm_offset`).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Allocated length of the region.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Bytes written so far (`vgi_rpc.shm_length` once the stream is complete).
    pub fn written_bytes(&self) -> u64 {
        self.written_bytes
    }
}

impl io::Write for RegionWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let remaining_bytes = self.capacity_bytes - self.written_bytes;
        if remaining_bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "shared-memory region of {} bytes is full",
                    self.capacity_bytes
                ),
            ));
        }
        let count = data.len().min(remaining_bytes as usize);
        let at = (self.offset + self.written_bytes) as usize;
        // SAFETY: [at, at + count) lies inside the allocation (asserted in `new`, bounded by
        // `remaining_bytes`), which the allocator handed out exclusively to this writer's user.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.segment.base().as_ptr().add(at),
                count,
            );
        }
        self.written_bytes += count as u64;
        Ok(count)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(()) // Stores to a MAP_SHARED mapping are visible to the peer without msync.
    }
}
