"""Starts quiver's Python client driver in milliseconds: a fork server with the driver imported.

vgi-rpc's client-driver protocol spawns one driver process per connection, and the suite opens
about 400 connections through quiver's Python client. A plain ``python -m
quiver.conformance.client_driver`` spends ~0.2 s importing pyarrow and quiver before it answers,
most of those tests' time. Here one server process imports the driver once; each connection's
command is this file run as a launcher (``python -I -S``, standard library only), which hands its
stdin, stdout and stderr to the server over a Unix socket (SCM_RIGHTS). The server forks a child
that serves the driver protocol on exactly those descriptors, as the spawned driver would, and
reports its exit status back; the launcher exits with it. A child that dies without reporting
(a crash) makes the launcher exit 1.

    python driver_forkserver.py serve SOCKET     (in quiver's venv; prints READY when listening)
    python -I -S driver_forkserver.py launch SOCKET
"""

from __future__ import annotations

import array
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import BinaryIO

#: The descriptors a launcher hands over: the driver's stdin, stdout and stderr.
HANDED = (0, 1, 2)


def launch(path: str) -> int:
    """Hands this process's stdio to the fork server; returns the driver's exit status."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.connect(path)
        server.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", HANDED))])
        status = b""
        while len(status) < 4 and (chunk := server.recv(4 - len(status))):
            status += chunk
    return int.from_bytes(status, "little", signed=True) if len(status) == 4 else 1


def serve(path: str) -> None:
    """Accepts launchers until killed; each gets a forked driver on the descriptors it sent."""
    from quiver.conformance.client_driver import serve as serve_driver

    # Children are reaped by the kernel: the status travels over the launcher's socket instead.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("READY", flush=True)
    while True:
        connection, _ = listener.accept()
        descriptors = _received_descriptors(connection)
        if descriptors is not None and os.fork() == 0:
            listener.close()
            _run_child(connection, descriptors, serve_driver)
        for descriptor in descriptors or ():
            os.close(descriptor)
        connection.close()


def _received_descriptors(connection: socket.socket) -> list[int] | None:
    size = array.array("i").itemsize * len(HANDED)
    _, ancillary, _, _ = connection.recvmsg(1, socket.CMSG_SPACE(size))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(data[: len(data) - len(data) % received.itemsize])
            if len(received) == len(HANDED):
                return list(received)
            for descriptor in received:
                os.close(descriptor)
    return None


#: The driver's entry point: serves the protocol from requests to responses.
ServeDriver = Callable[[BinaryIO, BinaryIO], None]


def _run_child(connection: socket.socket, descriptors: list[int], serve_driver: ServeDriver) -> None:
    """The forked driver: serves the protocol on the launcher's stdio, then reports and exits."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the driver waits for the workers it spawns
    for target, descriptor in zip(HANDED, descriptors, strict=True):
        os.dup2(descriptor, target)
        os.close(descriptor)
    status = 0
    try:
        serve_driver(sys.stdin.buffer, sys.stdout.buffer)
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # reported on stderr, as an uncaught error in a spawned driver would be
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        with contextlib.suppress(Exception):  # a launcher or caller gone: nothing to report to
            sys.stdout.flush()
            sys.stderr.flush()
            connection.sendall(status.to_bytes(4, "little", signed=True))
        os._exit(status)


if __name__ == "__main__":
    role, socket_path = sys.argv[1:3]
    if role == "launch":
        sys.exit(launch(socket_path))
    serve(socket_path)
