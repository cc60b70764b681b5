//! The two workers the client tests run against, and a client connected to one of them.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::path::{Path, PathBuf};

use quiver_conformance::{PROTOCOL_NAME, PROTOCOL_VERSION};
use quiver_rpc::Client;
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::{spawn, Child};

/// Size of the segment a client creates when a scenario runs through shared memory.
pub const SEGMENT_BYTES: u64 = 64 << 20;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// vgi-rpc's reference worker (Python), from the oracle venv.
pub fn reference_worker() -> PathBuf {
    let bin = std::env::var_os("QUIVER_ORACLE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-oracle/bin"));
    let worker = bin.join("vgi-rpc-conformance");
    assert!(
        worker.exists(),
        "vgi-rpc oracle not found at {} (run ./quiver setup)",
        worker.display()
    );
    worker
}

/// quiver's own conformance worker.
pub fn our_worker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_quiver-conformance-worker"))
}

/// Spawns `worker` and connects a client to it, through a segment when `shm`.
pub fn connect(worker: &Path, shm: bool) -> (Child, Client) {
    let (child, connection) = spawn(worker.as_os_str(), &[]).expect("spawn worker");
    let mut client = Client::new(connection).with_protocol(PROTOCOL_NAME, PROTOCOL_VERSION);
    if shm {
        let config = ShmConfig {
            segment_size_bytes: Some(SEGMENT_BYTES),
            ..ShmConfig::default()
        };
        client = client.with_shm(
            Segment::create(SEGMENT_BYTES).expect("create segment"),
            &config,
        );
    }
    (child, client)
}
