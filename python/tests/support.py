"""Helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

SHM_DIR = Path("/dev/shm")


def assert_unlinked(name: str) -> None:
    """A shared-memory segment is gone (names are advertised without the leading slash)."""
    assert name.startswith("psm_"), name
    assert not (SHM_DIR / name).exists(), f"shared-memory segment {name} leaked"
