//! What the engine-core tests share: the example worker next to the test binary, and attaching it.

use std::path::PathBuf;
use std::sync::Arc;

use quiver_duckdb::attached::Attached;

/// The `quiver-allinone` binary of the same build profile as this test.
pub fn allinone() -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let path: PathBuf = profile_dir.join("quiver-allinone");
    assert!(
        path.exists(),
        "{} is missing: build the workspace first (cargo build --release --workspace)",
        path.display()
    );
    path.display().to_string()
}

/// Attaches the worker at `location` as `w`.
pub fn attach(location: &str) -> Arc<Attached> {
    quiver_duckdb::attached::open(location, "w", None).expect("attach")
}
