"""Routing large batches through a shared-memory segment, in either direction.

A data batch that qualifies is written as a complete IPC stream into a region of the
segment, and a zero-row *pointer batch* carrying ``vgi_rpc.shm_offset`` /
``vgi_rpc.shm_length`` goes on the wire instead. Resolving a pointer decodes the region
in place (zero-copy). Anything that does not qualify (small, empty, dictionary-encoded,
no room) silently stays inline. Method code never sees any of this.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import pyarrow as pa

from ..shm.config import ShmConfig
from ..shm.segment import Segment
from ..shm.table import ShmError
from ..wire import keys
from ..wire.error import Malformed
from ..wire.framing import CONTINUATION, END_OF_STREAM, MessageKind, parse_header
from ..wire.limits import Limits
from ..wire.metadata import BatchMetadata
from ..wire.writer import StreamWriter, empty_batch


@dataclass(slots=True)
class ShmStats:
    """What one connection moved through shared memory, and where its busy time went."""

    outbound_total: int = 0
    outbound_shm: int = 0
    inbound_total: int = 0
    inbound_shm: int = 0
    fallbacks: int = 0
    resolve_seconds: float = 0.0
    process_seconds: float = 0.0
    emit_seconds: float = 0.0
    waiting_seconds: float = 0.0

    def summary(self, peer: str, side: str) -> str:
        """Two lines: batch counts, and the split of time between this side and the peer."""
        busy = self.resolve_seconds + self.process_seconds + self.emit_seconds
        total = busy + self.waiting_seconds
        return (
            f"[quiver-shm] conn closed {peer}: outbound shm={self.outbound_shm}/{self.outbound_total} batches "
            f"({_percent(self.outbound_shm, self.outbound_total):.1f}%), inbound shm={self.inbound_shm}/"
            f"{self.inbound_total} batches ({_percent(self.inbound_shm, self.inbound_total):.1f}%), "
            f"fallbacks={self.fallbacks}\n"
            f"[quiver-shm] timeline {peer}: {side}-busy={busy * 1e3:.1f} ms (resolve={self.resolve_seconds * 1e3:.1f} "
            f"process={self.process_seconds * 1e3:.1f} emit={self.emit_seconds * 1e3:.1f}), "
            f"waiting={self.waiting_seconds * 1e3:.1f} ms, {side} {_percent(busy, total):.0f}% / peer "
            f"{_percent(self.waiting_seconds, total):.0f}%"
        )


class ShmRoute:
    """A segment in use by one connection, with the policy for when to use it."""

    def __init__(self, segment: Segment, config: ShmConfig) -> None:
        self.segment = segment
        self.config = config
        self.stats = ShmStats()

    def try_write(self, batch: pa.RecordBatch, metadata: BatchMetadata) -> tuple[pa.RecordBatch, dict[str, str]] | None:
        """Writes ``batch`` into the segment; returns the pointer batch and metadata, or ``None``."""
        self.stats.outbound_total += 1
        if not self.config.wants_shm_for(batch.num_rows, batch.nbytes) or _has_dictionary(batch.schema):
            return None
        started = time.perf_counter()
        size = _stream_size(batch)
        offset = self.segment.allocate(size)
        if offset is None:
            self._fallback(size)
            return None
        sink = pa.FixedSizeBufferWriter(self.segment.writable(offset, size))
        writer = StreamWriter(sink, batch.schema)
        writer.write(batch)
        writer.close()
        sink.close()
        pointer_metadata = {**metadata, keys.SHM_OFFSET: str(offset), keys.SHM_LENGTH: str(size)}
        self.stats.outbound_shm += 1
        self.stats.emit_seconds += time.perf_counter() - started
        return empty_batch(batch.schema), pointer_metadata

    def resolve(
        self, pointer: pa.RecordBatch, metadata: BatchMetadata, limits: Limits
    ) -> tuple[pa.RecordBatch, dict[str, str]]:
        """The batch a pointer refers to, decoded over the segment without a copy."""
        started = time.perf_counter()
        try:
            offset, length = int(metadata[keys.SHM_OFFSET]), int(metadata[keys.SHM_LENGTH])
            region = self.segment.claim(offset, length)
        except (KeyError, ValueError, ShmError) as exc:
            raise Malformed(f"unusable shm pointer {dict(metadata)}: {exc}", recoverable=True) from exc
        if length > limits.body_bytes_max:
            raise Malformed(f"shm region of {length} bytes exceeds the body limit", recoverable=True)
        batch = _decode_region(region, pointer.schema, limits)
        resolved = {k: v for k, v in metadata.items() if k not in (keys.SHM_OFFSET, keys.SHM_LENGTH)}
        self.stats.inbound_shm += 1
        self.stats.resolve_seconds += time.perf_counter() - started
        if self.config.debug:
            debug(f"resolved inbound off={offset} len={length} rows={batch.num_rows} (zero-copy)")
        return batch, resolved

    def _fallback(self, size: int) -> None:
        self.stats.fallbacks += 1
        if self.config.debug:
            count = self.segment.allocation_count()
            debug(f"fallback inline: {size} bytes do not fit in {self.segment.name} (allocations={count})")


def debug(line: str) -> None:
    """Writes one shared-memory diagnostic line to stderr."""
    print(f"[quiver-shm] {line}", file=sys.stderr, flush=True)


def _decode_region(region: pa.Buffer, schema: pa.Schema, limits: Limits) -> pa.RecordBatch:
    try:
        if _first_message_kind(region) is not MessageKind.SCHEMA:
            # vgi-rpc writes dictionary-encoded batches without the schema and end marker.
            region = pa.py_buffer(schema.serialize().to_pybytes() + region.to_pybytes() + END_OF_STREAM)
        batch = pa.ipc.open_stream(region).read_next_batch()
        if limits.validate:
            batch.validate(full=True)
    except (pa.ArrowException, StopIteration, ValueError, Malformed) as exc:
        raise Malformed(f"shm region does not hold a valid IPC batch: {exc}", recoverable=True) from exc
    if not batch.schema.equals(schema):
        raise Malformed(
            f"shm region schema differs from the pointer batch's: {batch.schema} vs {schema}", recoverable=True
        )
    return batch


def _first_message_kind(region: pa.Buffer) -> MessageKind:
    prefix = region.slice(0, 8).to_pybytes()
    if len(prefix) < 8 or prefix[:4] != CONTINUATION:
        raise ValueError("region does not start with an IPC message")
    length = int.from_bytes(prefix[4:], "little")
    kind, _ = parse_header(region.slice(8, length).to_pybytes())
    return kind


def _stream_size(batch: pa.RecordBatch) -> int:
    sink = pa.MockOutputStream()
    writer = StreamWriter(sink, batch.schema)
    writer.write(batch)
    writer.close()
    return int(sink.size())


def _has_dictionary(schema: pa.Schema) -> bool:
    def nested(data_type: pa.DataType) -> bool:
        if pa.types.is_dictionary(data_type):
            return True
        return any(nested(data_type.field(i).type) for i in range(data_type.num_fields))

    return any(nested(field.type) for field in schema)


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0
