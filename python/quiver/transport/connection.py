"""A connection: a buffered byte reader and a vectored writer, nothing about Arrow."""

from __future__ import annotations

import contextlib
import io
import os
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..wire.error import ConnectionClosed

READ_BUFFER_BYTES = 256 * 1024
SPIN_MICROS_DEFAULT = 200


def _spin_seconds() -> float:
    """How long a reader polls for its peer before it sleeps: ``QUIVER_SPIN_MICROS`` (0: never)."""
    try:
        return max(0, int(os.environ.get("QUIVER_SPIN_MICROS", SPIN_MICROS_DEFAULT))) / 1e6
    except ValueError:
        return SPIN_MICROS_DEFAULT / 1e6


_SPIN_SECONDS = _spin_seconds()
# Waits below this are reads that found data, not waits on the peer.
_WAITED_MIN_SECONDS = 10e-6


class _Spinner:
    """Polls a descriptor for a few microseconds before a blocking read, while that pays.

    A reader asleep in ``read(2)`` is woken by the peer's write through the scheduler; across
    cores of a virtual machine that costs tens of microseconds, more than a scalar call's turn.
    Polling (and yielding the CPU, so a peer on the same CPU runs) sees a quick answer at once.
    A peer slower than the budget is waited for asleep after the first miss, until a wait short
    enough to be caught shows spinning pays again (the Rust transport's ``spin.rs`` rule). A
    thread does not spin while another is at work: it would keep taking the interpreter lock
    that thread needs.
    """

    def __init__(self, fd: int) -> None:
        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)
        self._worth_it = True

    def read(self, read: Callable[[], int | None]) -> int | None:
        """Runs ``read`` (which may block) after spinning, and learns from how long it waited."""
        if self._poller.poll(0):
            return read()
        _WORKING.stop()
        try:
            if _SPIN_SECONDS and self._worth_it:
                deadline = time.monotonic() + _SPIN_SECONDS
                # A thread at work wants the interpreter lock a spinning thread keeps taking back.
                while not _WORKING.others():
                    os.sched_yield()
                    if self._poller.poll(0):
                        return read()
                    if time.monotonic() >= deadline:
                        self._worth_it = False
                        break
            started = time.monotonic()
            result = read()
            waited = time.monotonic() - started
            if waited >= _WAITED_MIN_SECONDS:
                self._worth_it = waited <= _SPIN_SECONDS
            return result
        finally:
            _WORKING.start()


class _Working:
    """How many threads of this process are at work between reads of a peer (not waiting on one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._local = threading.local()

    def stop(self) -> None:
        """Marks the calling thread as waiting on a peer."""
        if getattr(self._local, "working", False):
            self._local.working = False
            with self._lock:
                self._count -= 1

    def start(self) -> None:
        """Marks the calling thread as at work again."""
        if not getattr(self._local, "working", False):
            self._local.working = True
            with self._lock:
                self._count += 1

    def others(self) -> bool:
        """Whether another thread is at work (this one is waiting)."""
        return self._count > 0


_WORKING = _Working()


class _SpinningFileIO(io.FileIO):
    def __init__(self, fd: int) -> None:
        super().__init__(fd, "rb")
        self._spinner = _Spinner(fd)

    def readinto(self, buffer: Any) -> int | None:
        return self._spinner.read(lambda: io.FileIO.readinto(self, buffer))


class _SpinningSocketIO(socket.SocketIO):
    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, "rb")
        self._spinner = _Spinner(sock.fileno())

    def readinto(self, buffer: Any) -> int | None:
        return self._spinner.read(lambda: socket.SocketIO.readinto(self, buffer))


_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)


class Connection:
    """One side of a bidirectional byte stream.

    ``reader`` is a blocking buffered binary reader; :meth:`send` writes a list of
    buffers with as few system calls as possible (one, unless the kernel takes less).
    ``local`` says whether the peer is on this machine (shared memory can be used).
    """

    def __init__(self, reader: io.BufferedReader[Any], *, local: bool, peer: str) -> None:
        self.reader = reader
        self.local = local
        self.peer = peer
        self.closed = False

    def send(self, chunks: Sequence[Any]) -> None:
        """Writes every buffer in ``chunks``, in order."""
        try:
            _write_all(self._write_vector, chunks)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ConnectionClosed(f"the peer closed the connection: {exc}") from exc

    def close(self) -> None:
        """Closes both directions."""
        if not self.closed:
            self.closed = True
            self._close()

    def _write_vector(self, buffers: list[memoryview]) -> int:
        raise NotImplementedError

    def _close(self) -> None:
        self.reader.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class FdConnection(Connection):
    """A connection over a pair of file descriptors (pipes, stdio)."""

    def __init__(self, read_fd: int, write_fd: int, *, peer: str, local: bool = True) -> None:
        reader = io.BufferedReader(_SpinningFileIO(read_fd), buffer_size=READ_BUFFER_BYTES)
        super().__init__(reader, local=local, peer=peer)
        self.write_fd = write_fd

    def _write_vector(self, buffers: list[memoryview]) -> int:
        return os.writev(self.write_fd, buffers)

    def _close(self) -> None:
        _close_quietly(lambda: os.close(self.write_fd))
        _close_quietly(self.reader.close)


class SocketConnection(Connection):
    """A connection over a connected stream socket (Unix or TCP)."""

    def __init__(self, sock: socket.socket, *, peer: str) -> None:
        reader = io.BufferedReader(_SpinningSocketIO(sock), buffer_size=READ_BUFFER_BYTES)
        super().__init__(reader, local=sock.family == socket.AF_UNIX, peer=peer)
        self.socket = sock

    def _write_vector(self, buffers: list[memoryview]) -> int:
        return self.socket.sendmsg(buffers)

    def _close(self) -> None:
        _close_quietly(lambda: self.socket.shutdown(socket.SHUT_RDWR))
        _close_quietly(self.reader.close)
        _close_quietly(self.socket.close)


def _write_all(write: Callable[[list[memoryview]], int], chunks: Sequence[Any]) -> None:
    views = [view for view in (memoryview(chunk).cast("B") for chunk in chunks) if len(view)]
    start = 0
    while start < len(views):
        written = write(views[start : start + _IOV_MAX])
        while written and start < len(views):
            head = views[start]
            if written >= len(head):
                written -= len(head)
                start += 1
            else:
                views[start] = head[written:]
                written = 0


def _close_quietly(close: Callable[[], object]) -> None:
    with contextlib.suppress(OSError):
        close()
