"""How bytes move: in-process pipes, subprocess stdio, Unix sockets and TCP.

Nothing here knows about Arrow. Every transport yields a :class:`Connection`: a buffered
reader plus a vectored :meth:`~Connection.send`, and a ``local`` flag that says whether
shared memory can be used with the peer.

:mod:`quiver.transport.http` (imported on its own) is the exception: HTTP carries one
call or turn per request, so it maps RPC calls onto requests and imports :mod:`quiver.rpc`.
"""

from .connection import Connection, FdConnection, SocketConnection
from .pipe import grow_pipe, pipe_pair
from .socket import Listener, connect_tcp, connect_unix, listen_tcp, listen_unix
from .stdio import stdio_connection
from .subprocess import ProcessConnection, spawn

__all__ = [
    "Connection",
    "FdConnection",
    "Listener",
    "ProcessConnection",
    "SocketConnection",
    "connect_tcp",
    "connect_unix",
    "grow_pipe",
    "listen_tcp",
    "listen_unix",
    "pipe_pair",
    "spawn",
    "stdio_connection",
]
