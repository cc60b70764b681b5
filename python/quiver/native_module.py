"""Which client of the quiver server this process has: the native module, or pure Python alone.

The native module is ``quiver_native`` (the Rust client, ``crates/quiver-python``, installed by
``tools/setup.sh``); without it there is the pure-Python client (:mod:`quiver.client`) alone.

``quiver.native`` is that module or ``None``; ``quiver.implementation()`` says ``"native"`` or
``"python"``. ``QUIVER_PURE_PYTHON=1`` keeps the native module out even when it is installed.
"""

from __future__ import annotations

import os
from types import ModuleType

PURE_PYTHON_ENV = "QUIVER_PURE_PYTHON"


def load_native() -> ModuleType | None:
    """``quiver_native``, or ``None`` when it is not installed or the environment forbids it."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        import quiver_native
    except ImportError:
        return None
    return quiver_native


native = load_native()


def implementation() -> str:
    """``"native"`` when ``quiver.native`` is the Rust client, else ``"python"``."""
    return "native" if native is not None else "python"
