"""Worker logs: plain lines on stderr, filtered by the level the launcher asked for.

stdout carries protocol bytes only. The module is named ``log``, not ``logging``, so that running
a file of this package as a script cannot shadow the standard library's ``logging``.
"""

from __future__ import annotations

import os
import sys

LEVELS = {"error": 0, "warning": 1, "warn": 1, "info": 2, "debug": 3}
_level = LEVELS["warning"]


def set_level(level: int) -> None:
    """Sets the most verbose level written: a value of :data:`LEVELS`."""
    global _level
    assert level in LEVELS.values(), level
    _level = level


def log(level: str, message: str) -> None:
    """A plain line on stderr (stdout carries protocol bytes only)."""
    if LEVELS[level] <= _level:
        print(f"quiver-vgi-py [{os.getpid()}] {level}: {message}", file=sys.stderr, flush=True)
