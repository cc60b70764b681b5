//! Where a manifest and its parts are: a local file (parts relative to it or absolute; the
//! manifest and every part must resolve, `..` and symlinks followed, inside the project's
//! `data_roots`), or object storage (`s3://bucket/key`, through `object_store` with its
//! credentials and endpoint from the environment: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...).
//! Object-store parts are downloaded, bounded, into `<state>/parts/<dataset>/<snapshot_id>/`, so
//! the server reads local files (the server's DuckDB cannot install `httpfs` offline).

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::manifest::{Manifest, MANIFEST_BYTES_MAX};
use crate::project::SnapshotSource;

/// The largest part downloaded; a bigger one is refused before a byte is written.
pub const PART_BYTES_MAX: u64 = 16 << 30;
/// Bytes asked for per ranged read (the deadline is checked between them).
const DOWNLOAD_CHUNK_BYTES: u64 = 8 << 20;

/// A manifest's resolved location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManifestLocation {
    File(PathBuf),
    ObjectStore { bucket: String, key: String },
}

impl std::fmt::Display for ManifestLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestLocation::File(path) => write!(f, "{}", path.display()),
            ManifestLocation::ObjectStore { bucket, key } => write!(f, "s3://{bucket}/{key}"),
        }
    }
}

/// Resolves a dataset's manifest source against the project root.
pub fn locate(source: &SnapshotSource, root: &Path) -> Result<ManifestLocation, String> {
    match source {
        SnapshotSource::Manifest(path) => Ok(ManifestLocation::File(root.join(path))),
        SnapshotSource::ObjectStore(url) => {
            let rest = url
                .strip_prefix("s3://")
                .ok_or_else(|| format!("manifest '{url}': only s3:// URLs are supported"))?;
            let (bucket, key) = rest
                .split_once('/')
                .filter(|(bucket, key)| !bucket.is_empty() && !key.is_empty())
                .ok_or_else(|| format!("manifest '{url}': expected s3://bucket/key"))?;
            Ok(ManifestLocation::ObjectStore {
                bucket: bucket.into(),
                key: key.into(),
            })
        }
    }
}

/// The manifest's bytes (at most [`MANIFEST_BYTES_MAX`]); a local one only from inside
/// `data_roots`.
pub fn read_manifest(
    location: &ManifestLocation,
    data_roots: &[PathBuf],
) -> Result<Vec<u8>, String> {
    match location {
        ManifestLocation::File(path) => {
            let path = &confine(path, data_roots)
                .map_err(|why| format!("manifest {}: {why}", path.display()))?;
            let meta = std::fs::metadata(path)
                .map_err(|error| format!("manifest {}: {error}", path.display()))?;
            if meta.len() > MANIFEST_BYTES_MAX as u64 {
                return Err(format!(
                    "manifest {}: {} bytes, more than {MANIFEST_BYTES_MAX}",
                    path.display(),
                    meta.len()
                ));
            }
            std::fs::read(path).map_err(|error| format!("manifest {}: {error}", path.display()))
        }
        ManifestLocation::ObjectStore { bucket, key } => {
            let store = s3(bucket)?;
            let path = ObjectPath::from(key.as_str());
            block_on(async {
                let meta = store
                    .head(&path)
                    .await
                    .map_err(|e| format!("{location}: {e}"))?;
                if meta.size > MANIFEST_BYTES_MAX as u64 {
                    return Err(format!(
                        "{location}: {} bytes, more than {MANIFEST_BYTES_MAX}",
                        meta.size
                    ));
                }
                let bytes = store
                    .get_range(&path, 0..meta.size)
                    .await
                    .map_err(|e| format!("{location}: {e}"))?;
                Ok::<Vec<u8>, String>(bytes.to_vec())
            })?
        }
    }
}

/// The local files of a manifest's parts, in its order: local parts resolved and checked,
/// object-store parts downloaded into `parts_dir`. Every missing part is reported at once.
pub fn local_parts(
    location: &ManifestLocation,
    manifest: &Manifest,
    parts_dir: &Path,
    deadline: Instant,
    data_roots: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    match location {
        ManifestLocation::File(path) => resolve_local(path, manifest, data_roots),
        ManifestLocation::ObjectStore { bucket, key } => {
            download(bucket, key, manifest, parts_dir, deadline)
        }
    }
}

fn resolve_local(
    manifest_path: &Path,
    manifest: &Manifest,
    data_roots: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let manifest_path = confine(manifest_path, data_roots)?;
    let base = manifest_path.parent().unwrap_or(Path::new("."));
    let mut problems = Vec::new();
    let mut files = Vec::with_capacity(manifest.files.len());
    for (index, part) in manifest.files.iter().enumerate() {
        let checked = confine(&base.join(&part.path), data_roots);
        match checked.and_then(|path| match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok((meta, path)),
            Ok(_) => Err("is not a file".into()),
            Err(_) => Err("is missing".into()),
        }) {
            Ok((meta, path)) => {
                if let Some(expected) = part.size_bytes.filter(|size| *size != meta.len()) {
                    problems.push(format!(
                        "files[{index}].size_bytes: the manifest says {expected}, {} has {}",
                        part.path,
                        meta.len()
                    ));
                }
                files.push(path);
            }
            Err(why) => problems.push(format!("files[{index}].path: {} {why}", part.path)),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems.join("; "))
    }
}

