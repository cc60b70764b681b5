//! A work counter shared between processes: a 24-byte file named by the
//! execution id, updated under `flock`.
//!
//! On stdio every engine connection is its own worker process, so the "shared
//! counter" of a parallel scan cannot live in memory. Each claim is one lock,
//! one 16-byte read and one 8-byte write: a few microseconds per batch, against
//! milliseconds of work per batch.
//!
//! Layout: `b"QVGIWORK"`, next unit (u64 LE), total units (u64 LE).

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::limits::WORK_FILES_SWEEP_MAX;

const MAGIC: &[u8; 8] = b"QVGIWORK";
const FILE_BYTES: usize = 24;
/// A work file untouched this long belongs to a process that died mid-scan.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The directory holding work files: private to this user.
pub fn default_dir() -> PathBuf {
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(runtime).join("quiver-vgi");
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("quiver-vgi-{uid}"))
}

/// One execution's counter file, open.
pub struct WorkFile {
    file: File,
    path: PathBuf,
}

impl WorkFile {
    /// Creates the counter of a new execution (`name` is the hex execution id).
    pub fn create(dir: &Path, name: &str, total_units: u64) -> io::Result<WorkFile> {
        ensure_private_dir(dir)?;
        sweep_stale(dir);
        let path = dir.join(format!("{name}.work"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let mut bytes = [0u8; FILE_BYTES];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[16..].copy_from_slice(&total_units.to_le_bytes());
        file.write_all_at(&bytes, 0)?;
        Ok(WorkFile { file, path })
    }

    /// Opens the counter of a running execution; `None` if it is gone (the
    /// execution finished or was abandoned: there is no work left to claim).
    pub fn open(dir: &Path, name: &str) -> io::Result<Option<WorkFile>> {
        let path = dir.join(format!("{name}.work"));
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => Ok(Some(WorkFile { file, path })),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Claims up to `units_max` units; `None` when the work is done.
    pub fn claim(&self, units_max: u64) -> io::Result<Option<Range<u64>>> {
        assert!(units_max > 0, "a claim takes at least one unit");
        let _lock = Flock::exclusive(&self.file)?;
        let mut bytes = [0u8; FILE_BYTES];
        self.file.read_exact_at(&mut bytes, 0)?;
        if &bytes[..8] != MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a quiver work file",
            ));
        }
        let next = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let total = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
        if next >= total {
            return Ok(None);
        }
        let end = next.saturating_add(units_max).min(total);
        self.file.write_all_at(&end.to_le_bytes(), 8)?;
        Ok(Some(next..end))
    }

    /// Removes the file: later joiners see the execution as finished. Open
    /// handles keep working (POSIX unlink semantics).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(error) => Err(error),
    }
}

/// Removes a bounded number of work files older than [`STALE_AFTER`]: those of
/// worker processes killed before they could clean up.
fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let stale = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".work"))
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| {
                    now.duration_since(modified).unwrap_or_default() > STALE_AFTER
                })
        })
        .take(WORK_FILES_SWEEP_MAX);
    for entry in stale {
        let _ = std::fs::remove_file(entry.path());
    }
}

/// An exclusive `flock`, released on drop.
struct Flock<'f> {
    file: &'f File,
}

impl<'f> Flock<'f> {
    fn exclusive(file: &'f File) -> io::Result<Flock<'f>> {
        loop {
            // SAFETY: flock on a descriptor this File owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Flock { file });
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor locked in `exclusive`.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("quiver-vgi-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn claims_split_the_work_exactly_once() {
        let dir = temp_dir("claims");
        let primary = WorkFile::create(&dir, "abc", 10).unwrap();
        let secondary = WorkFile::open(&dir, "abc").unwrap().unwrap();
        assert_eq!(primary.claim(4).unwrap(), Some(0..4));
        assert_eq!(secondary.claim(4).unwrap(), Some(4..8));
        assert_eq!(primary.claim(4).unwrap(), Some(8..10));
        assert_eq!(secondary.claim(4).unwrap(), None);
        primary.remove();
        assert!(WorkFile::open(&dir, "abc").unwrap().is_none());
        // An open handle still answers after the file is unlinked.
        assert_eq!(secondary.claim(1).unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn claims_from_many_threads_cover_every_unit_once() {
        let dir = temp_dir("threads");
        let total = 10_000u64;
        let first = WorkFile::create(&dir, "x", total).unwrap();
        let seen: Vec<Range<u64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let dir = dir.clone();
                    scope.spawn(move || {
                        let file = WorkFile::open(&dir, "x").unwrap().unwrap();
                        let mut ranges = Vec::new();
                        while let Some(range) = file.claim(7).unwrap() {
                            ranges.push(range);
                        }
                        ranges
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let covered: u64 = seen.iter().map(|r| r.end - r.start).sum();
        assert_eq!(covered, total);
        let mut starts: Vec<u64> = seen.iter().map(|r| r.start).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), seen.len());
        first.remove();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
