//! One registry of what this process must remove when it ends: POSIX shared-memory names and file
//! paths (listening sockets, parallel-scan work files).
//!
//! `Drop` covers normal exits and unwinding panics; this registry covers what can be covered
//! beyond that:
//!
//! * `SIGTERM` / `SIGINT`, where their disposition is still the default (terminate): the handler
//!   removes every registered entry, restores the default action and re-raises the signal, so the
//!   process still dies *by that signal* (exit status and core-dump behaviour unchanged). Where the
//!   host already handles the signal (Python turns `SIGINT` into `KeyboardInterrupt`, DuckDB's
//!   shell cancels a query on it) we leave it alone: the host may well continue, still using what
//!   is registered, and it ends by `exit`, which the next point covers.
//!   A socket server replaces the `SIGTERM` half with a graceful stop ([`crate::stop`]) that ends
//!   by `exit`, so the `atexit` hook still removes everything.
//! * `exit()` without unwinding (`std::process::exit`, a C host calling `exit`): an `atexit` hook.
//!
//! `SIGKILL`, `panic = "abort"` and power loss cannot be covered from inside the process; names
//! carry their owner's pid where that matters so that the next process can sweep a dead owner's
//! leftovers (see `quiver-duckdb`'s private socket directories and `quiver-vgi`'s work files).
//!
//! The handler may only do async-signal-safe work: no locks, no allocation. So the registry is a
//! fixed array of slots claimed with atomics, each holding a NUL-terminated path that the handler
//! passes straight to `shm_unlink` or `unlink`. A slot also records the pid that registered it:
//! after `fork`, the child inherits the registry but must not remove its parent's entries.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::Once;

/// Most entries one process can have registered at once.
pub const ENTRIES_MAX: usize = 512;

/// Bytes per stored path, NUL included. Longer paths are refused ([`RegisterError::TooLong`]).
pub const PATH_BYTES_MAX: usize = 256;

const SLOT_FREE: u8 = 0;
const SLOT_BUSY: u8 = 1;
const SLOT_LIVE: u8 = 2;

/// What an entry names, and so how it is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A POSIX shared-memory name (leading slash), removed with `shm_unlink`.
    SharedMemory = 1,
    /// A filesystem path (a socket, a work file), removed with `unlink`.
    File = 2,
}

impl Kind {
    fn from_u8(value: u8) -> Option<Kind> {
        match value {
            1 => Some(Kind::SharedMemory),
            2 => Some(Kind::File),
            _ => None,
        }
    }
}

/// Why an entry could not be registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// All [`ENTRIES_MAX`] slots are taken.
    Full,
    /// The path needs more than [`PATH_BYTES_MAX`] bytes.
    TooLong,
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegisterError::Full => {
                write!(f, "the cleanup registry is full ({ENTRIES_MAX} entries)")
            }
            RegisterError::TooLong => write!(f, "path longer than {PATH_BYTES_MAX} bytes"),
        }
    }
}

impl std::error::Error for RegisterError {}

struct Slot {
    state: AtomicU8,
    kind: AtomicU8,
    owner_pid: AtomicI32,
    path: UnsafeCell<[u8; PATH_BYTES_MAX]>,
}

// SAFETY: `path` is written only by the thread that moved `state` FREE -> BUSY, and read only
// after observing LIVE with Acquire ordering (published with Release).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)] // Used only as the array initialiser below.
const FREE_SLOT: Slot = Slot {
    state: AtomicU8::new(SLOT_FREE),
    kind: AtomicU8::new(0),
    owner_pid: AtomicI32::new(0),
    path: UnsafeCell::new([0; PATH_BYTES_MAX]),
};

static SLOTS: [Slot; ENTRIES_MAX] = [FREE_SLOT; ENTRIES_MAX];

/// Proof of a registration; pass it back to [`unregister`] once the entry is removed (or handed
/// over). Dropping it without unregistering keeps the entry registered until the process ends.
#[derive(Debug)]
#[must_use = "an entry stays registered until unregistered"]
pub struct Registration {
    slot: usize,
}

/// Records `path` to be removed (as `kind` says) when this process ends, and installs the hooks
/// (see [`install`]).
pub fn register(kind: Kind, path: &CStr) -> Result<Registration, RegisterError> {
    let bytes = path.to_bytes_with_nul();
    if bytes.len() > PATH_BYTES_MAX {
        return Err(RegisterError::TooLong);
    }
    assert!(bytes.len() > 1, "an empty path is never registered");
    if kind == Kind::SharedMemory {
        assert_eq!(bytes[0], b'/', "shared-memory names start with a slash");
    }
    install();
    for (index, slot) in SLOTS.iter().enumerate() {
        if slot
            .state
            .compare_exchange(SLOT_FREE, SLOT_BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: we hold the slot (BUSY); nobody else reads or writes `path` now.
            let stored = unsafe { &mut *slot.path.get() };
            stored.fill(0);
            stored[..bytes.len()].copy_from_slice(bytes);
            slot.kind.store(kind as u8, Ordering::Relaxed);
            slot.owner_pid.store(current_pid(), Ordering::Relaxed);
            slot.state.store(SLOT_LIVE, Ordering::Release);
            return Ok(Registration { slot: index });
        }
    }
    Err(RegisterError::Full)
}

/// [`register`] for a filesystem path.
pub fn register_file(path: &std::path::Path) -> Result<Registration, RegisterError> {
    let c_path =
        CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| RegisterError::TooLong)?;
    register(Kind::File, &c_path)
}

