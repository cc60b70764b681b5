"""Writing IPC streams into memory, so that a whole reply leaves in one system call."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pyarrow as pa

from .metadata import Metadata, encode_metadata

_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(use_threads=False)


class Gather:
    """A write-only sink that keeps what pyarrow writes until it is taken.

    Small pieces (message prefixes, flatbuffers, padding) are copied into one growing
    buffer; large ones (column bodies) are kept by reference, without a copy. The
    result is a short list of buffers for a single vectored write.
    """

    COPY_BELOW_BYTES = 16 * 1024

    __slots__ = ("_chunks", "_tail", "closed", "nbytes")

    def __init__(self) -> None:
        self._chunks: list[Any] = []
        self._tail = bytearray()
        self.closed = False
        self.nbytes = 0

    def write(self, data: Any) -> int:
        """Takes one piece of output (bytes or a pyarrow buffer)."""
        size = len(data)
        if size < self.COPY_BELOW_BYTES:
            self._tail += data
        else:
            self._seal_tail()
            self._chunks.append(data)
        self.nbytes += size
        return size

    def flush(self) -> None:
        """Nothing to do; output is handed over by :meth:`take`."""

    def take(self) -> list[Any]:
        """Returns everything written so far, in order, and empties the sink."""
        self._seal_tail()
        chunks, self._chunks = self._chunks, []
        self.nbytes = 0
        return chunks

    def _seal_tail(self) -> None:
        if self._tail:
            self._chunks.append(self._tail)
            self._tail = bytearray()


class StreamWriter:
    """Writes one IPC stream (schema, batches with metadata, end marker) into a sink.

    A stream known to be small (``expected_bytes`` below :attr:`Gather.COPY_BELOW_BYTES`)
    is serialized in C++ and handed to the sink in one piece when closed; otherwise every
    piece goes to the sink as pyarrow writes it, large bodies without a copy.
    """

    __slots__ = ("_buffer", "_sink", "_writer", "schema")

    def __init__(self, sink: Any, schema: pa.Schema, *, expected_bytes: int | None = None) -> None:
        self.schema = schema
        self._sink = sink
        small = expected_bytes is not None and expected_bytes < Gather.COPY_BELOW_BYTES
        self._buffer = pa.BufferOutputStream() if small else None
        self._writer = pa.ipc.new_stream(self._buffer or sink, schema, options=_WRITE_OPTIONS)

    def write(self, batch: pa.RecordBatch, metadata: Metadata | None = None) -> None:
        """Writes a batch of the stream's schema with optional custom metadata."""
        self._writer.write_batch(batch, custom_metadata=encode_metadata(metadata))

    def write_empty(self, metadata: Metadata) -> None:
        """Writes a zero-row batch of the stream's schema (logs, errors, pointers)."""
        self._writer.write_batch(empty_batch(self.schema), custom_metadata=encode_metadata(metadata))

    def close(self) -> None:
        """Writes the end-of-stream marker."""
        self._writer.close()
        if self._buffer is not None:
            self._sink.write(self._buffer.getvalue())


@lru_cache(maxsize=512)
def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    """A zero-row batch of ``schema`` (cached: schemas repeat on every call)."""
    return pa.RecordBatch.from_arrays([pa.array([], type=field.type) for field in schema], schema=schema)


def serialize_stream(batch: pa.RecordBatch, metadata: Metadata | None = None) -> pa.Buffer:
    """A complete IPC stream (schema, one batch, end marker) holding ``batch``."""
    sink = pa.BufferOutputStream()
    writer = StreamWriter(sink, batch.schema)
    writer.write(batch, metadata)
    writer.close()
    return sink.getvalue()
