"""Unix-domain and TCP sockets: connecting, listening, accepting."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Callable

from .connection import SocketConnection

SOCKET_BUFFER_BYTES = 1 << 20
LISTEN_BACKLOG = 64


def connect_unix(path: str | os.PathLike[str]) -> SocketConnection:
    """Connects to a listening Unix socket."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _widen(sock)
    sock.connect(os.fspath(path))
    return SocketConnection(sock, peer=f"unix:{os.fspath(path)}")


def connect_tcp(host: str, port: int) -> SocketConnection:
    """Connects to a TCP listener (Nagle off: messages are written whole)."""
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return SocketConnection(sock, peer=f"tcp:{host}:{port}")


class Listener:
    """A listening socket whose accept loop can be stopped from any thread.

    Closing it removes the socket file of a Unix listener.
    """

    def __init__(self, sock: socket.socket, path: str | None = None) -> None:
        self.socket = sock
        self.path = path
        self._stopped = False

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self.socket.getsockname()[1])

    def serve(self, handle: Callable[[SocketConnection], None]) -> None:
        """Accepts connections until :meth:`close`, handling each on its own daemon thread."""
        while True:
            try:
                sock, address = self.socket.accept()
            except OSError:
                if self._stopped:
                    return
                raise
            connection = _accepted(sock, address)
            threading.Thread(target=handle, args=(connection,), name=f"quiver {connection.peer}", daemon=True).start()

    def close(self) -> None:
        """Stops :meth:`serve` and releases the socket (and its file)."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def listen_unix(path: str | os.PathLike[str]) -> Listener:
    """Binds and listens on ``path`` with mode 0600.

    A stale socket file (nobody listening) is removed first; a live listener is an error.
    """
    path = os.fspath(path)
    _remove_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        sock.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(LISTEN_BACKLOG)
    return Listener(sock, path)


def listen_tcp(host: str, port: int) -> Listener:
    """Binds and listens on ``host:port`` (port 0 picks a free one)."""
    return Listener(socket.create_server((host, port), backlog=LISTEN_BACKLOG))


def _accepted(sock: socket.socket, address: object) -> SocketConnection:
    if sock.family == socket.AF_UNIX:
        _widen(sock)
        return SocketConnection(sock, peer="unix:peer")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    host, port = address[:2]  # type: ignore[index]
    return SocketConnection(sock, peer=f"tcp:{host}:{port}")


def _remove_stale(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise OSError(f"another process is already listening on {path}")


def _widen(sock: socket.socket) -> None:
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
