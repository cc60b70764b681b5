//! The allocation table in the segment header: first-fit allocate, free by offset.
//!
//! The table lists *occupied* regions only, sorted by offset; free space is the gaps between them,
//! so freeing needs no coalescing step. vgi-rpc's allocator is the same algorithm, and either side
//! may allocate in, or free from, a table the other side wrote.
//!
//! There is no cross-process lock: vgi-rpc relies on the lockstep protocol (only the side whose
//! turn it is touches the table). The table is nevertheless written by another process, so every
//! operation first validates it, and never trusts a count or offset to stay in bounds.

use std::ptr;

use crate::error::{Result, ShmError};
use crate::layout::{
    align_up, ALLOCATIONS_MAX, COUNT_AT, DATA_SIZE_AT, ENTRIES_AT, ENTRY_SIZE_BYTES,
    HEADER_SIZE_BYTES, MAGIC, MAGIC_AT, PADDING_AT, SEGMENT_SIZE_MAX_BYTES, VERSION, VERSION_AT,
};

/// One occupied region: absolute offset and allocated length, as stored in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The region's first byte, from byte 0 of the segment.
    pub offset: u64,
    /// The bytes allocated to it.
    pub len_bytes: u64,
}

/// A view of the header of a mapped segment. Copyable; owns nothing.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    base: *mut u8,
    size_bytes: u64,
}

impl Table {
    /// # Safety
    /// `base` must be valid for reads and writes of `size_bytes` bytes for as long as the view is
    /// used, and `size_bytes` must exceed the header size.
    pub(crate) unsafe fn new(base: *mut u8, size_bytes: u64) -> Table {
        assert!(!base.is_null());
        assert!(size_bytes > HEADER_SIZE_BYTES);
        assert!(size_bytes <= SEGMENT_SIZE_MAX_BYTES);
        Table { base, size_bytes }
    }

    fn read<const N: usize>(&self, at: usize) -> [u8; N] {
        assert!(at + N <= HEADER_SIZE_BYTES as usize);
        // SAFETY: in bounds of the header per the constructor's contract.
        unsafe { ptr::read_unaligned(self.base.add(at) as *const [u8; N]) }
    }

    fn write<const N: usize>(&self, at: usize, bytes: [u8; N]) {
        assert!(at + N <= HEADER_SIZE_BYTES as usize);
        // SAFETY: in bounds of the header per the constructor's contract.
        unsafe { ptr::write_unaligned(self.base.add(at) as *mut [u8; N], bytes) }
    }

    /// Writes a fresh header with an empty table (the owner does this once, after `ftruncate`).
    pub(crate) fn initialize(&self) {
        self.write(MAGIC_AT, MAGIC);
        self.write(VERSION_AT, VERSION.to_le_bytes());
        self.write(
            DATA_SIZE_AT,
            (self.size_bytes - HEADER_SIZE_BYTES).to_le_bytes(),
        );
        self.write(COUNT_AT, 0u32.to_le_bytes());
        self.write(PADDING_AT, 0u32.to_le_bytes());
    }

    pub(crate) fn magic(&self) -> [u8; 4] {
        self.read(MAGIC_AT)
    }

    pub(crate) fn version(&self) -> u32 {
        u32::from_le_bytes(self.read(VERSION_AT))
    }

    pub(crate) fn data_size_bytes(&self) -> u64 {
        u64::from_le_bytes(self.read(DATA_SIZE_AT))
    }

    /// The count as stored; may exceed `ALLOCATIONS_MAX` if a peer corrupted the header.
    pub(crate) fn count_raw(&self) -> u32 {
        u32::from_le_bytes(self.read(COUNT_AT))
    }

    fn set_count(&self, count: usize) {
        assert!(count <= ALLOCATIONS_MAX);
        self.write(COUNT_AT, (count as u32).to_le_bytes());
    }

    fn entry(&self, index: usize) -> Allocation {
        assert!(index < ALLOCATIONS_MAX);
        let at = ENTRIES_AT + index * ENTRY_SIZE_BYTES;
        Allocation {
            offset: u64::from_le_bytes(self.read(at)),
            len_bytes: u64::from_le_bytes(self.read(at + 8)),
        }
    }

    fn set_entry(&self, index: usize, allocation: Allocation) {
        assert!(index < ALLOCATIONS_MAX);
        let at = ENTRIES_AT + index * ENTRY_SIZE_BYTES;
        self.write(at, allocation.offset.to_le_bytes());
        self.write(at + 8, allocation.len_bytes.to_le_bytes());
    }

