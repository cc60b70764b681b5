"""A worker implementing vgi-rpc's ``ConformanceService`` 2.0.0, for cross-implementation tests.

Run it with ``python -m quiver.conformance`` (stdio), ``--unix PATH`` or ``--tcp HOST:PORT``.
"""

from ..rpc.server import Server
from .protocol import ConformanceService
from .service import ConformanceServiceImpl


def make_server() -> Server:
    """A server hosting the conformance service (shared-memory settings from the environment)."""
    return Server(ConformanceService, ConformanceServiceImpl())


__all__ = ["ConformanceService", "ConformanceServiceImpl", "make_server"]
