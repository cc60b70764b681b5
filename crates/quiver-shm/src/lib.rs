//! POSIX shared-memory segments, byte-compatible with vgi-rpc 0.52.2's.
//!
//! Large Arrow batches can skip the pipe: the writer serialises a complete IPC stream into a
//! region of a segment both processes map, and sends a 0-row *pointer batch* carrying
//! `vgi_rpc.shm_offset` / `vgi_rpc.shm_length` instead. This crate is the segment; the pointer
//! batches belong to the RPC layer.
//!
//! # Layout
//!
//! ```text
//! 0      "VGIS"  | version u32 = 1 | data_size u64 | count u32 | pad u32     (24 bytes)
//! 24     count × (offset u64, length u64), sorted by offset, at most 4094
//! 65536  data area, data_size = size - 65536 bytes
//! ```
//!
//! Little-endian; offsets are absolute (from byte 0 of the segment). The table lists occupied
//! regions only; allocation is first fit over the gaps. vgi-rpc packs regions back to back, we
//! align ours to 64 bytes — both read each other's tables. See [`layout`].
//!
//! # Ownership and lifetime
//!
//! * The client *creates* ([`Segment::create`]), owns and unlinks the segment; it advertises
//!   [`Segment::name`] (`psm_<pid>_xxxxxxxx`, no leading slash) and [`Segment::size_bytes`] on every
//!   request. The server *attaches* ([`Segment::attach`]) and never unlinks.
//! * Whoever writes a message allocates; whoever *reads* it frees the region after consuming it.
//!   [`Segment::claim_buffer`] makes that automatic: the zero-copy `Buffer` frees the region when
//!   its last clone is dropped.
//! * A writer may instead build a batch in the segment ([`Segment::lease_region`]) or pass a batch
//!   it read back unchanged: the region it holds is then *handed over* ([`Segment::hand_over`])
//!   with the stream's framing written around the buffers in place, and the peer frees it.
//! * The owner unlinks the name once the peer has attached ([`Segment::unlink_name`]; the RPC
//!   client does it after the first reply), so a segment never outlives the two processes that
//!   map it. Before that, owned names are unlinked on drop (including unwinding panics), on
//!   `SIGTERM`/`SIGINT` with the default disposition, and at `exit` (see [`registry`]); names
//!   left by an owner killed outright carry its pid and are swept by the next process that
//!   creates a segment ([`sweep_dead_owners`]).
//! * Segments are sparse: pages are committed when a region is allocated, and the bytes of
//!   segments one process creates are bounded ([`ShmConfig::process_max_bytes`]).
//!
//! # Concurrency
//!
//! There is no lock between the two processes: vgi-rpc relies on the lockstep protocol, where only
//! the side whose turn it is touches the table. A buffer dropped late (on another thread, while
//! the peer is busy writing its next batch) would break that rule, so the transport brackets the
//! peer's turn with [`Segment::begin_peer_turn`] / [`Segment::end_peer_turn`], and frees released
//! meanwhile are deferred to the end of the turn.
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod layout;
pub mod registry;

mod budget;
mod buffer;
mod mapping;
mod name;
mod segment;
mod sweep;
mod table;
mod writer;

pub use budget::reserved_segment_bytes;
pub use buffer::{HeldRegion, OutputBuffer, OutputRegion};
pub use config::{ConfigError, ShmConfig};
pub use error::{Result, ShmError};
pub use layout::{
    ALLOCATIONS_MAX, ALLOCATION_ALIGNMENT_BYTES, HEADER_SIZE_BYTES, SEGMENT_SIZE_MAX_BYTES,
};
pub use name::{NAME_LENGTH_MAX, NAME_PREFIX, OWNED_NAME_LENGTH_MAX};
pub use registry::{install_leak_guards, owned_segment_names, OWNED_SEGMENTS_MAX};
pub use segment::Segment;
pub use sweep::sweep_dead_owners;
pub use table::Allocation;
pub use writer::RegionWriter;
