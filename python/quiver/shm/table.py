"""The allocation table in a segment header: first-fit allocate, free by offset.

The table lists occupied regions only, sorted by offset; free space is the gaps between
them. Both peers allocate in and free from the same table without a lock: the lockstep
protocol guarantees only the side whose turn it is touches it. The table is written by
another process, so every operation re-reads and validates it first.
"""

from __future__ import annotations

import mmap
import struct

from .layout import (
    ALIGNMENT,
    ALLOCATIONS_MAX,
    COUNT_AT,
    DATA_SIZE_AT,
    ENTRIES_AT,
    HEADER_BYTES,
    MAGIC,
    VERSION,
    VERSION_AT,
)


class ShmError(Exception):
    """A segment cannot be created, attached or used."""


class AllocationTable:
    """A view of the header of a mapped segment."""

    __slots__ = ("_map", "size_bytes")

    def __init__(self, mapping: mmap.mmap) -> None:
        self._map = mapping
        self.size_bytes = len(mapping)

    def initialize(self) -> None:
        """Writes a fresh header with an empty table (the owner does this once)."""
        struct.pack_into("<4sIQII", self._map, 0, MAGIC, VERSION, self.size_bytes - HEADER_BYTES, 0, 0)

    def check_header(self) -> None:
        """Raises :class:`ShmError` unless the header is a version-1 VGIS header for this size."""
        magic = self._map[0:4]
        version = struct.unpack_from("<I", self._map, VERSION_AT)[0]
        data_size = struct.unpack_from("<Q", self._map, DATA_SIZE_AT)[0]
        if magic != MAGIC:
            raise ShmError(f"bad magic {magic!r}, expected {MAGIC!r}")
        if version != VERSION:
            raise ShmError(f"unsupported layout version {version}, expected {VERSION}")
        if data_size != self.size_bytes - HEADER_BYTES:
            raise ShmError(f"header data_size {data_size} does not match segment size {self.size_bytes}")

    def entries(self) -> list[tuple[int, int]]:
        """The validated (offset, length) entries, sorted by offset."""
        count = struct.unpack_from("<I", self._map, COUNT_AT)[0]
        if count > ALLOCATIONS_MAX:
            raise ShmError(f"allocation count {count} exceeds the maximum {ALLOCATIONS_MAX}")
        flat = struct.unpack_from(f"<{2 * count}Q", self._map, ENTRIES_AT)
        entries = list(zip(flat[0::2], flat[1::2], strict=True))
        previous_end = HEADER_BYTES
        for offset, length in entries:
            if length == 0 or offset < previous_end or offset + length > self.size_bytes:
                raise ShmError(f"corrupt allocation table entry offset={offset} length={length}")
            previous_end = offset + length
        return entries

    def allocate(self, size: int) -> int | None:
        """Reserves ``size`` bytes at a 64-byte aligned offset; ``None`` when nothing fits."""
        try:
            entries = self.entries()
        except ShmError:
            return None
        if size <= 0 or len(entries) >= ALLOCATIONS_MAX:
            return None
        previous_end = HEADER_BYTES
        for index, (offset, length) in enumerate(entries):
            start = _align(previous_end)
            if offset - start >= size:
                entries.insert(index, (start, size))
                self._store(entries)
                return start
            previous_end = offset + length
        start = _align(previous_end)
        if self.size_bytes - start < size:
            return None
        entries.append((start, size))
        self._store(entries)
        return start

    def free(self, offset: int) -> None:
        """Releases the region starting at ``offset``."""
        entries = self.entries()
        for index, (start, _) in enumerate(entries):
            if start == offset:
                del entries[index]
                self._store(entries)
                return
        raise ShmError(f"no allocation at offset {offset}")

    def find(self, offset: int) -> int | None:
        """The allocated length of the region at ``offset``, if there is one."""
        return next((length for start, length in self.entries() if start == offset), None)

    def _store(self, entries: list[tuple[int, int]]) -> None:
        flat = [value for entry in entries for value in entry]
        struct.pack_into(f"<{len(flat)}Q", self._map, ENTRIES_AT, *flat)
        struct.pack_into("<I", self._map, COUNT_AT, len(entries))


def _align(value: int) -> int:
    return (value + ALIGNMENT - 1) & ~(ALIGNMENT - 1)
