"""HTTP content codings (``zstd``, ``gzip``) through pyarrow's bundled codecs: no new dependency.

Decoding is bounded: a body that expands past ``output_bytes_max`` is refused while it is
being decoded, so a small compressed request cannot make the server allocate gigabytes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

ENCODINGS = ("zstd", "gzip")
"""The codings spoken, in order of preference."""

_CHUNK_BYTES = 1 << 20


class CodingError(ValueError):
    """A body could not be decoded (unknown coding, corrupt data, or too large once decoded)."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


def parse_codings(header: str | None) -> list[str]:
    """The codings named by a ``Content-Encoding`` / ``Accept-Encoding`` value, lower-cased, in order."""
    if not header:
        return []
    names = (part.split(";", 1)[0].strip().lower() for part in header.split(","))
    return [name for name in names if name]


def decode(body: bytes, coding: str, output_bytes_max: int) -> bytes:
    """Decodes ``body`` compressed with ``coding``; ``identity`` (or nothing) returns it as is."""
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ENCODINGS:
        raise CodingError(f"Content-Encoding {coding!r} is not supported; supported: {', '.join(ENCODINGS)}")
    try:
        stream = pa.CompressedInputStream(pa.BufferReader(body), coding)
        parts: list[bytes] = []
        total = 0
        while chunk := stream.read(_CHUNK_BYTES):
            total += len(chunk)
            if total > output_bytes_max:
                raise CodingError(f"{coding} body decodes to more than {output_bytes_max} bytes", too_large=True)
            parts.append(chunk)
    except pa.ArrowException as exc:
        raise CodingError(f"cannot decode {coding} body: {exc}") from exc
    return b"".join(parts)


def encode(chunks: list[Any], coding: str) -> bytes:
    """Compresses the concatenation of ``chunks`` with ``coding`` (pyarrow's default level)."""
    if coding not in ENCODINGS:
        raise CodingError(f"cannot encode with {coding!r}")
    sink = pa.BufferOutputStream()
    stream = pa.CompressedOutputStream(sink, coding)
    for chunk in chunks:
        stream.write(chunk)
    stream.close()
    return bytes(sink.getvalue())
