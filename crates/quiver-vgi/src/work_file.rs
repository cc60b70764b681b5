//! A work counter shared between processes: a 24-byte file named by the
//! execution id, updated under `flock`.
//!
//! On stdio every engine connection is its own worker process, so the "shared
//! counter" of a parallel scan cannot live in memory. Each claim is one lock,
//! one 16-byte read and one 8-byte write: a few microseconds per batch, against
//! milliseconds of work per batch.
//!
//! Layout: `b"QVGIWORK"`, next unit (u64 LE), total units (u64 LE), the creating process's pid
//! (u32 LE), 4 reserved bytes.
//!
//! Removal on every exit path: the creator removes the file when the execution finishes or its
//! handle drops, and while the file exists it is in the process's cleanup registry
//! (`quiver-process`'s `cleanup.rs`), so SIGTERM (a launcher that died sends it through the
//! parent-death signal) and `exit` remove it too. What SIGKILL leaves is swept by the next
//! creation in the same directory: the owner pid inside tells a dead owner's file at once (the
//! name cannot carry it: joiners find the file by execution id alone), and files untouched for an
//! hour go too (a pid reused since).

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use quiver_process::cleanup;

use crate::limits::WORK_FILES_SWEEP_MAX;

const MAGIC: &[u8; 8] = b"QVGIWORK";
/// Bytes of the counter: magic, next, total.
const COUNTER_BYTES: usize = 24;
/// Where the creator's pid is.
const OWNER_PID_OFFSET: usize = 24;
const FILE_BYTES: usize = 32;
/// Work files looked at per sweep (removed or not), so a crowded directory never stalls a scan.
const SWEEP_SCAN_MAX: usize = 4 * WORK_FILES_SWEEP_MAX;
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
    /// The creator's entry in the cleanup registry while the file exists; `None` for joiners.
    cleanup: Mutex<Option<cleanup::Registration>>,
    creator: bool,
}

impl WorkFile {
    /// Creates the counter of a new execution (`name` is the hex execution id).
    pub fn create(dir: &Path, name: &str, total_units: u64) -> io::Result<WorkFile> {
        ensure_private_dir(dir)?;
        sweep_abandoned(dir);
        let path = dir.join(format!("{name}.work"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        // Registered before the first byte is written: from here on no exit path leaves it.
        let registration = cleanup::register_file(&path).ok();
        let mut bytes = [0u8; FILE_BYTES];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[16..COUNTER_BYTES].copy_from_slice(&total_units.to_le_bytes());
        bytes[OWNER_PID_OFFSET..OWNER_PID_OFFSET + 4]
            .copy_from_slice(&std::process::id().to_le_bytes());
        let work_file = WorkFile {
            file,
            path,
            cleanup: Mutex::new(registration),
            creator: true,
        };
        work_file.file.write_all_at(&bytes, 0)?;
        Ok(work_file)
    }

    /// Opens the counter of a running execution; `None` if it is gone (the
    /// execution finished or was abandoned: there is no work left to claim).
    pub fn open(dir: &Path, name: &str) -> io::Result<Option<WorkFile>> {
        let path = dir.join(format!("{name}.work"));
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => Ok(Some(WorkFile {
                file,
                path,
                cleanup: Mutex::new(None),
                creator: false,
            })),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Claims up to `units_max` units; `None` when the work is done.
    pub fn claim(&self, units_max: u64) -> io::Result<Option<Range<u64>>> {
        assert!(units_max > 0, "a claim takes at least one unit");
        let _lock = Flock::exclusive(&self.file)?;
        let mut bytes = [0u8; COUNTER_BYTES];
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
        let registration = self.cleanup.lock().expect("cleanup lock").take();
        if let Some(registration) = registration {
            cleanup::unregister(registration);
        }
    }
}

impl Drop for WorkFile {
    /// The creator's file goes with its handle, whatever path the execution ended by.
    fn drop(&mut self) {
        if self.creator {
            self.remove();
        }
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

/// Removes a bounded number of abandoned work files: those whose creator is dead (killed before
/// it could clean up), and those untouched for [`STALE_AFTER`].
fn sweep_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let abandoned = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".work"))
        .take(SWEEP_SCAN_MAX)
        .filter(|entry| owner_is_dead(&entry.path()) || untouched_since(entry, now, STALE_AFTER))
        .take(WORK_FILES_SWEEP_MAX);
    for entry in abandoned {
        let _ = std::fs::remove_file(entry.path());
    }
}

/// Whether the work file at `path` names a creator that no longer runs.
fn owner_is_dead(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut pid = [0u8; 4];
    if file
        .read_exact_at(&mut pid, OWNER_PID_OFFSET as u64)
        .is_err()
    {
        return false; // Still being written, or an older layout: left to the age rule.
    }
    let pid = u32::from_le_bytes(pid);
    pid != 0 && pid <= i32::MAX as u32 && !quiver_process::pid_alive(pid as i32)
}

fn untouched_since(entry: &std::fs::DirEntry, now: SystemTime, limit: Duration) -> bool {
    entry
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|modified| now.duration_since(modified).unwrap_or_default() > limit)
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

    #[test]
    fn the_creator_registers_its_file_and_removes_it_on_drop() {
        let dir = temp_dir("drop");
        let file = WorkFile::create(&dir, "d", 3).unwrap();
        let path = dir.join("d.work").to_string_lossy().into_owned();
        assert!(cleanup::registered(cleanup::Kind::File).contains(&path));
        let joiner = WorkFile::open(&dir, "d").unwrap().unwrap();
        drop(joiner);
        assert!(dir.join("d.work").exists(), "a joiner leaves the file");
        drop(file);
        assert!(
            !dir.join("d.work").exists(),
            "the creator's drop removes it"
        );
        assert!(!cleanup::registered(cleanup::Kind::File).contains(&path));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_dead_creators_file_is_swept_at_the_next_create() {
        let dir = temp_dir("sweep");
        ensure_private_dir(&dir).unwrap();
        let mut orphan = [0u8; FILE_BYTES];
        orphan[..8].copy_from_slice(MAGIC);
        // A pid above the kernel's pid_max limit (4194304) never runs.
        orphan[OWNER_PID_OFFSET..OWNER_PID_OFFSET + 4].copy_from_slice(&4_194_305u32.to_le_bytes());
        std::fs::write(dir.join("orphan.work"), orphan).unwrap();
        let live = WorkFile::create(&dir, "live", 1).unwrap();
        let fresh = WorkFile::create(&dir, "fresh", 1).unwrap();
        assert!(
            !dir.join("orphan.work").exists(),
            "a dead creator's file is swept"
        );
        assert!(
            dir.join("live.work").exists(),
            "a live creator's file is kept"
        );
        drop((live, fresh));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
