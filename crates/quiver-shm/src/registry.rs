//! The segment names this process owns, so that none outlives it.
//!
//! A POSIX shm name lives until someone unlinks it — a crashed engine would leave its segments in
//! `/dev/shm` (real memory on tmpfs) until reboot. `Drop` covers normal exits and unwinding
//! panics; the process-wide cleanup registry of `quiver-process` (`cleanup.rs`) covers
//! `SIGTERM`/`SIGINT` (where their disposition is still the default) and `exit` without
//! unwinding. This module is shared memory's view of that registry: it bounds how many segments
//! one process owns and lists their names.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use quiver_process::cleanup::{self, Kind, RegisterError};

use crate::error::{Result, ShmError};

/// Most segments one process can own at once.
pub const OWNED_SEGMENTS_MAX: usize = 256;

/// Segments registered now (across threads).
static OWNED_SEGMENTS: AtomicUsize = AtomicUsize::new(0);

/// Proof of a registration; pass it back to [`unregister`].
#[derive(Debug)]
pub(crate) struct Registration {
    entry: cleanup::Registration,
}

/// Records `path` (with leading slash) as owned by this process.
pub(crate) fn register(path: &CStr) -> Result<Registration> {
    assert_eq!(path.to_bytes().first(), Some(&b'/'));
    let full = ShmError::RegistryFull {
        limit: OWNED_SEGMENTS_MAX,
    };
    if OWNED_SEGMENTS.fetch_add(1, Ordering::AcqRel) >= OWNED_SEGMENTS_MAX {
        OWNED_SEGMENTS.fetch_sub(1, Ordering::AcqRel);
        return Err(full);
    }
    match cleanup::register(Kind::SharedMemory, path) {
        Ok(entry) => Ok(Registration { entry }),
        Err(RegisterError::Full | RegisterError::TooLong) => {
            OWNED_SEGMENTS.fetch_sub(1, Ordering::AcqRel);
            Err(full)
        }
    }
}

/// Forgets a registration (the caller has unlinked the name, or failed to create it).
pub(crate) fn unregister(registration: Registration) {
    cleanup::unregister(registration.entry);
    let before = OWNED_SEGMENTS.fetch_sub(1, Ordering::AcqRel);
    assert!(before > 0, "more segments unregistered than registered");
}

/// Names (without slash) currently registered by this process; for diagnostics and tests.
pub fn owned_segment_names() -> Vec<String> {
    cleanup::registered(Kind::SharedMemory)
        .into_iter()
        .map(|path| path.trim_start_matches('/').to_owned())
        .collect()
}

/// Installs the `SIGTERM`/`SIGINT` handlers (only where the disposition is still the default) and
/// the `atexit` hook. Idempotent; [`crate::Segment::create`] calls it, so calling it yourself is
/// only needed to fix the moment of installation.
pub fn install_leak_guards() {
    cleanup::install();
}