    /// Moves entries `[from, count)` by one slot (up to open a hole, down to close one).
    fn shift_entries(&self, from: usize, count: usize, up: bool) {
        assert!(from <= count);
        let moved_bytes = (count - from) * ENTRY_SIZE_BYTES;
        let (src, dst) = if up {
            assert!(count < ALLOCATIONS_MAX);
            (from, from + 1)
        } else {
            assert!(from >= 1);
            (from, from - 1)
        };
        // SAFETY: both ranges lie inside the entry array (asserted above), `copy` allows overlap.
        unsafe {
            ptr::copy(
                self.base.add(ENTRIES_AT + src * ENTRY_SIZE_BYTES),
                self.base.add(ENTRIES_AT + dst * ENTRY_SIZE_BYTES),
                moved_bytes,
            );
        }
    }

    /// Checks count, order, and bounds; returns the number of entries.
    pub(crate) fn validate(&self) -> Result<usize> {
        let count = self.count_raw() as usize;
        if count > ALLOCATIONS_MAX {
            return Err(corrupt(format!(
                "count {count} exceeds the maximum {ALLOCATIONS_MAX}"
            )));
        }
        let mut previous_end = HEADER_SIZE_BYTES;
        for index in 0..count {
            let Allocation { offset, len_bytes } = self.entry(index);
            if len_bytes == 0 {
                return Err(corrupt(format!(
                    "entry {index} at offset {offset} has length 0"
                )));
            }
            if offset < previous_end {
                return Err(corrupt(format!(
                    "entry {index} at offset {offset} starts before the previous end {previous_end}"
                )));
            }
            let end = offset
                .checked_add(len_bytes)
                .filter(|end| *end <= self.size_bytes);
            let Some(end) = end else {
                return Err(corrupt(format!(
                    "entry {index} offset={offset} len={len_bytes} ends past the segment size {}",
                    self.size_bytes
                )));
            };
            previous_end = end;
        }
        Ok(count)
    }

    /// Snapshot of all entries (validated).
    pub(crate) fn allocations(&self) -> Result<Vec<Allocation>> {
        let count = self.validate()?;
        Ok((0..count).map(|index| self.entry(index)).collect())
    }

    /// First fit with 64-byte aligned offsets. `None` when no gap fits, the table is full, or the
    /// table is corrupt (falling back to the inline path is always correct).
    pub(crate) fn allocate(&self, len_bytes: u64) -> Option<u64> {
        assert!(len_bytes > 0);
        let count = self.validate().ok()?;
        if count == ALLOCATIONS_MAX {
            return None;
        }
        if len_bytes > self.size_bytes - HEADER_SIZE_BYTES {
            return None;
        }
        let mut gap_start = HEADER_SIZE_BYTES;
        for index in 0..=count {
            let gap_end = if index < count {
                self.entry(index).offset
            } else {
                self.size_bytes
            };
            let candidate = align_up(gap_start);
            if candidate <= gap_end && gap_end - candidate >= len_bytes {
                self.shift_entries(index, count, true);
                self.set_entry(
                    index,
                    Allocation {
                        offset: candidate,
                        len_bytes,
                    },
                );
                self.set_count(count + 1);
                return Some(candidate);
            }
            if index < count {
                let entry = self.entry(index);
                gap_start = entry.offset + entry.len_bytes; // Cannot overflow: validated.
            }
        }
        None
    }

    /// The allocation that starts exactly at `offset`, with its index.
    pub(crate) fn find(&self, offset: u64) -> Result<(usize, Allocation)> {
        let count = self.validate()?;
        (0..count)
            .map(|index| (index, self.entry(index)))
            .find(|(_, entry)| entry.offset == offset)
            .ok_or(ShmError::NoSuchAllocation { offset })
    }

    /// Removes the allocation starting at `offset`; `len_bytes` may be shorter than the allocated
    /// length (vgi-rpc allocates an estimate and reports the bytes actually written).
    pub(crate) fn free(&self, offset: u64, len_bytes: u64) -> Result<()> {
        let (index, entry) = self.find(offset)?;
        if len_bytes > entry.len_bytes {
            return Err(ShmError::LengthExceedsAllocation {
                offset,
                len_bytes,
                allocated_len_bytes: entry.len_bytes,
            });
        }
        let count = self.count_raw() as usize;
        self.shift_entries(index + 1, count, false);
        self.set_count(count - 1);
        Ok(())
    }
}

