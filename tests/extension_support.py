"""Shared by the tests/test_extension_*.py files: the built extension, the example worker, a
connection with quiver loaded, and what the process left behind (child processes, shm segments).

Imported by those modules (`from extension_support import ...`); pytest fixtures defined here are
re-exported by that import.
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def extension() -> Path:
    """target/extension/quiver.duckdb_extension, built incrementally (or QUIVER_EXTENSION)."""
    prebuilt = os.environ.get("QUIVER_EXTENSION")
    if prebuilt:
        return Path(prebuilt)
    subprocess.run([str(ROOT / "extension" / "build.sh")], check=True)
    path = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "extension" / "quiver.duckdb_extension"
    assert path.is_file(), path
    return path


@pytest.fixture(scope="session")
def allinone() -> Path:
    path = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-allinone"
    if not path.exists():
        pytest.fail(f"quiver-allinone not found at {path}; run ./quiver test (it builds the workspace)")
    return path


def connect(extension: Path, **config: str) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true", **config})
    connection.execute(f"LOAD '{extension}'")
    return connection


def children() -> list[tuple[int, str]]:
    """(pid, state) of this process's children; state 'Z' is a zombie."""
    me = os.getpid()
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[1]) == me:
            found.append((int(stat.split("/")[2]), fields[0]))
    return found


def zombies() -> list[int]:
    return [pid for pid, state in children() if state == "Z"]


def shm_segments() -> set[str]:
    """quiver/vgi-rpc segment names in /dev/shm (psm_*)."""
    return {Path(p).name for p in glob.glob("/dev/shm/psm_*")}
