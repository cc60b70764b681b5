//! A mapped segment: creating (owner) or attaching (peer), and the allocation operations on it.
//!
//! Ownership rule (same as vgi-rpc): the client creates the segment, owns its name and unlinks it;
//! the server only attaches. Both map the whole object read/write, and both allocate and free in
//! the shared table.
//!
//! Turn rule: there is no lock between the two processes. vgi-rpc relies on the lockstep RPC
//! protocol — only the side whose turn it is (the one currently writing a message, or consuming
//! one it received) mutates the table. Inside one process several threads may touch the table (a
//! zero-copy buffer can be dropped on any thread), so mutations are serialised by a mutex, and the
//! transport can hand the turn to the peer with [`Segment::begin_peer_turn`]: until
//! [`Segment::end_peer_turn`], regions released by dropped buffers are queued instead of written,
//! and any other mutation is a bug that trips an assertion.
//!
//! Lifetime rule: the name only lets a peer find the segment; the mappings keep the memory. So
//! the owner unlinks the name as soon as the peer has attached ([`Segment::unlink_name`], called
//! by the RPC client after the first reply), and from then on the kernel frees the memory when the
//! last of the two processes unmaps it, however they die. vgi-rpc peers and quiver's servers
//! attach on the first request that names the segment and never re-open it by name.
//!
//! Cost rule: segments are sparse. `create` sizes the object without reserving its pages, and
//! [`Segment::allocate`] commits a region's pages (`fallocate`) before handing it out, so a full
//! `/dev/shm` makes the allocation fail (the batch goes inline) instead of raising `SIGBUS` on
//! the writer's first touch.

use std::ffi::CString;
use std::io;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, Weak};

use crate::budget::{self, BudgetReservation};
use crate::buffer::RegionLease;
use crate::error::{Result, ShmError};
use crate::layout::{HEADER_SIZE_BYTES, VERSION};
use crate::mapping::{
    check_size, close_fd, commit_pages, current_pid, os_error, size_and_map_new,
    stat_and_map_existing,
};
use crate::name::{random_name, shm_path};
use crate::registry::{self, Registration};
use crate::sweep;
use crate::table::{Allocation, Table};

/// How many random names `create` tries before giving up on `EEXIST`.
const CREATE_ATTEMPTS_MAX: usize = 64;

/// A mapped vgi-rpc shared-memory segment. Shared as `Arc<Segment>`: zero-copy buffers keep a
/// clone so the mapping outlives every byte they expose.
pub struct Segment {
    name: String,
    base: NonNull<u8>,
    size_bytes: u64,
    /// Kept open to commit regions' pages (`fallocate` needs a descriptor, not a mapping).
    fd: libc::c_int,
    owner: Option<Owner>,
    turn: Mutex<TurnState>,
}

/// What only the creating process has: the right (and duty) to unlink the name.
struct Owner {
    path: CString,
    pid: i32,
    /// `Some` while the name is linked; taken by whoever unlinks it first.
    registration: Mutex<Option<Registration>>,
    _budget: BudgetReservation,
}

/// Process-local bookkeeping, guarded by the segment's mutex.
#[derive(Default)]
pub(crate) struct TurnState {
    pub(crate) peer_turn: bool,
    /// Offsets released by dropped buffers during the peer's turn, freed at its end.
    deferred_offsets: Vec<u64>,
    /// Offsets currently owned by live zero-copy buffers.
    pub(crate) claimed_offsets: Vec<u64>,
    /// The leases of those buffers, so a region can be handed to the peer (see `buffer.rs`).
    pub(crate) leases: Vec<(u64, Weak<RegionLease>)>,
    /// Which [`COMMIT_CHUNK_BYTES`] chunks of the object have their pages committed already.
    committed_chunks: Vec<u64>,
    release_failure_count: u64,
    commit_failure_count: u64,
}

/// Granularity of page commits: a region reuses chunks an earlier one committed, so a stream of
/// large batches pays `fallocate` once per chunk, not once per batch.
const COMMIT_CHUNK_BYTES: u64 = 1 << 20;

