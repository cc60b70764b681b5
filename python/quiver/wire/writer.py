"""Writing IPC streams into memory, so that a whole reply leaves in one system call."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pyarrow as pa

from .metadata import BatchMetadata, encode_metadata
from .sink import GatherBuffer

_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(use_threads=False)


class StreamWriter:
    """Writes one IPC stream (schema, batches with metadata, end marker) into a sink.

    A stream known to be small (``expected_bytes`` below :attr:`GatherBuffer.COPY_BELOW_BYTES`)
    is serialized in C++ and handed to the sink in one piece when closed; otherwise every
    piece goes to the sink as pyarrow writes it, large bodies without a copy.
    """

    __slots__ = ("_buffer", "_sink", "_writer", "schema")

    def __init__(self, sink: Any, schema: pa.Schema, *, expected_bytes: int | None = None) -> None:
        self.schema = schema
        self._sink = sink
        small = expected_bytes is not None and expected_bytes < GatherBuffer.COPY_BELOW_BYTES
        self._buffer = pa.BufferOutputStream() if small else None
        self._writer = pa.ipc.new_stream(self._buffer or sink, schema, options=_WRITE_OPTIONS)

    def write(self, batch: pa.RecordBatch, metadata: BatchMetadata | None = None) -> None:
        """Writes a batch of the stream's schema with optional custom metadata."""
        self._writer.write_batch(batch, custom_metadata=encode_metadata(metadata))

    def write_empty(self, metadata: BatchMetadata) -> None:
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


def encode_stream(batch: pa.RecordBatch, metadata: BatchMetadata | None = None) -> pa.Buffer:
    """A complete IPC stream (schema, one batch, end marker) holding ``batch``."""
    sink = pa.BufferOutputStream()
    writer = StreamWriter(sink, batch.schema)
    writer.write(batch, metadata)
    writer.close()
    return sink.getvalue()
