"""A POSIX shared-memory segment that two processes use to pass large batches.

The client creates, owns and unlinks the segment and advertises its name on every
request; the server attaches and never unlinks. Whoever writes a region allocates it;
whoever reads it frees it. Reads are zero-copy: :meth:`Segment.claim` returns a pyarrow
buffer over the mapping, and the region is freed once the last array using it is gone
(at the next :meth:`Segment.collect`, which callers run when it is their turn).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import secrets
import threading
import weakref
from typing import Any

import pyarrow as pa

from .layout import HEADER_BYTES, SEGMENT_BYTES_MAX
from .table import AllocationTable, ShmError

try:
    import _posixshmem
except ImportError:  # pragma: no cover - platforms without POSIX shared memory
    _posixshmem = None

NAME_PREFIX = "psm_"
NAME_LENGTH_MAX = 255
_CREATE_ATTEMPTS = 16


class Segment:
    """A mapped segment in the "VGIS" layout."""

    def __init__(self, name: str, mapping: mmap.mmap, fd: int, *, owner: bool) -> None:
        self.name = name
        self._fd = fd  # kept to commit a region's pages before it is written (see allocate)
        self._fd_guard = weakref.finalize(self, os.close, fd)
        self._budget_guard: weakref.finalize | None = None
        self.owner = owner
        self.size_bytes = len(mapping)
        self._map = mapping
        self._anchor: Any = ctypes.c_char.from_buffer(mapping)
        self._address = ctypes.addressof(self._anchor)
        self._table = AllocationTable(mapping)
        self._released: list[int] = []
        self._live_claims = 0
        self._closed = False
        self._unlink_guard = weakref.finalize(self, _unlink, name) if owner else None

    @classmethod
    def create(cls, size_bytes: int, *, budget_bytes: int | None = None) -> Segment:
        """Creates a fresh sparse segment of ``size_bytes`` with an empty allocation table.

        With ``budget_bytes``, raises :class:`BudgetExceeded` instead when this process's segments,
        this one included, would exceed it (the caller then runs the connection inline).
        """
        _check_size(size_bytes)
        _reserve(size_bytes, budget_bytes)
        try:
            segment = cls._create_named(size_bytes)
        except BaseException:
            _release(size_bytes)
            raise
        segment._budget_guard = weakref.finalize(segment, _release, size_bytes)
        return segment

    @classmethod
    def _create_named(cls, size_bytes: int) -> Segment:
        for _ in range(_CREATE_ATTEMPTS):
            name = NAME_PREFIX + secrets.token_hex(4)
            try:
                fd = _shm().shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            except FileExistsError:
                continue
            try:
                os.ftruncate(fd, size_bytes)  # sparse: pages are committed per region
                _commit(fd, 0, HEADER_BYTES)
                mapping = mmap.mmap(fd, size_bytes)
            except OSError:
                os.close(fd)
                _unlink(name)
                raise
            segment = cls(name, mapping, fd, owner=True)
            segment._table.initialize()
            return segment
        raise ShmError("could not find a free shared-memory name")

    @classmethod
    def attach(cls, name: str) -> Segment:
        """Maps an existing segment (advertised without its leading slash) and checks its header."""
        _check_name(name)
        try:
            fd = _shm().shm_open("/" + name, os.O_RDWR, 0)
        except OSError as exc:
            raise ShmError(f"cannot open shared memory {name!r}: {exc.strerror}") from exc
        try:
            size_bytes = os.fstat(fd).st_size
            _check_size(size_bytes)
            mapping = mmap.mmap(fd, size_bytes)
        except BaseException:
            os.close(fd)
            raise
        segment = cls(name, mapping, fd, owner=False)
        try:
            segment._table.check_header()
        except ShmError:
            segment.close()
            raise
        return segment

    @property
    def data_size_bytes(self) -> int:
        """Bytes available for regions."""
        return self.size_bytes - HEADER_BYTES

    def allocation_count(self) -> int:
        """How many regions are currently allocated."""
        return len(self._table.entries())

    def allocate(self, size: int) -> int | None:
        """Reserves a region and commits its pages.

        ``None`` when it does not fit or /dev/shm cannot back it (the caller goes inline): never a
        SIGBUS on the first write.
        """
        offset = self._table.allocate(size)
        if offset is None:
            return None
        try:
            _commit(self._fd, offset, size)
        except OSError:
            self._table.free(offset)
            return None
        return offset

    def free(self, offset: int) -> None:
        """Releases the region at ``offset`` now."""
        self._table.free(offset)

    def writable(self, offset: int, size: int) -> pa.Buffer:
        """A mutable buffer over ``size`` bytes at ``offset``, for writing a region in place."""
        self._check_bounds(offset, size)
        return pa.py_buffer((ctypes.c_char * size).from_address(self._address + offset))

    def claim(self, offset: int, length: int) -> pa.Buffer:
        """A zero-copy buffer over a region the peer wrote; the region is freed after release.

        The free is deferred to :meth:`collect`, because the last reference may drop at a
        moment when the table belongs to the peer.
        """
        self._check_bounds(offset, length)
        allocated = self._table.find(offset)
        if allocated is None or allocated < length:
            raise ShmError(f"no allocated region of {length} bytes at offset {offset}")
        self._live_claims += 1
        return pa.foreign_buffer(self._address + offset, length, base=_Claim(self, offset))

    def collect(self) -> int:
        """Frees the regions whose claims were released; returns how many."""
        count = 0
        while self._released:
            offset = self._released.pop()
            if not self._closed:
                self._table.free(offset)
            count += 1
        return count

    @property
    def name_linked(self) -> bool:
        """Whether this side owns the segment and its name still lets a peer attach."""
        return self._unlink_guard is not None and self._unlink_guard.alive

    def unlink_name(self) -> bool:
        """Removes the name once the peer has attached; True if this call unlinked it.

        Both mappings keep working, and the memory lives exactly as long as some process maps it.
        """
        if not self.name_linked:
            return False
        assert self._unlink_guard is not None
        self._unlink_guard()
        return True

    def close(self) -> None:
        """Unmaps the segment (once no claim is alive) and unlinks it if this side owns it."""
        if self._closed:
            return
        self.collect()
        self._closed = True
        if self._unlink_guard is not None:
            self._unlink_guard()
        self._fd_guard()
        if self._budget_guard is not None:
            self._budget_guard()
        if self._live_claims == 0:
            self._anchor = None
            self._map.close()

    def _check_bounds(self, offset: int, size: int) -> None:
        if self._closed:
            raise ShmError(f"segment {self.name} is closed")
        if offset < HEADER_BYTES or size < 0 or offset + size > self.size_bytes:
            raise ShmError(f"region offset={offset} length={size} lies outside segment {self.name}")

    def _release(self, offset: int) -> None:
        self._live_claims -= 1
        self._released.append(offset)


class _Claim:
    """Owner of a claimed region; dropping the last reference queues the region's free."""

    __slots__ = ("_offset", "_segment")

    def __init__(self, segment: Segment, offset: int) -> None:
        self._segment = segment
        self._offset = offset

    def __del__(self) -> None:
        self._segment._release(self._offset)