impl TurnState {
    /// Commits the chunks `[offset, offset + len_bytes)` touches that are not committed yet.
    fn commit(
        &mut self,
        fd: libc::c_int,
        size_bytes: u64,
        offset: u64,
        len_bytes: u64,
    ) -> io::Result<()> {
        let first = offset / COMMIT_CHUNK_BYTES;
        let last = (offset + len_bytes - 1) / COMMIT_CHUNK_BYTES;
        let mut chunk = first;
        while chunk <= last {
            if self.is_committed(chunk) {
                chunk += 1;
                continue;
            }
            let run_start = chunk;
            while chunk <= last && !self.is_committed(chunk) {
                chunk += 1;
            }
            let start = run_start * COMMIT_CHUNK_BYTES;
            let end = (chunk * COMMIT_CHUNK_BYTES).min(size_bytes);
            commit_pages(fd, start, end - start)?;
            (run_start..chunk).for_each(|c| self.mark_committed(c));
        }
        Ok(())
    }

    fn is_committed(&self, chunk: u64) -> bool {
        let (word, bit) = ((chunk / 64) as usize, chunk % 64);
        self.committed_chunks
            .get(word)
            .is_some_and(|w| w & (1 << bit) != 0)
    }

    fn mark_committed(&mut self, chunk: u64) {
        let (word, bit) = ((chunk / 64) as usize, chunk % 64);
        if self.committed_chunks.len() <= word {
            self.committed_chunks.resize(word + 1, 0);
        }
        self.committed_chunks[word] |= 1 << bit;
    }
}

// SAFETY: `base` points to a MAP_SHARED mapping that lives as long as the `Segment`; all table
// mutations from this process are serialised by `turn`, and data regions are handed out
// disjointly by the allocator.
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

impl Segment {
    /// Creates, sizes, maps and initialises a new sparse segment named `psm_<pid>_xxxxxxxx`,
    /// counted against an unlimited process budget (see [`Segment::create_within_budget`]).
    pub fn create(size_bytes: u64) -> Result<std::sync::Arc<Segment>> {
        Segment::create_within_budget(size_bytes, u64::MAX)
    }

