//! The one error type of this crate.
//!
//! Every variant carries the numbers that made the operation fail, so a log line is enough to
//! diagnose a mismatch between two peers without attaching a debugger to either.

use std::io;

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, ShmError>;

/// Errors from creating, attaching, and using a shared-memory segment.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The requested segment size is outside what the layout or our limits allow.
    #[error("invalid segment size {size_bytes} bytes: {reason}")]
    InvalidSize {
        /// The size asked for.
        size_bytes: u64,
        /// Which bound it breaks.
        reason: &'static str,
    },

    /// A segment name that POSIX `shm_open` (or a vgi-rpc peer) would not accept.
    #[error("invalid segment name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },

    /// A system call failed.
    #[error("{operation} failed for segment {name:?}: {source}")]
    Os {
        /// The call, e.g. `shm_open` or `mmap`.
        operation: &'static str,
        /// The segment it was made for.
        name: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },

    /// The first four bytes are not `"VGIS"`: not a vgi-rpc segment.
    #[error("segment {name:?} has bad magic {found:?}, expected \"VGIS\"")]
    BadMagic {
        /// The segment.
        name: String,
        /// Its first four bytes.
        found: [u8; 4],
    },

    /// The header declares a layout version we do not speak.
    #[error("segment {name:?} has unsupported layout version {found}, expected 1")]
    UnsupportedVersion {
        /// The segment.
        name: String,
        /// The version its header declares.
        found: u32,
    },

    /// The header's `data_size` disagrees with the mapped size minus the header.
    #[error(
        "segment {name:?} header says data_size={header_data_size_bytes} bytes, \
         but the mapping implies {expected_data_size_bytes} bytes"
    )]
    DataSizeMismatch {
        /// The segment.
        name: String,
        /// What the header says.
        header_data_size_bytes: u64,
        /// What the mapping implies.
        expected_data_size_bytes: u64,
    },

    /// The size advertised by the peer does not match the object the kernel reports.
    #[error(
        "segment {name:?} was advertised as {advertised_size_bytes} bytes \
         but the kernel reports {actual_size_bytes} bytes"
    )]
    SizeMismatch {
        /// The segment.
        name: String,
        /// The size the peer advertised.
        advertised_size_bytes: u64,
        /// The size the kernel reports.
        actual_size_bytes: u64,
    },

    /// The allocation table violates its invariants (count, order, bounds).
    #[error("segment allocation table is corrupt: {reason}")]
    CorruptTable {
        /// Which invariant fails, with the numbers.
        reason: String,
    },

    /// A byte range that does not lie inside the data area of the segment.
    #[error(
        "range offset={offset} len={len_bytes} is outside the data area \
         [{data_start}, {data_end}) of the segment"
    )]
    OutOfBounds {
        /// The range's first byte (absolute).
        offset: u64,
        /// The range's length.
        len_bytes: u64,
        /// The data area's first byte.
        data_start: u64,
        /// One past the data area's last byte.
        data_end: u64,
    },

    /// No allocation starts at the given offset (already freed, or never allocated).
    #[error("no allocation starts at offset {offset}")]
    NoSuchAllocation {
        /// The offset looked up.
        offset: u64,
    },

    /// The caller's length is longer than the allocation that starts at the offset.
    #[error(
        "length {len_bytes} exceeds the {allocated_len_bytes}-byte allocation at offset {offset}"
    )]
    LengthExceedsAllocation {
        /// The allocation's offset.
        offset: u64,
        /// The length asked for.
        len_bytes: u64,
        /// The allocation's length.
        allocated_len_bytes: u64,
    },

    /// The region is already owned by a zero-copy buffer of this process.
    #[error("the allocation at offset {offset} is already claimed by a zero-copy buffer")]
    AlreadyClaimed {
        /// The allocation's offset.
        offset: u64,
    },

    /// The process-wide registry of owned segment names has no free slot.
    #[error("too many owned segments in this process (limit {limit})")]
    RegistryFull {
        /// The registry's size.
        limit: usize,
    },

    /// Creating the segment would exceed this process's budget of segment bytes
    /// (`VGI_RPC_SHM_PROCESS_MAX_BYTES`); the caller runs the connection inline.
    #[error(
        "a {size_bytes}-byte segment would exceed the process budget: \
         {reserved_bytes} of {budget_bytes} bytes already reserved"
    )]
    BudgetExceeded {
        /// The segment asked for.
        size_bytes: u64,
        /// What this process's segments hold already.
        reserved_bytes: u64,
        /// The budget.
        budget_bytes: u64,
    },
}