def _shm() -> Any:
    if _posixshmem is None:
        raise ShmError("POSIX shared memory is not available on this platform")
    return _posixshmem


def _unlink(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        _shm().shm_unlink("/" + name)


class BudgetExceeded(ShmError):
    """A new segment would take this process past its budget of segment bytes."""


_budget_lock = threading.Lock()
_reserved_bytes = 0


def reserved_segment_bytes() -> int:
    """Bytes of segments this process has created and not yet released."""
    return _reserved_bytes


def _reserve(size_bytes: int, budget_bytes: int | None) -> None:
    global _reserved_bytes
    with _budget_lock:
        if budget_bytes is not None and _reserved_bytes + size_bytes > budget_bytes:
            raise BudgetExceeded(
                f"a {size_bytes}-byte segment would exceed the process budget: "
                f"{_reserved_bytes} of {budget_bytes} bytes already reserved"
            )
        _reserved_bytes += size_bytes


def _release(size_bytes: int) -> None:
    global _reserved_bytes
    with _budget_lock:
        assert _reserved_bytes >= size_bytes, "released more segment bytes than reserved"
        _reserved_bytes -= size_bytes


def _commit(fd: int, offset: int, size: int) -> None:
    """Backs a byte range with pages now, where the platform can (a full /dev/shm raises here)."""
    if hasattr(os, "posix_fallocate") and size > 0:
        os.posix_fallocate(fd, offset, size)


def _check_name(name: str) -> None:
    if not name or len(name) > NAME_LENGTH_MAX or "/" in name or "\0" in name or name in (".", ".."):
        raise ShmError(f"invalid shared-memory name {name!r}")


def _check_size(size_bytes: int) -> None:
    if not HEADER_BYTES < size_bytes <= SEGMENT_BYTES_MAX:
        raise ShmError(f"segment size {size_bytes} must exceed {HEADER_BYTES} and be at most {SEGMENT_BYTES_MAX}")
