"""Anonymous pipes: in-process connection pairs and larger pipe buffers."""

from __future__ import annotations

import contextlib
import fcntl
import os

from .connection import FdConnection

PIPE_BUFFER_BYTES_WANTED = 1 << 20
"""Linux pipes hold 64 KiB by default; growing them to 1 MiB cuts reader wake-ups sixteenfold."""


def grow_pipe(fd: int) -> None:
    """Grows the pipe behind ``fd`` as far as allowed; harmless where it is not possible."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, set_size, PIPE_BUFFER_BYTES_WANTED)


def pipe_pair() -> tuple[FdConnection, FdConnection]:
    """Two connected ends (client, server) over a pair of enlarged pipes."""
    to_server_read, to_server_write = os.pipe()
    to_client_read, to_client_write = os.pipe()
    for fd in (to_server_write, to_client_write):
        grow_pipe(fd)
    client = FdConnection(to_client_read, to_server_write, peer="pipe:server")
    server = FdConnection(to_server_read, to_client_write, peer="pipe:client")
    return client, server
