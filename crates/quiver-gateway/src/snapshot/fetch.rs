//! Where a manifest and its parts are: a local file (parts relative to it or absolute; the
//! manifest and every part must resolve, `..` and symlinks followed, inside the project's
//! `data_roots`), or object storage (`s3://bucket/key`, through `object_store` with its
//! credentials and endpoint from the environment: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...).
//! Any manifest may also name a part by URL, as offloader's may: `s3://`, `gs://` (or `gcs://`,
//! credentials from `GOOGLE_*`), `http://` or `https://` (public objects or signed URLs, query
//! string kept); `az://`, `azure://` and `r2://` are refused by name. Object-store parts are
//! downloaded, bounded in size and by the materialize budget, into
//! `<state>/parts/<dataset>/<snapshot_id>/`, so the server reads local files (the server's DuckDB
//! cannot install `httpfs` offline).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};

use super::manifest::{Manifest, MANIFEST_BYTES_MAX};
use crate::project::SnapshotSource;

/// The largest part downloaded; a bigger one is refused before a byte is written.
pub const PART_BYTES_MAX: u64 = 16 << 30;

/// How long a part's host may take to accept a connection, and how long retries of one request
/// may go on (a part's download is bounded by the materialize budget besides).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const RETRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
const RETRIES_MAX: usize = 2;

/// A part named by URL: the store that reads it and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartUrl {
    S3 {
        bucket: String,
        key: String,
    },
    Gcs {
        bucket: String,
        key: String,
    },
    /// The whole URL, query string included (a signed URL's signature is there).
    Http {
        url: String,
    },
}

impl std::fmt::Display for PartUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartUrl::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
            PartUrl::Gcs { bucket, key } => write!(f, "gs://{bucket}/{key}"),
            PartUrl::Http { url } => f.write_str(url),
        }
    }
}

/// `Some` when a part's path is a URL (offloader's schemes, any case): what it names, or why it
/// cannot be read. `None`: a path (local, or a key next to an object-store manifest).
pub fn part_url(path: &str) -> Option<Result<PartUrl, String>> {
    let (scheme, rest) = path.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let bucket_key = |what: &str| {
        rest.split_once('/')
            .filter(|(bucket, key)| !bucket.is_empty() && !key.is_empty())
            .map(|(bucket, key)| (bucket.to_string(), key.to_string()))
            .ok_or_else(|| format!("'{path}': expected {what}://bucket/key"))
    };
    Some(match scheme.as_str() {
        "s3" => bucket_key("s3").map(|(bucket, key)| PartUrl::S3 { bucket, key }),
        "gs" | "gcs" => bucket_key("gs").map(|(bucket, key)| PartUrl::Gcs { bucket, key }),
        "http" | "https" if !rest.is_empty() && !rest.starts_with('/') => Ok(PartUrl::Http {
            url: format!("{scheme}://{rest}"),
        }),
        "http" | "https" => Err(format!("'{path}': expected {scheme}://host/path")),
        "az" | "azure" | "r2" => Err(format!(
            "'{path}': {scheme}:// parts are not supported (s3, gs, gcs, http and https are)"
        )),
        _ => return None,
    })
}

