"""Shared fixtures: where the oracle CLI, the Rust worker and this package's worker live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent


def _locate(variable: str, default: Path, name: str, what: str) -> Path:
    """``$variable/name`` (must exist when the variable is set), else ``default/name`` or a skip."""
    configured = os.environ.get(variable)
    path = Path(configured or default) / name
    if path.exists():
        return path
    if configured:
        pytest.fail(f"{what} not found at {path} (from ${variable})")
    pytest.skip(f"{what} not found at {path}; set ${variable}")


@pytest.fixture(scope="session")
def oracle_cli() -> Path:
    """vgi-rpc's conformance CLI (``vgi-rpc-test``)."""
    return _locate("QUIVER_ORACLE_BIN", REPO / ".venv-oracle" / "bin", "vgi-rpc-test", "vgi-rpc-test")


@pytest.fixture(scope="session")
def rust_worker() -> Path:
    """Quiver's Rust conformance worker."""
    return _locate("QUIVER_BIN", REPO / "target" / "release", "quiver-conformance-worker", "Rust conformance worker")


@pytest.fixture(scope="session")
def python_worker() -> list[str]:
    """The command that runs this package's conformance worker."""
    return [sys.executable, "-m", "quiver.conformance"]


@pytest.fixture(scope="session")
def worker_env() -> dict[str, str]:
    """Environment for worker subprocesses: this package importable, no inherited shm settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("VGI_RPC_SHM_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    return env
