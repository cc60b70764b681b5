//! A project kept in a bucket, as offloader's `OFFLOADER_CONFIG` may name one: `s3://bucket/prefix`
//! or `gs://bucket/prefix` (`gcs://` too). Every object under `prefix/` (the slash keeps a sibling
//! `prefix2/` out) is downloaded to the same relative path of a directory that is emptied first,
//! which is then loaded as a local project. Refused: no `.yml`/`.yaml` object, more than
//! [`OBJECTS_MAX`] objects or [`BYTES_MAX`] bytes, a key that would leave the directory, and
//! `http(s)://` projects (offloader refuses them too).

use std::path::{Path, PathBuf};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};

use crate::snapshot::fetch::{block_on, gcs, s3};

/// The most objects a project in a bucket may hold, and their most bytes (offloader's bounds).
pub const OBJECTS_MAX: usize = 500;
pub const BYTES_MAX: u64 = 32 << 20;

/// Where a project is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectSource {
    Directory(PathBuf),
    Bucket {
        /// `s3` or `gs`.
        scheme: &'static str,
        bucket: String,
        /// Without slashes at either end; empty: the whole bucket.
        prefix: String,
    },
}

impl std::fmt::Display for ProjectSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProjectSource::Directory(dir) => write!(f, "{}", dir.display()),
            ProjectSource::Bucket {
                scheme,
                bucket,
                prefix,
            } => write!(f, "{scheme}://{bucket}/{prefix}"),
        }
    }
}

/// Reads a project argument: a directory, or a bucket location.
pub fn parse(text: &str) -> Result<ProjectSource, String> {
    let Some((scheme, rest)) = text.split_once("://") else {
        return Ok(ProjectSource::Directory(PathBuf::from(text)));
    };
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "s3" => "s3",
        "gs" | "gcs" => "gs",
        other => {
            return Err(format!(
                "project '{text}': {other}:// is not supported (a directory, s3://bucket/prefix or gs://bucket/prefix)"
            ))
        }
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(format!(
            "project '{text}': expected {scheme}://bucket[/prefix]"
        ));
    }
    Ok(ProjectSource::Bucket {
        scheme,
        bucket: bucket.to_string(),
        prefix: prefix.trim_matches('/').to_string(),
    })
}

/// Downloads the project at `source` into `into` (emptied first) and returns `into`; a directory
/// is returned as it is.
pub fn materialize(source: &ProjectSource, into: &Path) -> Result<PathBuf, String> {
    match source {
        ProjectSource::Directory(dir) => Ok(dir.clone()),
        ProjectSource::Bucket {
            scheme,
            bucket,
            prefix,
        } => download(source, scheme, bucket, prefix, into),
    }
}

fn download(
    source: &ProjectSource,
    scheme: &str,
    bucket: &str,
    prefix: &str,
    into: &Path,
) -> Result<PathBuf, String> {
    let store = match scheme {
        "s3" => s3(bucket)?,
        _ => gcs(bucket)?,
    };
    let fail = |why: String| format!("project {source}: {why}");
    let objects = block_on(list(store.as_ref(), prefix))?.map_err(fail)?;
    let files = plan(&objects, prefix).map_err(fail)?;
    if into.exists() {
        std::fs::remove_dir_all(into)
            .map_err(|error| fail(format!("cannot empty {}: {error}", into.display())))?;
    }
    for (location, relative) in &files {
        let target = into.join(relative);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|error| fail(format!("cannot create {}: {error}", dir.display())))?;
        }
        let bytes = block_on(async { store.get(location).await?.bytes().await })?
            .map_err(|error| fail(format!("{location}: {error}")))?;
        std::fs::write(&target, &bytes)
            .map_err(|error| fail(format!("cannot write {}: {error}", target.display())))?;
    }
    Ok(into.to_path_buf())
}

