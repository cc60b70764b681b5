"""HTTP content codings (``zstd``, ``gzip``) through pyarrow's bundled codecs: no new dependency.

Decoding is bounded: a body that expands past ``output_bytes_max`` is refused while it is
being decoded, so a small compressed request cannot make the server allocate gigabytes.

A response's coding is negotiated from two request headers (:func:`negotiate`): the
standard ``Accept-Encoding`` and VGI's own ``X-VGI-Accept-Encoding``, which outranks it.
HTTP clients such as cpp-httplib (the DuckDB extension's) inject ``Accept-Encoding:
deflate, gzip, br, zstd`` on their own, gzip first, and a browser's ``fetch()`` cannot set
that header at all; the custom header is how such a client states its real preference.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

ENCODINGS = ("zstd", "gzip")
"""The codings spoken, in order of preference."""

LEVELS = {"zstd": 1, "gzip": 6}
"""Compression levels, vgi-rpc's defaults: pyarrow's own gzip default (9) costs several
times the CPU for a few percent on Arrow bodies."""
IDENTITY = "identity"
CONTENT_ENCODING = "Content-Encoding"
VGI_CONTENT_ENCODING = "X-VGI-Content-Encoding"
"""Stamps a coding chosen only through ``X-VGI-Accept-Encoding``: a client whose fetch
layer owns ``Accept-Encoding`` would decode (or mangle) a body under the standard header."""
ACCEPT_CODINGS_MAX = 32
"""The most tokens read from one accept header; the rest cannot change the outcome."""

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


def negotiate(
    accept: str | None, vgi_accept: str | None, producible: tuple[str, ...] = ENCODINGS
) -> tuple[str | None, str]:
    """The coding of a response and the header that names it, from the request's accept headers.

    Only codings in ``producible`` are chosen. The client's order is honoured,
    ``X-VGI-Accept-Encoding`` first, then the
    ``Accept-Encoding`` tokens it did not already name. Reaching ``identity`` first is an
    explicit request for a plain body. ``(None, ...)``: send the body as it is (no overlap,
    or identity). A coding named only by the custom header is stamped on
    :data:`VGI_CONTENT_ENCODING`, one the standard header also names on
    :data:`CONTENT_ENCODING`.
    """
    standard = parse_codings(accept)[:ACCEPT_CODINGS_MAX]
    custom = parse_codings(vgi_accept)[:ACCEPT_CODINGS_MAX]
    for coding in custom + [name for name in standard if name not in custom]:
        if coding == IDENTITY:
            return None, CONTENT_ENCODING
        if coding in producible:
            return coding, VGI_CONTENT_ENCODING if coding not in standard else CONTENT_ENCODING
    return None, CONTENT_ENCODING


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


def encode(chunks: list[Any], coding: str, level: int | None = None) -> bytes:
    """Compresses the concatenation of ``chunks`` with ``coding`` at ``level`` (default :data:`LEVELS`).

    One shot, so a zstd frame declares its decompressed size: a peer's one-shot zstd
    decoder refuses a frame that does not.
    """
    if coding not in ENCODINGS:
        raise CodingError(f"cannot encode with {coding!r}")
    data = b"".join(chunks)
    chosen = LEVELS[coding] if level is None else level
    compressed: bytes = pa.Codec(coding, compression_level=chosen).compress(data, asbytes=True)
    return compressed
