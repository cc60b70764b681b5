//! The sidecar, `<state>/snapshots.json`: per dataset, the current and previous snapshot (table,
//! snapshot id, manifest checksum, ...) so a restarted gateway serves the tables already in the
//! server's database file instead of materializing them again. Written atomically (a temporary
//! file, fsync, rename): a crash leaves the old sidecar or the new one, never half of either.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The sidecar's file name in the state directory.
pub const SIDECAR_FILE: &str = "snapshots.json";
/// The layout version; a sidecar of another version is ignored (everything re-materializes).
pub const SIDECAR_VERSION: u32 = 1;
/// The largest sidecar read.
const SIDECAR_BYTES_MAX: u64 = 64 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    pub version: u32,
    pub datasets: BTreeMap<String, SidecarDataset>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarDataset {
    /// The SHA-256 of the dataset's declared schema: tables built for another schema are not
    /// restored.
    pub schema_sha256: String,
    pub current: Option<SidecarSnapshot>,
    pub previous: Option<SidecarSnapshot>,
    /// The snapshot id a rollback moved away from: refreshes do not bring it back.
    pub rolled_back_from: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarSnapshot {
    /// The table's unquoted name on the server.
    pub table: String,
    pub snapshot_id: String,
    pub manifest_sha256: String,
    pub watermark: Option<String>,
    pub watermark_unix: Option<i64>,
    pub row_count: u64,
    pub files_relation: String,
    pub materialized_at_unix: u64,
    /// Downloaded parts (object storage), removed with the snapshot.
    pub parts_dir: Option<PathBuf>,
}

impl Sidecar {
    /// The sidecar in `state_dir`; an absent, unreadable or foreign one reads as empty, with the
    /// reason (the tables it named are then rebuilt, never trusted).
    pub fn read(state_dir: &Path) -> (Sidecar, Option<String>) {
        let path = state_dir.join(SIDECAR_FILE);
        let empty = Sidecar {
            version: SIDECAR_VERSION,
            datasets: BTreeMap::new(),
        };
        let bytes = match std::fs::metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return (empty, None),
            Err(error) => return (empty, Some(format!("{}: {error}", path.display()))),
            Ok(meta) if meta.len() > SIDECAR_BYTES_MAX => {
                return (empty, Some(format!("{}: too large", path.display())))
            }
            Ok(_) => match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(error) => return (empty, Some(format!("{}: {error}", path.display()))),
            },
        };
        match serde_json::from_slice::<Sidecar>(&bytes) {
            Ok(sidecar) if sidecar.version == SIDECAR_VERSION => (sidecar, None),
            Ok(sidecar) => (
                empty,
                Some(format!(
                    "{}: version {} ignored",
                    path.display(),
                    sidecar.version
                )),
            ),
            Err(error) => (empty, Some(format!("{}: {error}", path.display()))),
        }
    }

    /// Writes the sidecar atomically into `state_dir`.
    pub fn write(&self, state_dir: &Path) -> std::io::Result<()> {
        assert_eq!(self.version, SIDECAR_VERSION);
        let path = state_dir.join(SIDECAR_FILE);
        let temporary = state_dir.join(format!("{SIDECAR_FILE}.tmp"));
        let bytes = serde_json::to_vec_pretty(self).expect("the sidecar serializes");
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, &path)?;
        // The rename is durable once the directory is synced.
        std::fs::File::open(state_dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("quiver-sidecar-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_written_sidecar_reads_back() {
        let dir = scratch("roundtrip");
        let mut sidecar = Sidecar {
            version: SIDECAR_VERSION,
            ..Sidecar::default()
        };
        sidecar.datasets.insert(
            "usage".into(),
            SidecarDataset {
                schema_sha256: "ab".into(),
                current: Some(SidecarSnapshot {
                    table: "snap__usage__3".into(),
                    snapshot_id: "s3".into(),
                    manifest_sha256: "cd".into(),
                    watermark: None,
                    watermark_unix: None,
                    row_count: 7,
                    files_relation: "(SELECT 1)".into(),
                    materialized_at_unix: 1,
                    parts_dir: None,
                }),
                previous: None,
                rolled_back_from: Some("s4".into()),
            },
        );
        sidecar.write(&dir).unwrap();
        assert_eq!(Sidecar::read(&dir), (sidecar, None));
        assert!(!dir.join("snapshots.json.tmp").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_corrupt_sidecar_reads_as_empty_with_the_reason() {
        let dir = scratch("corrupt");
        std::fs::write(dir.join(SIDECAR_FILE), b"{\"version\": 1, \"datasets\": ").unwrap();
        let (sidecar, why) = Sidecar::read(&dir);
        assert!(sidecar.datasets.is_empty());
        assert!(why.is_some());
        let (missing, why) = Sidecar::read(&dir.join("nowhere"));
        assert!(missing.datasets.is_empty() && why.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