/// What a change of the project's files changes (offloader's config-sync token): the sorted
/// (path, modification time, size) of its `.yml`/`.yaml` files, hashed; one listing for a bucket,
/// a walk of the directory (its hidden entries, the state directory among them, left out).
pub fn change_token(source: &ProjectSource) -> Result<String, String> {
    let mut entries: Vec<(String, i128, u64)> = match source {
        ProjectSource::Directory(dir) => {
            let mut found = Vec::new();
            walk_project_files(dir, dir, &mut found)
                .map_err(|error| format!("project {source}: {error}"))?;
            found
        }
        ProjectSource::Bucket {
            scheme,
            bucket,
            prefix,
        } => {
            let store = match *scheme {
                "s3" => s3(bucket)?,
                _ => gcs(bucket)?,
            };
            block_on(list(store.as_ref(), prefix))?
                .map_err(|why| format!("project {source}: {why}"))?
                .into_iter()
                .filter(|object| is_project_file(object.location.as_ref()))
                .map(|object| {
                    let modified = object.last_modified.timestamp_nanos_opt().unwrap_or(0);
                    (
                        object.location.to_string(),
                        i128::from(modified),
                        object.size,
                    )
                })
                .collect()
        }
    };
    entries.sort();
    let mut hasher = Sha256::new();
    for (path, modified, size) in &entries {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update(modified.to_le_bytes());
        hasher.update(size.to_le_bytes());
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// The most entries a project directory's walk visits (a bound on a token's cost).
const WALK_ENTRIES_MAX: usize = 20_000;

fn walk_project_files(
    root: &Path,
    dir: &Path,
    found: &mut Vec<(String, i128, u64)>,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| format!("cannot read {}: {error}", dir.display()))?;
    for entry in entries.flatten() {
        if found.len() >= WALK_ENTRIES_MAX {
            return Err(format!("more than {WALK_ENTRIES_MAX} project files"));
        }
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(metadata) = std::fs::metadata(&path) else {
            continue;
        };
        if metadata.is_dir() {
            walk_project_files(root, &path, found)?;
        } else if is_project_file(&name.to_string_lossy()) {
            let modified = metadata
                .modified()
                .ok()
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_nanos() as i128);
            let relative = path.strip_prefix(root).unwrap_or(&path);
            found.push((relative.display().to_string(), modified, metadata.len()));
        }
    }
    Ok(())
}

fn is_project_file(name: &str) -> bool {
    name.ends_with(".yml") || name.ends_with(".yaml")
}

/// Every object under `prefix/`, stopping one past the bound.
async fn list(store: &dyn ObjectStore, prefix: &str) -> Result<Vec<ObjectMeta>, String> {
    use futures_util::StreamExt;
    let under = (!prefix.is_empty()).then(|| ObjectPath::from(format!("{prefix}/")));
    let mut stream = store.list(under.as_ref());
    let mut objects = Vec::new();
    while let Some(object) = stream.next().await {
        objects.push(object.map_err(|error| crate::snapshot::fetch::describe(&error))?);
        if objects.len() > OBJECTS_MAX {
            return Err(format!("more than {OBJECTS_MAX} objects"));
        }
    }
    Ok(objects)
}

/// Each object's key and the relative path it is written to, once the whole listing is checked.
fn plan(objects: &[ObjectMeta], prefix: &str) -> Result<Vec<(ObjectPath, PathBuf)>, String> {
    let bytes: u64 = objects.iter().map(|object| object.size).sum();
    if bytes > BYTES_MAX {
        return Err(format!("{bytes} bytes, more than {BYTES_MAX}"));
    }
    let mut files = Vec::with_capacity(objects.len());
    for object in objects {
        let key = object.location.as_ref();
        let relative = if prefix.is_empty() {
            key
        } else {
            key.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(|| format!("{key} is not under {prefix}/"))?
        };
        let safe = !relative.is_empty()
            && !relative.starts_with('/')
            && relative
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !safe {
            return Err(format!("{key} would be written outside the project"));
        }
        files.push((object.location.clone(), PathBuf::from(relative)));
    }
    if !files.iter().any(|(_, path)| {
        path.extension()
            .is_some_and(|ext| ext == "yml" || ext == "yaml")
    }) {
        return Err("no project file (no .yml or .yaml object)".into());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(key: &str, size: u64) -> ObjectMeta {
        ObjectMeta {
            location: ObjectPath::from(key),
            last_modified: chrono::DateTime::from_timestamp(0, 0).unwrap(),
            size,
            e_tag: None,
            version: None,
        }
    }

    #[test]
    fn project_arguments_are_directories_or_buckets() {
        assert_eq!(
            parse("examples/gateway").unwrap(),
            ProjectSource::Directory("examples/gateway".into())
        );
        assert_eq!(
            parse("GCS://b/a/b/").unwrap(),
            ProjectSource::Bucket {
                scheme: "gs",
                bucket: "b".into(),
                prefix: "a/b".into()
            }
        );
        assert_eq!(parse("s3://b").unwrap().to_string(), "s3://b/");
        for refused in ["https://host/p", "http://h/p", "az://c/p", "s3:///p"] {
            assert!(parse(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_listing_is_checked_whole_before_anything_is_written() {
        let good = [object("p/offloader.yml", 10), object("p/data/m.json", 5)];
        let files = plan(&good, "p").unwrap();
        assert_eq!(files[1].1, PathBuf::from("data/m.json"));
        assert!(plan(&[object("p/data/m.json", 5)], "p")
            .unwrap_err()
            .contains("no project file"));
        assert!(plan(&[object("p/a.yml", BYTES_MAX + 1)], "p")
            .unwrap_err()
            .contains("bytes"));
        assert_eq!(
            plan(&[object("a.yml", 1)], "").unwrap()[0].1,
            PathBuf::from("a.yml")
        );
    }
}