/// `path` with symlinks resolved, if it exists and lies inside one of `data_roots`.
pub fn confine(path: &Path, data_roots: &[PathBuf]) -> Result<PathBuf, String> {
    let resolved = std::fs::canonicalize(path).map_err(|_| "is missing".to_string())?;
    let inside = data_roots
        .iter()
        .any(|root| std::fs::canonicalize(root).is_ok_and(|root| resolved.starts_with(root)));
    if inside {
        Ok(resolved)
    } else {
        Err("resolves outside the project's data roots (gateway: data_roots)".into())
    }
}

fn download(
    bucket: &str,
    manifest_key: &str,
    manifest: &Manifest,
    parts_dir: &Path,
    deadline: Instant,
) -> Result<Vec<PathBuf>, String> {
    let prefix = manifest_key.rsplit_once('/').map(|(prefix, _)| prefix);
    let mut keys = Vec::with_capacity(manifest.files.len());
    for (index, part) in manifest.files.iter().enumerate() {
        keys.push(
            part_key(prefix, &part.path).map_err(|why| format!("files[{index}].path: {why}"))?,
        );
    }
    std::fs::create_dir_all(parts_dir)
        .map_err(|error| format!("cannot create {}: {error}", parts_dir.display()))?;
    let store = s3(bucket)?;
    let mut files = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        let part = &manifest.files[index];
        let target = parts_dir.join(format!("part-{index:06}.{}", part.format.as_str()));
        let at = format!("files[{index}] (s3://{bucket}/{key})");
        block_on(download_one(
            &store,
            key,
            &target,
            part.size_bytes,
            deadline,
        ))?
        .map_err(|why| format!("{at}: {why}"))?;
        files.push(target);
    }
    Ok(files)
}

/// The key of a part: its path under the manifest's prefix; no absolute paths, no `..`.
fn part_key(prefix: Option<&str>, path: &str) -> Result<String, String> {
    if path.starts_with('/') || path.contains("://") {
        return Err(format!("'{path}' must be relative to the manifest"));
    }
    if path
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(format!("'{path}' may not hold empty, '.' or '..' segments"));
    }
    Ok(match prefix {
        Some(prefix) => format!("{prefix}/{path}"),
        None => path.to_string(),
    })
}

async fn download_one(
    store: &dyn ObjectStore,
    key: &str,
    target: &Path,
    expected_bytes: Option<u64>,
    deadline: Instant,
) -> Result<(), String> {
    let path = ObjectPath::from(key);
    let size = store.head(&path).await.map_err(|e| e.to_string())?.size;
    if size > PART_BYTES_MAX {
        return Err(format!(
            "{size} bytes, more than the limit of {PART_BYTES_MAX}"
        ));
    }
    if let Some(expected) = expected_bytes.filter(|expected| *expected != size) {
        return Err(format!(
            "the manifest says {expected} bytes, the object has {size}"
        ));
    }
    // A part downloaded whole by an earlier attempt is kept (a rename made it).
    if std::fs::metadata(target)
        .map(|meta| meta.len() == size)
        .unwrap_or(false)
    {
        return Ok(());
    }
    let partial = target.with_extension("partial");
    let written = write_ranges(store, &path, size, &partial, deadline).await;
    match written.and_then(|()| std::fs::rename(&partial, target).map_err(|e| e.to_string())) {
        Ok(()) => Ok(()),
        Err(why) => {
            let _ = std::fs::remove_file(&partial);
            Err(why)
        }
    }
}

async fn write_ranges(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    size: u64,
    partial: &Path,
    deadline: Instant,
) -> Result<(), String> {
    let mut file = std::fs::File::create(partial).map_err(|e| e.to_string())?;
    let mut start = 0;
    while start < size {
        if Instant::now() >= deadline {
            return Err("the download ran past the materialize budget".into());
        }
        let range: Range<u64> = start..size.min(start + DOWNLOAD_CHUNK_BYTES);
        let bytes = store
            .get_range(path, range.clone())
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(
            bytes.len() as u64,
            range.end - range.start,
            "a ranged read's length"
        );
        file.write_all(&bytes).map_err(|e| e.to_string())?;
        start = range.end;
    }
    file.sync_all().map_err(|e| e.to_string())
}

fn s3(bucket: &str) -> Result<Box<dyn ObjectStore>, String> {
    AmazonS3Builder::from_env()
        .with_url(format!("s3://{bucket}"))
        .build()
        .map(|store| Box::new(store) as Box<dyn ObjectStore>)
        .map_err(|error| format!("object storage for s3://{bucket}: {error}"))
}

/// Runs an object-store future on a runtime of its own: callers are materialize threads, never
/// inside the serving runtime.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start an I/O runtime: {error}"))?;
    Ok(runtime.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_store_urls_split_into_bucket_and_key() {
        let source = SnapshotSource::ObjectStore("s3://bucket/a/b/manifest.json".into());
        assert_eq!(
            locate(&source, Path::new("/p")).unwrap(),
            ManifestLocation::ObjectStore {
                bucket: "bucket".into(),
                key: "a/b/manifest.json".into()
            }
        );
        for bad in ["s3://bucket", "s3:///key", "gs://bucket/key"] {
            let source = SnapshotSource::ObjectStore(bad.into());
            assert!(locate(&source, Path::new("/p")).is_err(), "{bad}");
        }
    }

    #[test]
    fn part_keys_stay_under_the_manifest_prefix() {
        assert_eq!(
            part_key(Some("a/b"), "p/1.parquet").unwrap(),
            "a/b/p/1.parquet"
        );
        assert_eq!(part_key(None, "1.parquet").unwrap(), "1.parquet");
        for bad in ["../x.parquet", "/x.parquet", "a//b", "s3://other/x", "./x"] {
            assert!(part_key(Some("a"), bad).is_err(), "{bad}");
        }
    }
}
