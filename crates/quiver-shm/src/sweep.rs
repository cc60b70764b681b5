//! Unlinking the segment names of owners that died without unlinking them.
//!
//! A name is normally unlinked as soon as the peer has attached (the RPC client calls
//! [`crate::Segment::unlink_name`] after the first reply), on drop, on `SIGTERM`/`SIGINT` and at
//! exit. A `SIGKILL` between `shm_open` and the first reply escapes all of these. Our names carry
//! the owner's pid (`name.rs`), so the first segment a process creates first unlinks the names
//! whose owner no longer exists. The memory itself was never at risk once both sides had mapped
//! it; only the name kept it alive.
//!
//! Only Linux exposes the names as files (`/dev/shm`); elsewhere the sweep does nothing. A pid
//! reused by an unrelated process keeps its dead predecessor's names until that process exits too:
//! a later sweep gets them. A process in another pid namespace that shares this `/dev/shm` looks
//! dead from here, and a sweep could remove its name before its peer attached (that connection's
//! first request then fails to attach); containers get their own `/dev/shm` by default, and
//! `--ipc=host` setups that also separate pid namespaces should set `VGI_RPC_SHM_DISABLE` or keep
//! the namespaces together.

use crate::name::owner_pid_of;

/// Directory entries examined per sweep: bounds the work at startup on a crowded `/dev/shm`.
const SWEEP_ENTRIES_MAX: usize = 65_536;

/// Names unlinked per sweep.
const SWEEP_UNLINKS_MAX: usize = 1024;

/// Sweeps once per process, before its first segment is created.
pub(crate) fn sweep_once() {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(|| {
        sweep_dead_owners();
    });
}

/// Unlinks our names in `/dev/shm` whose owner pid no longer exists; returns how many.
pub fn sweep_dead_owners() -> usize {
    #[cfg(target_os = "linux")]
    {
        sweep_directory(std::path::Path::new("/dev/shm"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

#[cfg(target_os = "linux")]
fn sweep_directory(directory: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    let own_pid = std::process::id();
    let mut unlinked = 0;
    for entry in entries.take(SWEEP_ENTRIES_MAX).flatten() {
        if unlinked == SWEEP_UNLINKS_MAX {
            break;
        }
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else {
            continue;
        };
        let Some(owner_pid) = owner_pid_of(name) else {
            continue;
        };
        if owner_pid == own_pid || process_exists(owner_pid) {
            continue;
        }
        let Ok(path) = crate::name::shm_path(name) else {
            continue;
        };
        // SAFETY: valid NUL-terminated path. ENOENT (another process swept it first) is fine;
        // EACCES (another user's name under the sticky /dev/shm) leaves it to its owner's user.
        if unsafe { libc::shm_unlink(path.as_ptr()) } == 0 {
            unlinked += 1;
        }
    }
    unlinked
}

#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission; nothing is delivered.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    // EPERM: the process exists but belongs to someone else.
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