/// The store that reads `url`, and the object's path in it.
fn part_store(url: &PartUrl) -> Result<(Box<dyn ObjectStore>, ObjectPath), String> {
    use_ring_for_tls();
    let options = ClientOptions::new().with_connect_timeout(CONNECT_TIMEOUT);
    let store: Box<dyn ObjectStore> = match url {
        PartUrl::S3 { bucket, .. } => s3(bucket)?,
        PartUrl::Gcs { bucket, .. } => gcs(bucket)?,
        PartUrl::Http { url } => Box::new(
            HttpBuilder::new()
                .with_url(url)
                .with_retry(retry_config())
                .with_client_options(options.with_allow_http(url.starts_with("http://")))
                .build()
                .map_err(|error| format!("{url}: {error}"))?,
        ),
    };
    let path = match url {
        PartUrl::S3 { key, .. } | PartUrl::Gcs { key, .. } => ObjectPath::from(key.as_str()),
        // The store's URL is the object's: nothing is appended (the query string stays last).
        PartUrl::Http { .. } => ObjectPath::default(),
    };
    Ok((store, path))
}

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
/// object-store parts and parts named by URL downloaded into `parts_dir` (which the caller
/// gives whenever a part is downloaded). Every problem is reported at once.
pub fn local_parts(
    location: &ManifestLocation,
    manifest: &Manifest,
    parts_dir: &Path,
    deadline: Instant,
    data_roots: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let manifest_dir = match location {
        ManifestLocation::File(path) => Some(confine(path, data_roots)?),
        ManifestLocation::ObjectStore { .. } => None,
    };
    let mut problems = Vec::new();
    let mut files = Vec::with_capacity(manifest.files.len());
    for (index, part) in manifest.files.iter().enumerate() {
        let target = parts_dir.join(format!("part-{index:06}.{}", part.format.as_str()));
        let file = match (part_url(&part.path), location, &manifest_dir) {
            (Some(url), _, _) => url
                .map_err(|why| format!("files[{index}].path: {why}"))
                .and_then(|url| {
                    download(&url, &target, part.size_bytes, deadline)
                        .map_err(|why| format!("files[{index}] ({url}): {why}"))
                }),
            (None, ManifestLocation::File(_), Some(manifest_path)) => {
                local_part(manifest_path, index, part, data_roots)
            }
            (None, ManifestLocation::ObjectStore { bucket, key }, _) => {
                let prefix = key.rsplit_once('/').map(|(prefix, _)| prefix);
                part_key(prefix, &part.path)
                    .map_err(|why| format!("files[{index}].path: {why}"))
                    .and_then(|key| {
                        let url = PartUrl::S3 {
                            bucket: bucket.clone(),
                            key,
                        };
                        download(&url, &target, part.size_bytes, deadline)
                            .map_err(|why| format!("files[{index}] ({url}): {why}"))
                    })
            }
            (None, ManifestLocation::File(_), None) => unreachable!("a file manifest is confined"),
        };
        match file {
            Ok(file) => files.push(file),
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems.join("; "))
    }
}