/// Forgets a registration (the caller has removed the entry itself, or handed it to someone else).
pub fn unregister(registration: Registration) {
    let slot = &SLOTS[registration.slot];
    let previous = slot.state.swap(SLOT_BUSY, Ordering::Acquire);
    assert_eq!(previous, SLOT_LIVE, "a registration is unregistered once");
    slot.state.store(SLOT_FREE, Ordering::Release);
}

/// Entries of `kind` registered by this process, as registered; for diagnostics and tests.
pub fn registered(kind: Kind) -> Vec<String> {
    let pid = current_pid();
    let mut entries = Vec::new();
    for slot in SLOTS.iter() {
        if slot.state.load(Ordering::Acquire) == SLOT_LIVE
            && slot.owner_pid.load(Ordering::Relaxed) == pid
            && Kind::from_u8(slot.kind.load(Ordering::Relaxed)) == Some(kind)
        {
            // SAFETY: LIVE slots are immutable until unregistered; we copy out immediately.
            let stored = unsafe { *slot.path.get() };
            if let Ok(path) = CStr::from_bytes_until_nul(&stored) {
                entries.push(path.to_string_lossy().into_owned());
            }
        }
    }
    entries
}

/// Removes every live entry this pid registered. Async-signal-safe; entries stay registered (a
/// concurrent `Drop` may remove the same entry first: ENOENT is harmless).
pub fn remove_all_registered() {
    let pid = current_pid();
    for slot in SLOTS.iter() {
        if slot.state.load(Ordering::Acquire) != SLOT_LIVE
            || slot.owner_pid.load(Ordering::Relaxed) != pid
        {
            continue;
        }
        let path = slot.path.get() as *const libc::c_char;
        // SAFETY: a LIVE slot holds a NUL-terminated path that stays put until unregistered;
        // shm_unlink (a stack-only path build plus unlink on glibc >= 2.34 and musl) and unlink
        // are async-signal-safe.
        unsafe {
            match Kind::from_u8(slot.kind.load(Ordering::Relaxed)) {
                Some(Kind::SharedMemory) => {
                    libc::shm_unlink(path);
                }
                Some(Kind::File) => {
                    libc::unlink(path);
                }
                None => {}
            }
        }
    }
}

fn current_pid() -> i32 {
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    unsafe { libc::getpid() }
}

extern "C" fn on_terminating_signal(signal: libc::c_int) {
    remove_all_and_die_by(signal);
}

/// Removes every registered entry, then dies by `signal` with its default action.
/// Async-signal-safe; used by this registry's handler and by [`crate::stop`]'s.
pub(crate) fn remove_all_and_die_by(signal: libc::c_int) {
    remove_all_registered();
    // SAFETY: sigaction and raise are async-signal-safe. The signal is blocked while this handler
    // runs, so the re-raised one stays pending and kills the process with the default action as
    // soon as the handler returns.
    unsafe {
        let mut default_action: libc::sigaction = std::mem::zeroed();
        default_action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default_action.sa_mask);
        libc::sigaction(signal, &default_action, std::ptr::null_mut());
        libc::raise(signal);
    }
}

extern "C" fn on_exit() {
    remove_all_registered();
}

/// Installs the `SIGTERM`/`SIGINT` handlers (only where the disposition is still the default) and
/// the `atexit` hook. Idempotent; [`register`] calls it, so calling it yourself is only needed to
/// fix the moment of installation.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        for signal in [libc::SIGTERM, libc::SIGINT] {
            install_if_default(signal);
        }
        // SAFETY: registering a plain extern "C" fn with no captured state.
        let status = unsafe { libc::atexit(on_exit) };
        assert_eq!(status, 0, "atexit registration failed");
    });
}

/// Whether `SIGTERM` is still the default or this registry's handler: nobody else (a host) chose
/// what it does, so [`crate::stop`] may take it over.
pub(crate) fn terminate_disposition_is_ours_or_default() -> bool {
    // SAFETY: a plain sigaction query into a zeroed struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut current) != 0 {
            return false;
        }
        current.sa_sigaction == libc::SIG_DFL
            || current.sa_sigaction
                == on_terminating_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
    }
}

fn install_if_default(signal: libc::c_int) {
    // SAFETY: plain sigaction queries/updates with properly initialised structs.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
            return;
        }
        if current.sa_sigaction != libc::SIG_DFL {
            return; // The host handles (or ignores) this signal; respect its choice.
        }
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction =
            on_terminating_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut ours.sa_mask);
        ours.sa_flags = libc::SA_RESTART;
        let status = libc::sigaction(signal, &ours, std::ptr::null_mut());
        assert_eq!(status, 0, "sigaction failed for signal {signal}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_listed_until_unregistered() {
        let path = std::env::temp_dir().join(format!("quiver-cleanup-{}", std::process::id()));
        let registration = register_file(&path).unwrap();
        let listed = path.to_string_lossy().into_owned();
        assert!(registered(Kind::File).contains(&listed));
        assert!(!registered(Kind::SharedMemory).contains(&listed));
        unregister(registration);
        assert!(!registered(Kind::File).contains(&listed));
    }

    #[test]
    fn long_paths_are_refused() {
        let long = "x".repeat(PATH_BYTES_MAX);
        assert_eq!(
            register_file(std::path::Path::new(&long)).unwrap_err(),
            RegisterError::TooLong
        );
    }
}
