"""Shared fixtures: where the built binaries and the vgi-rpc oracle live."""

from __future__ import annotations

import os
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
