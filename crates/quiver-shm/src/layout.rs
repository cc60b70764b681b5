//! The on-segment byte layout shared with vgi-rpc 0.52.2's segments.
//!
//! ```text
//! offset  size     field
//! 0       4        magic "VGIS"
//! 4       4        version: u32 = 1
//! 8       8        data_size: u64 = segment size - HEADER_SIZE_BYTES
//! 16      4        allocation count: u32
//! 20      4        padding (zero)
//! 24      16 * n   allocations: (offset: u64, length: u64), sorted by offset
//! 65536   ...      data area
//! ```
//!
//! All integers are little-endian. Offsets are absolute, counted from the first byte of the
//! segment, so the first possible allocation starts at `HEADER_SIZE_BYTES`. These numbers are a
//! wire format: changing any of them breaks every peer.

/// Size of the header that precedes the data area. The data area starts at this offset.
pub const HEADER_SIZE_BYTES: u64 = 65536;

/// First four bytes of every segment.
pub const MAGIC: [u8; 4] = *b"VGIS";

/// The only layout version this crate (and vgi-rpc 0.52.2) reads or writes.
pub const VERSION: u32 = 1;

pub(crate) const MAGIC_AT: usize = 0;
pub(crate) const VERSION_AT: usize = 4;
pub(crate) const DATA_SIZE_AT: usize = 8;
pub(crate) const COUNT_AT: usize = 16;
pub(crate) const PADDING_AT: usize = 20;
pub(crate) const ENTRIES_AT: usize = 24;
pub(crate) const ENTRY_SIZE_BYTES: usize = 16;

/// Most allocations the header can describe at once: (65536 - 24) / 16.
pub const ALLOCATIONS_MAX: usize = (HEADER_SIZE_BYTES as usize - ENTRIES_AT) / ENTRY_SIZE_BYTES;

/// Alignment of the offsets *we* hand out. vgi-rpc packs allocations back to back (any offset);
/// we round our own up to 64 bytes so that Arrow buffers decoded in place from the segment are
/// aligned (arrow-rs would otherwise copy to realign). Peers only rely on the table being sorted
/// and non-overlapping, so the gaps this leaves are invisible to them.
pub const ALLOCATION_ALIGNMENT_BYTES: u64 = 64;

/// Largest segment we create or attach. tmpfs pages are real memory; beyond this a size is far
/// more likely a typo than a plan, and it keeps every offset comfortably inside `usize` / `i64`.
pub const SEGMENT_SIZE_MAX_BYTES: u64 = 64 << 30;

const _: () = assert!(ALLOCATIONS_MAX == 4094);
const _: () =
    assert!(ENTRIES_AT + ALLOCATIONS_MAX * ENTRY_SIZE_BYTES <= HEADER_SIZE_BYTES as usize);
const _: () = assert!(HEADER_SIZE_BYTES.is_multiple_of(ALLOCATION_ALIGNMENT_BYTES));
const _: () = assert!(ALLOCATION_ALIGNMENT_BYTES.is_power_of_two());
const _: () = assert!(SEGMENT_SIZE_MAX_BYTES <= isize::MAX as u64);

/// Rounds `value` up to a multiple of `ALLOCATION_ALIGNMENT_BYTES`.
/// The caller guarantees no overflow (values are bounded by `SEGMENT_SIZE_MAX_BYTES`).
pub(crate) fn align_up(value: u64) -> u64 {
    debug_assert!(value <= SEGMENT_SIZE_MAX_BYTES);
    (value + ALLOCATION_ALIGNMENT_BYTES - 1) & !(ALLOCATION_ALIGNMENT_BYTES - 1)
}
