"""Bounds on everything a peer can make us allocate or check."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits applied while decoding IPC streams.

    A peer that announces more than a limit allows gets a clear error before anything is
    allocated; the offending message is skipped so the connection can keep serving.
    """

    metadata_bytes_max: int = 16 << 20
    """Largest flatbuffer header of one message."""
    body_bytes_max: int = 4 << 30
    """Largest body of one message."""
    messages_per_stream_max: int = 1 << 24
    """Most messages (schema, dictionaries, batches) in one stream."""
    validate: bool = True
    """Fully validate every decoded batch (offsets, UTF-8, dictionary bounds)."""


DEFAULT_LIMITS = Limits()
