"""Per-batch custom metadata as ``dict[str, str]``.

Keys and values are UTF-8 on the wire; bytes that are not valid UTF-8 survive a round
trip through the ``surrogateescape`` error handler instead of being lost.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

BatchMetadata = Mapping[str, str]
"""Custom metadata of one batch."""


def decode_metadata(raw: pa.KeyValueMetadata | Mapping[bytes, bytes] | None) -> dict[str, str]:
    """Converts pyarrow's metadata into a plain ``dict[str, str]``."""
    if not raw:
        return {}
    return {
        key.decode("utf-8", "surrogateescape"): value.decode("utf-8", "surrogateescape") for key, value in raw.items()
    }


def encode_metadata(metadata: BatchMetadata | None) -> dict[bytes, bytes] | None:
    """Converts metadata into what pyarrow's writers accept; ``None`` when there is none."""
    if not metadata:
        return None
    return {
        key.encode("utf-8", "surrogateescape"): value.encode("utf-8", "surrogateescape")
        for key, value in metadata.items()
    }
