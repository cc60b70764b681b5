//! Snapshots from object storage: a manifest and parquet parts in a bucket of an S3-compatible
//! server (moto, from the repository's `.venv` or `QUIVER_MOTO_SERVER`) materialize, swap, and
//! clean up their downloaded parts; a missing object fails that refresh alone. One test in its own
//! binary: `object_store` reads its endpoint and credentials from the process environment, which
//! is set before anything else runs.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};
use quiver_gateway::project::SnapshotSource;
use quiver_gateway::snapshot::{RefreshOutcome, Snapshots};
use support::*;

const BUCKET: &str = "quiver-gateway-test";

/// A moto server on a free port, killed on drop.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_program() -> PathBuf {
    if let Some(path) = std::env::var_os("QUIVER_MOTO_SERVER") {
        return PathBuf::from(path);
    }
    let here = std::env::current_dir().unwrap();
    here.ancestors()
        .map(|dir| dir.join(".venv/bin/moto_server"))
        .find(|path| path.exists())
        .unwrap_or_else(|| {
            panic!(
                "no moto_server: install tools/requirements.txt into .venv (tools/setup.sh does) \
                 or set QUIVER_MOTO_SERVER"
            )
        })
}

fn start_moto() -> Moto {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(moto_program())
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let moto = Moto { child, port };
    let deadline = Instant::now() + WAIT_MAX;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto_server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    moto
}

/// `PUT /<bucket>`: object_store cannot create buckets.
fn create_bucket(port: u16) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "PUT /{BUCKET} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

fn put(key: &str, bytes: Vec<u8>) {
    // The gateway's object_store has no TLS provider of its own (ring is installed as the default).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = AmazonS3Builder::from_env()
        .with_url(format!("s3://{BUCKET}"))
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(store.put(&ObjectPath::from(key), PutPayload::from(bytes)))
        .unwrap();
}

fn put_file(key: &str, path: &Path) {
    put(key, std::fs::read(path).unwrap());
}

fn put_manifest(value: &serde_json::Value) {
    put("usage/manifest.json", serde_json::to_vec(value).unwrap());
}

#[test]
fn a_manifest_in_object_storage_materializes_and_its_parts_are_cleaned_up() {
    let moto = start_moto();
    for (key, value) in [
        (
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", moto.port),
        ),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_REGION", "us-east-1".into()),
    ] {
        std::env::set_var(key, value);
    }
    create_bucket(moto.port);

    let root = scratch("s3");
    let state = root.join("state");
    write_parquet(&root.join("a.parquet"), 3, true);
    write_parquet(&root.join("b.parquet"), 4, true);
    put_file("usage/parts/a.parquet", &root.join("a.parquet"));
    put_file("usage/parts/b.parquet", &root.join("b.parquet"));
    let id = "s3_usage";
    put_manifest(&manifest(
        id,
        "o1",
        &[
            ("parts/a.parquet", "parquet"),
            ("parts/b.parquet", "parquet"),
        ],
        "BIGINT",
    ));

    let backend = shared_backend();
    let source = SnapshotSource::ObjectStore(format!("s3://{BUCKET}/usage/manifest.json"));
    let project = project(&root, vec![dataset(id, source)], settings());
    let snapshots = Snapshots::start(project, backend.clone(), state.clone());
    let status = wait_settled(&snapshots, id);
    assert_eq!(status["state"], "ready", "{status}");
    let first = snapshots.current(id).unwrap();
    assert_eq!(first.row_count, 7);
    let o1_parts = parts_of(&state, id, "o1").expect("o1's parts were downloaded");
    assert!(o1_parts.join("part-000000.parquet").is_file());
    assert!(o1_parts.join("part-000001.parquet").is_file());
    assert_eq!(
        scalar(
            &backend,
            &format!("SELECT count(*) FROM {}", first.files_relation)
        ),
        7
    );
    drop(first);

    // A part that is not in the bucket: this refresh fails, o1 keeps serving, nothing partial stays.
    put_manifest(&manifest(
        id,
        "o2",
        &[
            ("parts/a.parquet", "parquet"),
            ("parts/gone.parquet", "parquet"),
        ],
        "BIGINT",
    ));
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    let RefreshOutcome::Failed { error } = &outcomes[id] else {
        panic!("a missing object was accepted: {outcomes:?}");
    };
    assert!(
        error.contains("files[1]") && error.contains("gone.parquet"),
        "{error}"
    );
    assert_eq!(snapshots.current(id).unwrap().snapshot_id, "o1");
    assert!(parts_of(&state, id, "o2").is_none());

    // Keys may not leave the manifest's prefix.
    put_manifest(&manifest(
        id,
        "o3",
        &[("../a.parquet", "parquet")],
        "BIGINT",
    ));
    let outcomes = snapshots.refresh(Some(id)).unwrap();
    assert!(
        matches!(&outcomes[id], RefreshOutcome::Failed { error } if error.contains("files[0].path"))
    );

    // Two swaps later o1 is neither current nor previous: its table and its parts are gone.
    put_manifest(&manifest(
        id,
        "o4",
        &[("parts/b.parquet", "parquet")],
        "BIGINT",
    ));
    assert!(matches!(
        snapshots.refresh(Some(id)).unwrap()[id],
        RefreshOutcome::Swapped { .. }
    ));
    put_manifest(&manifest(
        id,
        "o5",
        &[("parts/a.parquet", "parquet")],
        "BIGINT",
    ));
    assert!(matches!(
        snapshots.refresh(Some(id)).unwrap()[id],
        RefreshOutcome::Swapped { .. }
    ));
    assert_eq!(snapshots.current(id).unwrap().row_count, 3);
    assert!(!o1_parts.exists(), "o1's downloaded parts were removed");
    assert!(
        parts_of(&state, id, "o4").is_some_and(|dir| dir.is_dir()),
        "the previous keeps its parts"
    );
    snapshots.stop();
}

/// The directory a snapshot's parts were downloaded to: `parts/<dataset>/<snapshot>__<generation>`.
fn parts_of(
    state: &std::path::Path,
    dataset: &str,
    snapshot_id: &str,
) -> Option<std::path::PathBuf> {
    let prefix = format!("{snapshot_id}__");
    std::fs::read_dir(state.join("parts").join(dataset))
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&prefix))
        })
}
