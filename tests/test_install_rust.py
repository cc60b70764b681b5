"""The Rust crates as a user gets them: `./quiver package rust` packs every library crate (dist/rust), and
a cargo project outside the tree that pins its own tokio to `~1.52` (an exact `=1.54.1` requirement in
quiver-client once made this impossible) depends on `quiver-client = "0.1"` through dist/rust/config.toml,
resolves, and type-checks the README's Rust example against the packaged crates.

`cargo check`, not a build: a build of quiver-client's dependency tree in a profile this workspace has
not built takes minutes on a cold machine. The check runs in the workspace's target directory (warm on
a second run) and starts from the workspace's Cargo.lock, so only tokio 1.52 is new to it; packaging
skips cargo's own verification build for the same reason (`./quiver package rust` runs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist" / "rust"
# Every library crate a Rust user may depend on.
CRATES = [
    "quiver-client",
    "quiver-conformance",
    "quiver-process",
    "quiver-rpc",
    "quiver-secret",
    "quiver-server-protocol",
    "quiver-shm",
    "quiver-transport",
    "quiver-vgi",
    "quiver-vgi-contract",
    "quiver-wire",
]
MANIFEST = """[package]
name = "app"
version = "0.1.0"
edition = "2021"

[dependencies]
quiver-client = "0.1"
arrow-array = "60.1"
tokio = { version = "~1.52", features = ["rt"] }

[workspace]
"""
MAIN = """use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use quiver_client::{InsertMode, ServerOptions, ServerProcess};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let batches = vec![RecordBatch::try_from_iter([("x", x)])?];
    // The README's example, word for word.
README
    Ok(())
}
"""


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- rust-client-example -->\n```rust\n(.*?)```", text, re.DOTALL)
    assert match, "README.md has no <!-- rust-client-example --> block"
    return match.group(1)


@pytest.fixture(scope="module")
def packaged() -> Path:
    env = {**os.environ, "QUIVER_PACKAGE_RUST_VERIFY": "0"}
    subprocess.run([str(ROOT / "tools" / "package.sh"), "rust"], check=True, timeout=300, env=env)
    return DIST


def cargo(project: Path, *args: str, timeout: float = 100) -> str:
    command = ["cargo", *args, "--config", str(DIST / "config.toml")]
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target")}
    run = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, f"{' '.join(command)}:\n{run.stderr}"
    return run.stdout


def test_every_library_crate_is_packaged_with_versioned_dependencies(packaged: Path) -> None:
    assert sorted(path.name for path in packaged.glob("*.crate")) == [f"{crate}-0.1.0.crate" for crate in CRATES]
    for crate in CRATES:
        with tarfile.open(packaged / f"{crate}-0.1.0.crate") as archive:
            member = archive.extractfile(f"{crate}-0.1.0/Cargo.toml")
            assert member is not None
            manifest = tomllib.loads(member.read().decode())
        # What cargo publishes: registry requirements, no paths; a library pins nothing exactly.
        for section in ("dependencies", "dev-dependencies", "build-dependencies"):
            for name, dependency in manifest.get(section, {}).items():
                assert "path" not in dependency, (crate, name, dependency)
                if section != "dev-dependencies":
                    assert not dependency["version"].startswith("="), (crate, name, dependency)
        if crate == "quiver-client":
            assert manifest["dependencies"]["quiver-rpc"]["version"] == "0.1.0"
            assert manifest["dependencies"]["tokio"]["version"] == "1.47"


def test_a_project_with_its_own_tokio_resolves_and_checks_the_readme_example(packaged: Path, tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text(MANIFEST)
    (project / "src" / "main.rs").write_text(MAIN.replace("README\n", readme_example()))
    shutil.copy(ROOT / "Cargo.lock", project / "Cargo.lock")
    # From the local registry cache first; the network only for what it lacks (tokio 1.52, once).
    try:
        cargo(project, "fetch", "--offline")
    except AssertionError:
        cargo(project, "fetch")
    tokio_users = cargo(project, "tree", "--offline", "--invert", "tokio", "--edges", "normal")
    assert re.match(r"tokio v1\.52\.\d+\n", tokio_users), tokio_users
    assert f"quiver-client v0.1.0 ({DIST / 'crates' / 'quiver-client-0.1.0'})" in tokio_users, tokio_users
    cargo(project, "check", "--offline", timeout=110)
