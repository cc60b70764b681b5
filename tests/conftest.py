"""Shared fixtures: where the built binaries, the DuckDB extension and the vgi-rpc oracle live."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.fail(f"{what} not found at {path}; run ./quiver test (it sets everything up)")
    return path


@pytest.fixture(scope="session")
def quiver_bin() -> Path:
    return _require(Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")), "quiver release binaries")


@pytest.fixture(scope="session")
def oracle_bin() -> Path:
    return _require(Path(os.environ.get("QUIVER_ORACLE_BIN", ROOT / ".venv-oracle" / "bin")), "vgi-rpc oracle venv")


@pytest.fixture(scope="session")
def conformance_worker(quiver_bin: Path) -> Path:
    return _require(quiver_bin / "quiver-conformance-worker", "conformance worker")


def _built_extension(prebuilt_variable: str, flavour: str, **build_env: str) -> Path:
    """A prebuilt extension named by the environment, or ours built incrementally."""
    prebuilt = os.environ.get(prebuilt_variable)
    if prebuilt:
        return Path(prebuilt)
    subprocess.run([str(ROOT / "extension" / "build.sh")], check=True, env={**os.environ, **build_env})
    path = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "extension" / flavour / "quiver.duckdb_extension"
    assert path.is_file(), path
    return path


@pytest.fixture(scope="session")
def extension() -> Path:
    """target/extension/quiver.duckdb_extension, built incrementally (or QUIVER_EXTENSION)."""
    return _built_extension("QUIVER_EXTENSION", "")


@pytest.fixture(scope="session")
def bench_extension() -> Path:
    """The bench flavour (with the in-process ceiling quiver_numbers), or QUIVER_BENCH_EXTENSION."""
    return _built_extension("QUIVER_BENCH_EXTENSION", "bench", QUIVER_BENCH_FUNCTIONS="1")


@pytest.fixture(scope="session")
def allinone() -> Path:
    path = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-allinone"
    if not path.exists():
        pytest.fail(f"quiver-allinone not found at {path}; run ./quiver test (it builds the workspace)")
    return path
