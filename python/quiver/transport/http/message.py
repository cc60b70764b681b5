"""HTTP/1.1 message framing (RFC 9112), just what an RPC peer needs: a head and a body.

Both the server and the client read heads and bodies with these functions, off a
buffered reader; both write a message as one vectored send of the head and the body
chunks. Every read is bounded: a head by :data:`HEAD_BYTES_MAX` and its line count, a
body by the caller's limit, so a peer can never make us buffer more than we allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...wire.error import ConnectionClosed

HEAD_BYTES_MAX = 64 * 1024
"""Largest request or status line plus headers."""
HEADER_COUNT_MAX = 100
_READ_CHUNK_BYTES = 1 << 20


class LineSource(Protocol):
    """A blocking buffered binary input (``io.BufferedReader``)."""

    def readline(self, size: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


class HttpError(Exception):
    """A message that breaks HTTP framing; ``status`` is what a server answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Head:
    """A start line split on spaces, and the headers (names lower-cased, repeats joined by ``, ``)."""

    start: tuple[str, str, str]
    headers: dict[str, str]

    def header(self, name: str, default: str | None = None) -> str | None:
        """The value of header ``name`` (lower-case), or ``default``."""
        return self.headers.get(name, default)

    @property
    def chunked(self) -> bool:
        """Whether the body uses chunked transfer coding."""
        coding = self.headers.get("transfer-encoding", "")
        return coding.rsplit(",", 1)[-1].strip().lower() == "chunked"

    def content_length(self) -> int | None:
        """The declared body length, if any; a malformed value is an :class:`HttpError`."""
        raw = self.headers.get("content-length")
        if raw is None:
            return None
        if not raw.isdigit():
            raise HttpError(f"invalid Content-Length {raw!r}")
        return int(raw)


def read_head(source: LineSource) -> Head | None:
    """Reads a start line and headers; ``None`` on a clean end of input before the first byte.

    Blank lines before the start line are skipped (RFC 9112 §2.2).
    """
    used = 0
    while True:
        line = source.readline(HEAD_BYTES_MAX + 1)
        if not line:
            if used:
                raise ConnectionClosed("the peer closed the connection inside an HTTP head")
            return None
        used += len(line)
        if line not in (b"\r\n", b"\n"):
            break
        if used > HEAD_BYTES_MAX:
            raise HttpError("HTTP head too large", 431)
    start = _split_start(line)
    headers: dict[str, str] = {}
    while True:
        line = source.readline(HEAD_BYTES_MAX + 1)
        used += len(line)
        if used > HEAD_BYTES_MAX:
            raise HttpError("HTTP head too large", 431)
        if not line:
            raise ConnectionClosed("the peer closed the connection inside an HTTP head")
        if line in (b"\r\n", b"\n"):
            return Head(start, headers)
        if len(headers) >= HEADER_COUNT_MAX:
            raise HttpError("too many HTTP headers", 431)
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name or name != name.strip():
            raise HttpError(f"malformed HTTP header line {line[:80]!r}")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value


def read_body(source: LineSource, head: Head, body_bytes_max: int, *, until_close: bool = False) -> bytes:
    """Reads the body a head announces: chunked, by length, or (``until_close``) to end of input."""
    if head.chunked:
        return _read_chunked(source, body_bytes_max)
    length = head.content_length()
    if length is None:
        return _read_to_end(source, body_bytes_max) if until_close else b""
    if length > body_bytes_max:
        raise HttpError(f"body of {length} bytes exceeds the limit of {body_bytes_max}", 413)
    return _read_exact(source, length)


def head_bytes(start_line: str, headers: Sequence[tuple[str, str]]) -> bytes:
    """A serialized head: start line, headers, blank line."""
    lines = [start_line, *(f"{name}: {value}" for name, value in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


def body_length(chunks: Sequence[Any]) -> int:
    """Total bytes of ``chunks`` (bytes-like objects)."""
    return sum(memoryview(chunk).nbytes for chunk in chunks)


def _split_start(line: bytes) -> tuple[str, str, str]:
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) != 3 or not all(parts[:2]):
        raise HttpError(f"malformed HTTP start line {line[:80]!r}")
    return parts[0], parts[1], parts[2]


def _read_exact(source: LineSource, size: int) -> bytes:
    if size == 0:
        return b""
    data = source.read(size)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = source.read(min(size - got, _READ_CHUNK_BYTES))
        if not more:
            raise ConnectionClosed(f"the peer closed the connection inside an HTTP body ({got} of {size} bytes)")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _read_chunked(source: LineSource, body_bytes_max: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = source.readline(1024)
        if not line:
            raise ConnectionClosed("the peer closed the connection inside a chunked body")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise HttpError(f"malformed chunk size {size_text[:20]!r}") from exc
        if size == 0:
            break
        total += size
        if total > body_bytes_max:
            raise HttpError(f"chunked body exceeds the limit of {body_bytes_max} bytes", 413)
        parts.append(_read_exact(source, size))
        if source.readline(3) not in (b"\r\n", b"\n"):
            raise HttpError("chunk not followed by CRLF")
    while True:  # trailer fields, ignored
        line = source.readline(HEAD_BYTES_MAX + 1)
        if line in (b"\r\n", b"\n", b""):
            break
    return b"".join(parts)


def _read_to_end(source: LineSource, body_bytes_max: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while chunk := source.read(_READ_CHUNK_BYTES):
        total += len(chunk)
        if total > body_bytes_max:
            raise HttpError(f"body exceeds the limit of {body_bytes_max} bytes", 413)
        parts.append(chunk)
    return b"".join(parts)
