"""A worker implementing vgi-rpc's ``ConformanceService`` 2.0.0, for cross-implementation tests.

Run it with ``python -m quiver.conformance`` (stdio), ``--unix PATH`` or ``--tcp HOST:PORT``.
``python -m quiver.conformance.client_driver`` is the other direction: quiver's client behind
vgi-rpc's client-driver protocol.

The service's modules load on first use (PEP 562), so the client driver, which one test
starts per connection, does not pay for the worker's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rpc.server import Server
    from .protocol import ConformanceService
    from .secondary import Secondary, SecondaryImpl
    from .service import ConformanceServiceImpl

_WHERE = {
    "ConformanceService": ".protocol",
    "ConformanceServiceImpl": ".service",
    "Secondary": ".secondary",
    "SecondaryImpl": ".secondary",
}


def make_server() -> Server:
    """The conformance service, then ``conformance.Secondary.v1``; shm settings from the environment."""
    from ..rpc.server import Server
    from .protocol import ConformanceService
    from .secondary import Secondary, SecondaryImpl
    from .service import ConformanceServiceImpl

    return Server(ConformanceService, ConformanceServiceImpl()).add(Secondary, SecondaryImpl())


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(where, __name__), name)


__all__ = ["ConformanceService", "ConformanceServiceImpl", "Secondary", "SecondaryImpl", "make_server"]
