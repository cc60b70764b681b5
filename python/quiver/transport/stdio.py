"""A worker serving the protocol on its own stdin and stdout (the other end of :func:`~.subprocess.spawn`)."""

from __future__ import annotations

import os
import sys

from .connection import FdConnection
from .pipe import grow_pipe


def stdio_connection() -> FdConnection:
    """Takes over this process's stdin and stdout for the protocol.

    The original descriptors are moved aside; fd 0 becomes ``/dev/null`` and fd 1 (and
    ``sys.stdout``) becomes stderr, so a stray ``print`` or native library write can
    never corrupt the protocol stream.
    """
    read_fd, write_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    grow_pipe(write_fd)
    grow_pipe(read_fd)
    return FdConnection(read_fd, write_fd, peer="stdio")
