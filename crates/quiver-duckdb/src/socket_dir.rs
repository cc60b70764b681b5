//! The private directories that hold `launch:` workers' sockets: one per launch, only we can enter
//! it, named `quiver-<engine pid>-<n>-<hex>` so that the next engine can tell, and remove, the
//! directories of an engine that was killed before it could.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Private socket directories of dead engines removed per launch (the rest wait for the next).
pub const PRIVATE_DIRS_SWEEP_MAX: usize = 64;
/// Name prefix of the private socket directories.
const PRIVATE_DIR_PREFIX: &str = "quiver-";

/// A fresh directory only we can enter, for a launched worker's socket.
pub(crate) fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = private_dir_base();
    sweep_dead_private_dirs(&base);
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!(
            "{PRIVATE_DIR_PREFIX}{}-{n}-{nanos:x}",
            std::process::id()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "cannot create a private socket directory",
    ))
}

/// Where private socket directories are made: `$XDG_RUNTIME_DIR`, else the temp directory.
fn private_dir_base() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir)
}

/// The engine pid a private directory's name carries (`quiver-<pid>-<n>-<hex>`), if it is one.
fn private_dir_owner(name: &str) -> Option<i32> {
    let mut parts = name.strip_prefix(PRIVATE_DIR_PREFIX)?.split('-');
    let pid = parts.next()?.parse::<i32>().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    u64::from_str_radix(parts.next()?, 16).ok()?;
    parts.next().is_none().then_some(pid)
}

/// Removes (up to [`PRIVATE_DIRS_SWEEP_MAX`]) private socket directories of ours whose engine is
/// dead: one killed before it could remove them. Its workers died with it (parent-death signal);
/// a socket file they could not remove (SIGKILL) is all that is left.
fn sweep_dead_private_dirs(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dead = entries
        .flatten()
        .filter(|entry| {
            private_dir_owner(&entry.file_name().to_string_lossy())
                .is_some_and(|pid| !quiver_process::pid_alive(pid))
        })
        .filter(|entry| {
            entry
                .path()
                .symlink_metadata()
                .is_ok_and(|m| m.is_dir() && m.uid() == uid)
        })
        .take(PRIVATE_DIRS_SWEEP_MAX);
    for entry in dead {
        let _ = std::fs::remove_file(entry.path().join("worker.sock"));
        let _ = std::fs::remove_dir(entry.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_name_their_engine() {
        assert_eq!(private_dir_owner("quiver-123-0-1f"), Some(123));
        assert_eq!(private_dir_owner("quiver-vgi-1000"), None);
        assert_eq!(private_dir_owner("quiver-demo-77"), None);
        assert_eq!(private_dir_owner("quiver-1-2-3-4"), None);
    }

    #[test]
    fn a_dead_engines_private_dir_is_swept() {
        let base = std::env::temp_dir().join(format!("quiver-sweep-test-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        // A pid above the kernel's pid_max limit (4194304) never runs.
        let dead = base.join("quiver-4194305-0-ab");
        let alive = base.join(format!("quiver-{}-0-cd", std::process::id()));
        for dir in [&dead, &alive] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("worker.sock"), b"").unwrap();
        }
        sweep_dead_private_dirs(&base);
        assert!(!dead.exists(), "a dead engine's directory is removed");
        assert!(
            alive.join("worker.sock").exists(),
            "a live engine's is kept"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