/// What `check` can know of a manifest's parts without the network: local parts resolved as
/// serving resolves them, URLs parsed (not fetched).
pub fn check_parts(
    location: &ManifestLocation,
    manifest: &Manifest,
    data_roots: &[PathBuf],
) -> Result<(), String> {
    let ManifestLocation::File(path) = location else {
        return Ok(());
    };
    let manifest_path = confine(path, data_roots)?;
    let problems: Vec<String> = manifest
        .files
        .iter()
        .enumerate()
        .filter_map(|(index, part)| match part_url(&part.path) {
            Some(url) => url.err().map(|why| format!("files[{index}].path: {why}")),
            None => local_part(&manifest_path, index, part, data_roots).err(),
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A local part of the manifest at `manifest_path` (resolved already), confined and checked.
fn local_part(
    manifest_path: &Path,
    index: usize,
    part: &super::manifest::Part,
    data_roots: &[PathBuf],
) -> Result<PathBuf, String> {
    let base = manifest_path.parent().unwrap_or(Path::new("."));
    let checked = confine(&base.join(&part.path), data_roots);
    let (meta, path) = checked
        .and_then(|path| match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok((meta, path)),
            Ok(_) => Err("is not a file".into()),
            Err(_) => Err("is missing".into()),
        })
        .map_err(|why| format!("files[{index}].path: {} {why}", part.path))?;
    if let Some(expected) = part.size_bytes.filter(|size| *size != meta.len()) {
        return Err(format!(
            "files[{index}].size_bytes: the manifest says {expected}, {} has {}",
            part.path,
            meta.len()
        ));
    }
    Ok(path)
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

/// Downloads the part at `url` to `target`, within `deadline` (each request, and the whole).
fn download(
    url: &PartUrl,
    target: &Path,
    expected_bytes: Option<u64>,
    deadline: Instant,
) -> Result<PathBuf, String> {
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    }
    let (store, path) = part_store(url)?;
    let left = deadline.saturating_duration_since(Instant::now());
    // The timer is made inside the runtime that drives it.
    let bounded = async {
        tokio::time::timeout(
            left,
            download_one(store.as_ref(), &path, target, expected_bytes, deadline),
        )
        .await
    };
    match block_on(bounded)? {
        Ok(result) => result.map(|()| target.to_path_buf()),
        Err(_elapsed) => Err("the download ran past the materialize budget".into()),
    }
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
    path: &ObjectPath,
    target: &Path,
    expected_bytes: Option<u64>,
    deadline: Instant,
) -> Result<(), String> {
    let size = store.head(path).await.map_err(|e| describe(&e))?.size;
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
    let written = write_stream(store, path, size, &partial, deadline).await;
    match written.and_then(|()| std::fs::rename(&partial, target).map_err(|e| e.to_string())) {
        Ok(()) => Ok(()),
        Err(why) => {
            let _ = std::fs::remove_file(&partial);
            Err(why)
        }
    }
}

/// Streams the object into `partial` (one request: a plain HTTP server need not answer ranges),
/// checking the deadline between chunks and never writing more than its announced size.
async fn write_stream(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    size: u64,
    partial: &Path,
    deadline: Instant,
) -> Result<(), String> {
    let mut file = std::fs::File::create(partial).map_err(|e| e.to_string())?;
    let mut stream = store
        .get(path)
        .await
        .map_err(|e| describe(&e))?
        .into_stream();
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        if Instant::now() >= deadline {
            return Err("the download ran past the materialize budget".into());
        }
        let chunk = chunk.map_err(|e| describe(&e))?;
        written += chunk.len() as u64;
        if written > size {
            return Err(format!("the object sent more than its {size} bytes"));
        }
        file.write_all(&chunk).map_err(|e| e.to_string())?;
    }
    if written != size {
        return Err(format!("the object sent {written} of its {size} bytes"));
    }
    file.sync_all().map_err(|e| e.to_string())
}

/// An object store's error with its causes: object_store's own message ends at "error sending
/// request", while what a user can act on (a refused connection, an untrusted certificate) is in
/// the chain below it.
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

/// object_store's HTTPS client (reqwest without a crypto provider of its own, so that ring stays the
/// workspace's one provider) takes the process default: ring's, installed before any store is built.
/// An Err only says a default is installed already.
fn use_ring_for_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub(crate) fn s3(bucket: &str) -> Result<Box<dyn ObjectStore>, String> {
    use_ring_for_tls();
    AmazonS3Builder::from_env()
        .with_url(format!("s3://{bucket}"))
        .build()
        .map(|store| Box::new(store) as Box<dyn ObjectStore>)
        .map_err(|error| format!("object storage for s3://{bucket}: {error}"))
}

pub(crate) fn gcs(bucket: &str) -> Result<Box<dyn ObjectStore>, String> {
    use_ring_for_tls();
    GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_retry(retry_config())
        .with_client_options(ClientOptions::new().with_connect_timeout(CONNECT_TIMEOUT))
        .build()
        .map(|store| Box::new(store) as Box<dyn ObjectStore>)
        .map_err(|error| format!("object storage for gs://{bucket}: {error}"))
}

fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: RETRIES_MAX,
        retry_timeout: RETRY_TIMEOUT,
    }
}

/// Runs an object-store future on a runtime of its own: callers are materialize threads, never
/// inside the serving runtime.
pub(crate) fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
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

    #[test]
    fn part_urls_name_their_store_or_why_not() {
        let parsed = |path: &str| part_url(path).map(|url| url.map(|url| url.to_string()));
        assert_eq!(
            parsed("s3://b/a/p.parquet"),
            Some(Ok("s3://b/a/p.parquet".into()))
        );
        assert_eq!(parsed("GS://b/p.csv"), Some(Ok("gs://b/p.csv".into())));
        assert_eq!(
            part_url("gcs://b/k/p.csv"),
            Some(Ok(PartUrl::Gcs {
                bucket: "b".into(),
                key: "k/p.csv".into()
            }))
        );
        assert_eq!(
            parsed("https://host:8443/p.parquet?X-Goog-Signature=ab%2Fc"),
            Some(Ok(
                "https://host:8443/p.parquet?X-Goog-Signature=ab%2Fc".into()
            ))
        );
        for refused in ["az://c/p", "azure://c/p", "r2://b/p"] {
            let why = parsed(refused).unwrap().unwrap_err();
            assert!(why.contains("not supported"), "{why}");
        }
        for malformed in ["gs://bucket", "s3:///key", "https:///p", "http://"] {
            assert!(parsed(malformed).unwrap().is_err(), "{malformed}");
        }
        for local in [
            "p.parquet",
            "../data/p.csv",
            "/abs/p.csv",
            "file.csv?x=y://z",
        ] {
            assert_eq!(parsed(local), None, "{local}");
        }
    }
}
