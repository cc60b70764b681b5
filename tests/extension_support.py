"""Shared by the tests/test_extension_*.py files: the built extension, the example worker, a
connection with quiver loaded, and what the process left behind (child processes, shm segments).

Imported by those modules (`from extension_support import ...`); the `extension` and `allinone`
fixtures live in tests/conftest.py, where pytest finds them without an import.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]


def connect(extension: Path, **config: str) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true", **config})
    connection.execute(f"LOAD '{extension}'")
    return connection


def attach_example_workers(extension: Path, allinone: Path) -> duckdb.DuckDBPyConnection:
    """A connection (2 threads) with the three SDKs' example workers attached as r (Rust), p (Python)
    and j (Java), for tests that hold them to one meaning.
    """
    import pytest

    java = ROOT / "java" / "bin" / "quiver-allinone-java"
    if not (ROOT / "java" / "target" / "quiver-java-0.1.0.jar").is_file():
        pytest.fail("the Java worker is not built; run java/build.sh or ./quiver test")
    connection = connect(extension, threads="2")
    connection.execute(f"ATTACH '{allinone}' AS r (TYPE quiver)")
    connection.execute(f"ATTACH '{sys.executable} -m quiver.vgi.allinone' AS p (TYPE quiver)")
    connection.execute(f"ATTACH '{java}' AS j (TYPE quiver)")
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
    """The names of the segments this process created that are still in /dev/shm.

    quiver names its segments `psm_<owner pid>_<hex>`; other processes' segments (a concurrent
    test run, another engine on the machine) are not this test's to count.
    """
    return {Path(p).name for p in glob.glob(f"/dev/shm/psm_{os.getpid()}_*")}
