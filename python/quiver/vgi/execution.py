"""Work shared by the connections of one execution: a counter of units (rows) handed out.

Over ``--unix`` every connection reaches one process, so the counter lives in memory.
Over stdio the engine starts one process per connection, so the counter is a small
file (two little-endian u64: next, total) under ``$XDG_RUNTIME_DIR`` or the temp dir,
named by the execution id and updated under ``flock``. The file goes away once every
unit has been claimed; a secondary that finds no file joins an execution that is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import tempfile
import threading
from pathlib import Path

_LAYOUT = struct.Struct("<QQ")


class MemoryCounter:
    def __init__(self, total: int) -> None:
        self.next, self.total = 0, total
        self.lock = threading.Lock()

    def claim(self, units: int) -> tuple[int, int] | None:
        with self.lock:
            if self.next >= self.total:
                return None
            start = self.next
            self.next = min(self.total, start + max(1, units))
            return start, self.next


class FileCounter:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, execution_id: bytes, total: int) -> FileCounter:
        path = counter_dir() / f"{execution_id.hex()}.work"
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.write(descriptor, _LAYOUT.pack(0, total))
        finally:
            os.close(descriptor)
        return cls(path)

    @classmethod
    def join(cls, execution_id: bytes) -> FileCounter:
        return cls(counter_dir() / f"{execution_id.hex()}.work")

    def claim(self, units: int) -> tuple[int, int] | None:
        try:
            descriptor = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            data = os.pread(descriptor, _LAYOUT.size, 0)
            if len(data) != _LAYOUT.size:
                return None
            start, total = _LAYOUT.unpack(data)
            if start >= total:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                return None
            end = min(total, start + max(1, units))
            os.pwrite(descriptor, _LAYOUT.pack(end, total), 0)
            if end >= total:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
            return start, end
        finally:
            os.close(descriptor)


def counter_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    path = Path(base) / f"quiver-vgi-py-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


class Executions:
    """The executions of this process: counters (memory or file) and table-in-out states."""

    def __init__(self) -> None:
        self.in_memory = False
        self.lock = threading.Lock()
        self.counters: dict[bytes, MemoryCounter] = {}
        self.states: dict[tuple[bytes, bytes], object] = {}

    def start(self, execution_id: bytes, total: int) -> MemoryCounter | FileCounter:
        if self.in_memory:
            counter = MemoryCounter(total)
            with self.lock:
                self.counters[execution_id] = counter
            return counter
        return FileCounter.create(execution_id, total)

    def join(self, execution_id: bytes) -> MemoryCounter | FileCounter | None:
        if self.in_memory:
            with self.lock:
                return self.counters.get(execution_id)
        return FileCounter.join(execution_id)