    /// Creates a segment if this process's segments, this one included, stay within
    /// `budget_bytes`; fails with [`ShmError::BudgetExceeded`] otherwise.
    ///
    /// The caller's process owns the name: it is registered for unlinking on `SIGTERM`/`SIGINT`
    /// and `exit`, and unlinked by [`Segment::unlink_name`] or when the returned segment (and
    /// every buffer into it) is dropped. The first segment a process creates first sweeps the
    /// names of dead owners (`sweep.rs`).
    pub fn create_within_budget(
        size_bytes: u64,
        budget_bytes: u64,
    ) -> Result<std::sync::Arc<Segment>> {
        check_size(size_bytes)?;
        let budget = budget::reserve(size_bytes, budget_bytes)?;
        registry::install_leak_guards();
        sweep::sweep_once();
        let pid = current_pid();
        for _ in 0..CREATE_ATTEMPTS_MAX {
            let name = random_name(pid as u32);
            let path = shm_path(&name)?;
            let registration = registry::register(&path)?;
            // SAFETY: `path` is a valid NUL-terminated string.
            let fd = unsafe {
                libc::shm_open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                    0o600 as libc::mode_t,
                )
            };
            if fd < 0 {
                let error = io::Error::last_os_error();
                registry::unregister(registration);
                if error.raw_os_error() == Some(libc::EEXIST) {
                    continue;
                }
                return Err(os_error("shm_open", &name, error));
            }
            let mapped = size_and_map_new(fd, size_bytes, &name);
            return match mapped {
                Ok(base) => {
                    let segment = Segment {
                        name,
                        base,
                        size_bytes,
                        fd,
                        owner: Some(Owner {
                            path,
                            pid,
                            registration: Mutex::new(Some(registration)),
                            _budget: budget,
                        }),
                        turn: Mutex::new(TurnState::default()),
                    };
                    segment.table().initialize();
                    Ok(std::sync::Arc::new(segment))
                }
                Err(error) => {
                    close_fd(fd);
                    // SAFETY: valid path; we created this name a moment ago.
                    unsafe { libc::shm_unlink(path.as_ptr()) };
                    registry::unregister(registration);
                    Err(error)
                }
            };
        }
        Err(os_error(
            "shm_open",
            "psm_<pid>_*",
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                "every candidate name was taken",
            ),
        ))
    }

    /// Maps an existing segment created by a peer (`name` as advertised, without leading slash).
    ///
    /// Validates magic, version and `data_size`, the advertised size against the kernel's, and the
    /// allocation table. Never unlinks: the creator owns the name.
    pub fn attach(name: &str, size_bytes: u64) -> Result<std::sync::Arc<Segment>> {
        let path = shm_path(name)?;
        check_size(size_bytes)?;
        // SAFETY: `path` is a valid NUL-terminated string.
        let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(os_error("shm_open", name, io::Error::last_os_error()));
        }
        let (base, actual_size_bytes) = match stat_and_map_existing(fd, size_bytes, name) {
            Ok(mapped) => mapped,
            Err(error) => {
                close_fd(fd);
                return Err(error);
            }
        };
        let segment = Segment {
            name: name.to_owned(),
            base,
            size_bytes: actual_size_bytes,
            fd,
            owner: None,
            turn: Mutex::new(TurnState::default()),
        };
        segment.validate_header()?; // On error, dropping `segment` unmaps.
        Ok(std::sync::Arc::new(segment))
    }

    fn validate_header(&self) -> Result<()> {
        let table = self.table();
        let magic = table.magic();
        if magic != crate::layout::MAGIC {
            return Err(ShmError::BadMagic {
                name: self.name.clone(),
                found: magic,
            });
        }
        if table.version() != VERSION {
            return Err(ShmError::UnsupportedVersion {
                name: self.name.clone(),
                found: table.version(),
            });
        }
        let expected_data_size_bytes = self.size_bytes - HEADER_SIZE_BYTES;
        if table.data_size_bytes() != expected_data_size_bytes {
            return Err(ShmError::DataSizeMismatch {
                name: self.name.clone(),
                header_data_size_bytes: table.data_size_bytes(),
                expected_data_size_bytes,
            });
        }
        table.validate().map(|_| ())
    }

    /// The name as advertised to peers (`vgi_rpc.shm_segment_name`), without leading slash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size of the whole object, header included (`vgi_rpc.shm_segment_size`).
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Size of the data area: `size_bytes() - HEADER_SIZE_BYTES`.
    pub fn data_size_bytes(&self) -> u64 {
        self.size_bytes - HEADER_SIZE_BYTES
    }

    /// Whether this process created the segment (and will unlink it).
    pub fn is_owner(&self) -> bool {
        self.owner.is_some()
    }

    /// Whether this process owns the segment and its name is still linked (a peer can attach).
    pub fn is_name_linked(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|owner| lock(&owner.registration).is_some())
    }

    /// Removes the name, keeping the mapping: call once the peer has attached. From then on the
    /// memory lives exactly as long as some process maps it. Returns whether this call unlinked
    /// it (`false` when already unlinked, or when this process is not the owner).
    pub fn unlink_name(&self) -> bool {
        let Some(owner) = self.owner.as_ref() else {
            return false;
        };
        let Some(registration) = lock(&owner.registration).take() else {
            return false;
        };
        // A forked child inherits the segment but not the duty to unlink it.
        if owner.pid == current_pid() {
            // SAFETY: valid path. ENOENT (the signal handler or `exit` hook beat us) is fine.
            unsafe { libc::shm_unlink(owner.path.as_ptr()) };
        }
        registry::unregister(registration);
        true
    }

    /// Reserves `len_bytes` (> 0) with first fit at a 64-byte aligned offset, commits its pages,
    /// and returns the absolute offset. `None` when no gap fits, the table already has 4094
    /// entries, or `/dev/shm` cannot back the region: the caller then sends the batch inline,
    /// which is always correct.
    pub fn allocate(&self, len_bytes: u64) -> Option<u64> {
        let mut turn = self.own_turn("allocate");
        self.allocate_in_turn(&mut turn, len_bytes)
    }

    /// [`Segment::allocate`] under the turn's lock, which the caller holds in its own turn.
    pub(crate) fn allocate_in_turn(&self, turn: &mut TurnState, len_bytes: u64) -> Option<u64> {
        assert!(
            len_bytes > 0,
            "zero-length allocations are not representable"
        );
        let offset = self.table().allocate(len_bytes)?;
        if turn
            .commit(self.fd, self.size_bytes, offset, len_bytes)
            .is_err()
        {
            self.table()
                .free(offset, len_bytes)
                .expect("the region allocated a moment ago is in the table");
            turn.commit_failure_count += 1;
            return None;
        }
        Some(offset)
    }

    /// How many allocations failed because `/dev/shm` could not back their pages.
    pub fn commit_failure_count(&self) -> u64 {
        self.lock_turn().commit_failure_count
    }

    /// Frees the allocation that starts at `offset`. `len_bytes` is the length the caller knows
    /// (a pointer batch carries the bytes *written*, which may be less than the bytes allocated),
    /// and must not exceed the allocated length.
    pub fn free(&self, offset: u64, len_bytes: u64) -> Result<()> {
        let turn = self.own_turn("free");
        if turn.claimed_offsets.contains(&offset) {
            return Err(ShmError::AlreadyClaimed { offset });
        }
        self.table().free(offset, len_bytes)
    }

    /// Forgets every allocation (vgi-rpc's `reset`). For recovery after an aborted call, when the
    /// peer cannot be trusted to free what it allocated; refused while buffers still claim regions.
    pub fn reset(&self) -> Result<()> {
        let turn = self.own_turn("reset");
        if let Some(offset) = turn.claimed_offsets.first() {
            return Err(ShmError::AlreadyClaimed { offset: *offset });
        }
        self.table().initialize();
        Ok(())
    }

    /// Number of entries in the allocation table, as stored.
    pub fn allocation_count(&self) -> usize {
        self.table().count_raw() as usize
    }

    /// Snapshot of the allocation table (validated).
    pub fn allocations(&self) -> Result<Vec<Allocation>> {
        self.table().allocations()
    }

    /// Bounds-checked view of `len_bytes` bytes at absolute `offset` in the data area.
    ///
    /// The slice aliases memory another process can write. It is stable only while the protocol
    /// guarantees nobody writes the region (true for an allocated region between the writer's
    /// pointer batch and the reader's free).
    pub fn bytes(&self, offset: u64, len_bytes: u64) -> Result<&[u8]> {
        self.check_data_range(offset, len_bytes)?;
        // SAFETY: the range lies inside the mapping (checked), which lives as long as `self`.
        Ok(unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(offset as usize), len_bytes as usize)
        })
    }

    /// Copies `data` into the allocation that starts at `offset` (bounded by its allocated length).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut writer = self.region_writer(offset)?;
        io::Write::write_all(&mut writer, data).map_err(|_| ShmError::LengthExceedsAllocation {
            offset,
            len_bytes: data.len() as u64,
            allocated_len_bytes: writer.capacity_bytes(),
        })
    }

    /// An `io::Write` sink over the allocation that starts at `offset`, so an IPC stream writer can
    /// serialise straight into the segment (no intermediate buffer). Writing past the allocated
    /// length fails with `ErrorKind::StorageFull`.
    pub fn region_writer(&self, offset: u64) -> Result<crate::RegionWriter<'_>> {
        let turn = self.lock_turn();
        let (_, allocation) = self.table().find(offset)?;
        if turn.claimed_offsets.contains(&offset) {
            return Err(ShmError::AlreadyClaimed { offset });
        }
        Ok(crate::RegionWriter::new(
            self,
            allocation.offset,
            allocation.len_bytes,
        ))
    }

    /// Hands the turn to the peer (call just before sending it a message). Until
    /// [`Segment::end_peer_turn`], this process must not mutate the table: buffer drops are
    /// queued, and `allocate` / `free` / `reset` assert.
    pub fn begin_peer_turn(&self) {
        let mut turn = self.lock_turn();
        assert!(!turn.peer_turn, "begin_peer_turn called twice");
        turn.peer_turn = true;
    }

    /// Takes the turn back (call after the peer's message has been received) and frees the
    /// regions released meanwhile. Returns how many were freed.
    pub fn end_peer_turn(&self) -> usize {
        let mut turn = self.lock_turn();
        assert!(turn.peer_turn, "end_peer_turn without begin_peer_turn");
        turn.peer_turn = false;
        let deferred = std::mem::take(&mut turn.deferred_offsets);
        let mut freed = 0;
        for offset in deferred {
            match self.table().free(offset, 0) {
                Ok(()) => freed += 1,
                Err(_) => turn.release_failure_count += 1,
            }
        }
        freed
    }

    /// Whether the table is the peer's now (between `begin_peer_turn` and `end_peer_turn`).
    pub fn is_peer_turn(&self) -> bool {
        self.lock_turn().peer_turn
    }

    /// How many regions released by dropped buffers could not be freed (the entry was gone or the
    /// table corrupt) — always a peer bug; nonzero values deserve a log line.
    pub fn release_failure_count(&self) -> u64 {
        self.lock_turn().release_failure_count
    }

    /// Marks the allocation at `offset` as owned by a zero-copy buffer; returns its address.
    pub(crate) fn claim(&self, offset: u64, len_bytes: u64) -> Result<NonNull<u8>> {
        self.claim_in_turn(&mut self.lock_turn(), offset, len_bytes)
    }

    /// [`Segment::claim`] under the turn's lock, which the caller holds.
    pub(crate) fn claim_in_turn(
        &self,
        turn: &mut TurnState,
        offset: u64,
        len_bytes: u64,
    ) -> Result<NonNull<u8>> {
        let (_, allocation) = self.table().find(offset)?;
        if len_bytes > allocation.len_bytes {
            return Err(ShmError::LengthExceedsAllocation {
                offset,
                len_bytes,
                allocated_len_bytes: allocation.len_bytes,
            });
        }
        if turn.claimed_offsets.contains(&offset) {
            return Err(ShmError::AlreadyClaimed { offset });
        }
        turn.claimed_offsets.push(offset);
        // SAFETY: the allocation was validated to lie inside the mapping.
        Ok(unsafe { NonNull::new_unchecked(self.base.as_ptr().add(offset as usize)) })
    }

    /// Called when the last buffer over a claimed region is dropped: free now, or at the end of
    /// the peer's turn. Never panics on peer misbehaviour (it runs inside `Drop`).
    pub(crate) fn release_claim(&self, offset: u64) {
        let mut turn = self.lock_turn();
        let position = turn
            .claimed_offsets
            .iter()
            .position(|claimed| *claimed == offset);
        let position = position.expect("a claimed offset is released once");
        turn.claimed_offsets.swap_remove(position);
        turn.leases.retain(|(leased, _)| *leased != offset);
        if turn.peer_turn {
            turn.deferred_offsets.push(offset);
        } else if self.table().free(offset, 0).is_err() {
            turn.release_failure_count += 1;
        }
    }

    /// Base address of the mapping; for tests that prove zero-copy.
    pub fn mapping_address_range(&self) -> std::ops::Range<usize> {
        let start = self.base.as_ptr() as usize;
        start..start + self.size_bytes as usize
    }

    pub(crate) fn table(&self) -> Table {
        // SAFETY: the mapping spans `size_bytes` (> header) and lives as long as `self`.
        unsafe { Table::new(self.base.as_ptr(), self.size_bytes) }
    }

    pub(crate) fn lock_turn(&self) -> MutexGuard<'_, TurnState> {
        lock(&self.turn)
    }

    pub(crate) fn own_turn(&self, operation: &str) -> MutexGuard<'_, TurnState> {
        let turn = self.lock_turn();
        assert!(
            !turn.peer_turn,
            "{operation} during the peer's turn: the peer may be mutating the table"
        );
        turn
    }

    fn check_data_range(&self, offset: u64, len_bytes: u64) -> Result<()> {
        let end = offset.checked_add(len_bytes);
        if offset < HEADER_SIZE_BYTES || end.is_none_or(|end| end > self.size_bytes) {
            return Err(ShmError::OutOfBounds {
                offset,
                len_bytes,
                data_start: HEADER_SIZE_BYTES,
                data_end: self.size_bytes,
            });
        }
        Ok(())
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `base`/`size_bytes` describe our mapping; nothing borrows it any more (buffers
        // hold an `Arc<Segment>`, so they are gone).
        unsafe {
            libc::munmap(
                self.base.as_ptr() as *mut libc::c_void,
                self.size_bytes as usize,
            )
        };
        close_fd(self.fd);
        self.unlink_name();
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("name", &self.name)
            .field("size_bytes", &self.size_bytes)
            .field("owner", &self.owner.is_some())
            .finish()
    }
}

/// Locks `mutex`. A panic while holding one of ours cannot leave its state half-updated in a way
/// that matters more than losing the segment; keep going rather than cascade panics into Drop.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
