"""A worker implementing vgi-rpc's ``ConformanceService`` 2.0.0, for cross-implementation tests.

Run it with ``python -m quiver.conformance`` (stdio), ``--unix PATH`` or ``--tcp HOST:PORT``.
"""

from ..rpc.server import Server
from .protocol import ConformanceService
from .secondary import Secondary, SecondaryImpl
from .service import ConformanceServiceImpl


def make_server() -> Server:
    """The conformance service, then ``conformance.Secondary.v1``; shm settings from the environment."""
    return Server(ConformanceService, ConformanceServiceImpl()).add(Secondary, SecondaryImpl())


__all__ = ["ConformanceService", "ConformanceServiceImpl", "Secondary", "SecondaryImpl", "make_server"]
