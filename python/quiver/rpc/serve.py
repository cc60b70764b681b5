"""Running a server as a worker process: over stdio, a Unix socket, or TCP."""

from __future__ import annotations

import os

from ..transport.socket import listen_tcp, listen_unix
from ..transport.stdio import stdio_connection
from .server import Server


def serve_stdio(server: Server) -> None:
    """Serves this process's stdin/stdout until the client closes stdin.

    Stdout carries protocol bytes only: anything else printed goes to stderr.
    """
    server.serve(stdio_connection())


def serve_unix(server: Server, path: str | os.PathLike[str]) -> None:
    """Listens on a Unix socket (mode 0600), prints ``UNIX:<path>``, serves each client on a thread.

    Runs until interrupted; the socket file is removed on the way out.
    """
    with listen_unix(path) as listener:
        _announce(f"UNIX:{os.fspath(path)}")
        listener.serve(server.serve)


def serve_tcp(server: Server, host: str, port: int) -> None:
    """Listens on TCP, prints ``PORT:<port>``, serves each client on a thread until interrupted."""
    with listen_tcp(host, port) as listener:
        _announce(f"PORT:{listener.port}")
        listener.serve(server.serve)


def _announce(line: str) -> None:
    print(line, flush=True)
