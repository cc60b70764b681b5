"""One attached worker per location per process.

Every Spark Python worker process (driver or executor) reaches a worker of its own, started on
first use (``launch:<command>`` starts it on a private socket) and kept for the process's later
tasks, as Spark keeps its Python workers. The worker ends with the process (a parent-death
signal), never outliving it.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_attached: dict[str, Any] = {}


def attach(location: str) -> Any:
    """The ``quiver_native.VgiWorker`` at ``location`` in this process, attached on first use."""
    with _lock:
        worker = _attached.get(location)
        if worker is None:
            from quiver.native_module import native

            if native is None:
                raise ImportError("quiver.spark needs quiver_native (the quiver-native wheel)")
            worker = native.VgiWorker(location, "quiver")
            _attached[location] = worker
        return worker


def function(location: str, name: str) -> dict[str, Any]:
    """What the worker at ``location`` declares about its function ``name``."""
    functions = attach(location).functions()
    if name not in functions:
        raise ValueError(f"the worker at {location!r} has no function {name!r} (it has {', '.join(sorted(functions))})")
    return functions[name]
