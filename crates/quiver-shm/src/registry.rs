//! Process-wide registry of the segment names this process owns, so that none outlives it.
//!
//! A POSIX shm name lives until someone unlinks it — a crashed engine would leave its segments in
//! `/dev/shm` (real memory on tmpfs) until reboot. `Drop` covers normal exits and unwinding
//! panics; this registry covers the rest that can be covered:
//!
//! * `SIGTERM` / `SIGINT`, when their disposition is still the default (terminate): the handler
//!   unlinks every registered name, restores the default action, and re-raises the signal, so the
//!   process still dies *by that signal* (exit status and core-dump behaviour unchanged). Where the
//!   host already handles the signal (Python turns `SIGINT` into `KeyboardInterrupt`) we leave it
//!   alone: the host may well continue, still using the segments.
//! * `exit()` without unwinding (`std::process::exit`, a C host calling `exit`): an `atexit` hook.
//!
//! `SIGKILL`, `panic = "abort"` and power loss cannot be covered from inside the process.
//!
//! The signal handler may only do async-signal-safe work: no locks, no allocation. So the registry
//! is a fixed array of slots claimed with atomics, each holding a NUL-terminated path that the
//! handler passes straight to `shm_unlink` (on glibc ≥ 2.34 and musl a stack-only path build plus
//! `unlink`, both safe). A slot also records the pid that registered it: after `fork`, the child
//! inherits the registry but must not unlink its parent's segments.

use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::Once;

use crate::error::{Result, ShmError};

/// Most segments one process can own at once.
pub const OWNED_SEGMENTS_MAX: usize = 256;

/// Bytes per stored path, NUL included. Our own names are 13 bytes with the slash.
const PATH_CAPACITY_BYTES: usize = 32;

const SLOT_FREE: u8 = 0;
const SLOT_BUSY: u8 = 1;
const SLOT_LIVE: u8 = 2;

struct Slot {
    state: AtomicU8,
    owner_pid: AtomicI32,
    path: UnsafeCell<[u8; PATH_CAPACITY_BYTES]>,
}

// SAFETY: `path` is written only by the thread that moved `state` FREE -> BUSY, and read only
// after observing LIVE with Acquire ordering (published with Release).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)] // Used only as the array initialiser below.
const FREE_SLOT: Slot = Slot {
    state: AtomicU8::new(SLOT_FREE),
    owner_pid: AtomicI32::new(0),
    path: UnsafeCell::new([0; PATH_CAPACITY_BYTES]),
};

static SLOTS: [Slot; OWNED_SEGMENTS_MAX] = [FREE_SLOT; OWNED_SEGMENTS_MAX];

/// Proof of a registration; pass it back to [`unregister`].
#[derive(Debug)]
pub(crate) struct Registration {
    slot: usize,
}

/// Records `path` (with leading slash) as owned by this process.
pub(crate) fn register(path: &CStr) -> Result<Registration> {
    let bytes = path.to_bytes_with_nul();
    assert!(
        bytes.len() <= PATH_CAPACITY_BYTES,
        "owned segment names are short"
    );
    assert_eq!(bytes[0], b'/');
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
            slot.owner_pid.store(current_pid(), Ordering::Relaxed);
            slot.state.store(SLOT_LIVE, Ordering::Release);
            return Ok(Registration { slot: index });
        }
    }
    Err(ShmError::RegistryFull {
        limit: OWNED_SEGMENTS_MAX,
    })
}

/// Forgets a registration (the caller has unlinked the name, or failed to create it).
pub(crate) fn unregister(registration: Registration) {
    let slot = &SLOTS[registration.slot];
    let previous = slot.state.swap(SLOT_BUSY, Ordering::Acquire);
    assert_eq!(previous, SLOT_LIVE, "a registration is unregistered once");
    slot.state.store(SLOT_FREE, Ordering::Release);
}

/// Names (without slash) currently registered by this process; for diagnostics and tests.
pub fn owned_segment_names() -> Vec<String> {
    let pid = current_pid();
    let mut names = Vec::new();
    for slot in SLOTS.iter() {
        if slot.state.load(Ordering::Acquire) == SLOT_LIVE
            && slot.owner_pid.load(Ordering::Relaxed) == pid
        {
            // SAFETY: LIVE slots are immutable until unregistered; we copy out immediately.
            let stored = unsafe { *slot.path.get() };
            if let Ok(path) = CStr::from_bytes_until_nul(&stored) {
                names.push(path.to_string_lossy()[1..].to_owned());
            }
        }
    }
    names
}

/// Unlinks every live registered name owned by this pid. Async-signal-safe.
fn unlink_all_owned() {
    let pid = current_pid();
    for slot in SLOTS.iter() {
        if slot.state.load(Ordering::Acquire) == SLOT_LIVE
            && slot.owner_pid.load(Ordering::Relaxed) == pid
        {
            // SAFETY: a LIVE slot holds a NUL-terminated path that stays put until unregistered.
            // A concurrent `Drop` may unlink the same name first; ENOENT is harmless.
            unsafe {
                libc::shm_unlink(slot.path.get() as *const libc::c_char);
            }
        }
    }
}

fn current_pid() -> i32 {
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    unsafe { libc::getpid() }
}

extern "C" fn on_terminating_signal(signal: libc::c_int) {
    unlink_all_owned();
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
    unlink_all_owned();
}

/// Installs the `SIGTERM`/`SIGINT` handlers (only where the disposition is still the default) and
/// the `atexit` hook. Idempotent; [`crate::Segment::create`] calls it, so calling it yourself is
/// only needed to fix the moment of installation.
pub fn install_leak_guards() {
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