fn corrupt(reason: String) -> ShmError {
    ShmError::CorruptTable { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE_BYTES: u64 = HEADER_SIZE_BYTES + 4096;

    fn with_table(size_bytes: u64, test: impl FnOnce(Table)) {
        let mut memory = vec![0u64; (size_bytes / 8) as usize];
        // SAFETY: `memory` outlives `table` and spans `size_bytes` bytes.
        let table = unsafe { Table::new(memory.as_mut_ptr() as *mut u8, size_bytes) };
        table.initialize();
        test(table);
    }

    #[test]
    fn header_bytes_match_vgi_rpc_struct_layout() {
        let mut memory = vec![0u64; (SIZE_BYTES / 8) as usize];
        let base = memory.as_mut_ptr() as *mut u8;
        // SAFETY: as in `with_table`.
        let table = unsafe { Table::new(base, SIZE_BYTES) };
        table.initialize();
        assert_eq!(table.allocate(10), Some(HEADER_SIZE_BYTES));
        // SAFETY: reading the header we just wrote.
        let header = unsafe { std::slice::from_raw_parts(base, 40) };
        let mut expected = Vec::new();
        expected.extend_from_slice(b"VGIS");
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&4096u64.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&0u32.to_le_bytes());
        expected.extend_from_slice(&HEADER_SIZE_BYTES.to_le_bytes());
        expected.extend_from_slice(&10u64.to_le_bytes());
        assert_eq!(header, &expected[..]);
    }

    #[test]
    fn first_fit_aligns_and_reuses_gaps() {
        with_table(SIZE_BYTES, |table| {
            let a = table.allocate(100).unwrap();
            let b = table.allocate(100).unwrap();
            let c = table.allocate(100).unwrap();
            assert_eq!((a, b, c), (65536, 65536 + 128, 65536 + 256));
            table.free(b, 100).unwrap();
            assert_eq!(table.allocate(128), Some(b)); // exactly fills the gap
            table.free(a, 1).unwrap(); // a shorter (written) length is fine
            table.free(b, 128).unwrap();
            assert_eq!(table.allocate(200), Some(a)); // neighbours coalesce implicitly
            assert_eq!(table.allocations().unwrap().len(), 2);
        });
    }

    #[test]
    fn full_segment_and_bad_frees() {
        with_table(SIZE_BYTES, |table| {
            assert_eq!(table.allocate(4097), None);
            let a = table.allocate(4096).unwrap();
            assert_eq!(table.allocate(1), None);
            assert!(matches!(
                table.free(a + 1, 1),
                Err(ShmError::NoSuchAllocation { .. })
            ));
            assert!(matches!(
                table.free(a, 4097),
                Err(ShmError::LengthExceedsAllocation { .. })
            ));
            table.free(a, 4096).unwrap();
            assert!(matches!(
                table.free(a, 4096),
                Err(ShmError::NoSuchAllocation { .. })
            ));
        });
    }

    #[test]
    fn table_full_returns_none() {
        with_table(
            HEADER_SIZE_BYTES + 64 * (ALLOCATIONS_MAX as u64 + 1),
            |table| {
                for _ in 0..ALLOCATIONS_MAX {
                    assert!(table.allocate(1).is_some());
                }
                assert_eq!(table.allocate(1), None);
                assert_eq!(table.validate().unwrap(), ALLOCATIONS_MAX);
            },
        );
    }

    #[test]
    fn unaligned_peer_entries_are_respected() {
        with_table(SIZE_BYTES, |table| {
            // A vgi-rpc peer packs allocations back to back at odd offsets.
            table.set_entry(
                0,
                Allocation {
                    offset: 65536,
                    len_bytes: 7,
                },
            );
            table.set_entry(
                1,
                Allocation {
                    offset: 65543,
                    len_bytes: 5,
                },
            );
            table.set_count(2);
            assert_eq!(table.allocate(8), Some(65536 + 64));
            table.free(65543, 5).unwrap();
            assert_eq!(table.allocations().unwrap().len(), 2);
        });
    }

    #[test]
    fn corrupt_tables_are_rejected() {
        with_table(SIZE_BYTES, |table| {
            table.write(COUNT_AT, (ALLOCATIONS_MAX as u32 + 1).to_le_bytes()); // A peer's garbage.
            assert_eq!(table.allocate(1), None);
            table.set_entry(
                0,
                Allocation {
                    offset: 70000,
                    len_bytes: 1,
                },
            );
            table.set_entry(
                1,
                Allocation {
                    offset: 66000,
                    len_bytes: 1,
                },
            );
            table.set_count(2);
            assert!(table.validate().is_err());
            assert_eq!(table.allocate(1), None);
            table.set_entry(
                0,
                Allocation {
                    offset: SIZE_BYTES - 1,
                    len_bytes: u64::MAX,
                },
            );
            table.set_count(1);
            assert!(table.validate().is_err());
            table.set_entry(
                0,
                Allocation {
                    offset: 65000,
                    len_bytes: 1,
                },
            );
            assert!(table.validate().is_err());
        });
    }
}
