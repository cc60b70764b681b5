"""Encapsulated Arrow IPC messages, read straight off a byte stream.

pyarrow decodes messages; this module finds where each one begins and ends. That keeps
three promises pyarrow alone cannot: limits are checked before a body is allocated, a
stream can be skipped to its end marker without decoding it, and a message that fails
to decode leaves the byte stream on a message boundary, so the connection survives.

Each message is ``ff ff ff ff``, a little-endian int32 header length, the flatbuffer
``Message`` header (padded), then the body. A header length of 0 is the end-of-stream
marker. Only the modern (continuation-prefixed) encapsulation is accepted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

import pyarrow as pa

from .error import ConnectionClosed, LimitExceeded, Malformed, Truncated
from .limits import Limits

CONTINUATION = b"\xff\xff\xff\xff"
END_OF_STREAM = CONTINUATION + b"\x00\x00\x00\x00"

_SKIP_CHUNK_BYTES = 1 << 20
_HEADER_TYPE_SLOT = 1
_BODY_LENGTH_SLOT = 3


class ByteSource(Protocol):
    """A blocking binary input, such as :class:`io.BufferedReader`."""

    def read(self, size: int, /) -> bytes: ...

    def readinto(self, buffer: Any, /) -> int | None: ...


class MessageKind(IntEnum):
    """The ``MessageHeader`` union tag of an IPC message."""

    NONE = 0
    SCHEMA = 1
    DICTIONARY_BATCH = 2
    RECORD_BATCH = 3
    TENSOR = 4
    SPARSE_TENSOR = 5


@dataclass(frozen=True, slots=True)
class Message:
    """One encapsulated message: ``header`` is prefix plus flatbuffer, ``body`` may be empty."""

    kind: MessageKind
    header: bytes
    body: pa.Buffer | None


@dataclass(frozen=True, slots=True)
class Header:
    """A message read up to its body: prefix plus flatbuffer, and the body length to follow."""

    kind: MessageKind
    data: bytes
    body_length: int


def read_header(source: ByteSource, limits: Limits) -> Header | None:
    """Reads one message up to its body; ``None`` at an end-of-stream marker.

    Raises :class:`ConnectionClosed` on a clean end of input before the first byte,
    :class:`Truncated` on an end of input inside the message, and
    :class:`Malformed` / :class:`LimitExceeded` for bytes that break the format
    (``recoverable`` tells whether the source is still on a message boundary; an
    oversized body is skipped so that it is).
    """
    prefix = _read_exact(source, 4, at_boundary=True)
    if prefix != CONTINUATION:
        raise Malformed(
            f"not an Arrow IPC stream: expected continuation marker ff ff ff ff, got {prefix.hex(' ')}",
            recoverable=False,
        )
    length_bytes = _read_exact(source, 4)
    length = int.from_bytes(length_bytes, "little", signed=True)
    if length == 0:
        return None
    if length < 0 or length > limits.metadata_bytes_max:
        raise LimitExceeded(
            f"IPC message header of {length} bytes exceeds the limit of {limits.metadata_bytes_max}",
            recoverable=False,
        )
    flatbuffer = _read_exact(source, length)
    kind, body_length = parse_header(flatbuffer)
    if body_length > limits.body_bytes_max:
        _skip(source, body_length)
        raise LimitExceeded(
            f"IPC message body of {body_length} bytes exceeds the limit of {limits.body_bytes_max}",
            recoverable=True,
        )
    return Header(kind, prefix + length_bytes + flatbuffer, body_length)


def read_message(source: ByteSource, limits: Limits) -> Message | None:
    """Reads one whole message (see :func:`read_header`); ``None`` at an end-of-stream marker."""
    header = read_header(source, limits)
    if header is None:
        return None
    return Message(header.kind, header.data, _read_body(source, header.body_length))


def read_messages(source: ByteSource, limits: Limits) -> list[Message]:
    """Reads the rest of a stream through its end marker."""
    messages: list[Message] = []
    while (message := read_message(source, limits)) is not None:
        messages.append(message)
        _check_count(len(messages), limits)
    return messages


def skip_stream(source: ByteSource, limits: Limits) -> int:
    """Consumes messages up to and including the end-of-stream marker; returns how many."""
    count = 0
    while (header := read_header(source, limits)) is not None:
        _skip(source, header.body_length)
        count += 1
        _check_count(count, limits)
    return count


def _check_count(count: int, limits: Limits) -> None:
    if count > limits.messages_per_stream_max:
        raise LimitExceeded(f"IPC stream has more than {limits.messages_per_stream_max} messages", recoverable=False)


def parse_header(flatbuffer: bytes) -> tuple[MessageKind, int]:
    """Reads the header type and body length out of a flatbuffer ``Message`` table."""
    try:
        table = struct.unpack_from("<I", flatbuffer, 0)[0]
        vtable = table - struct.unpack_from("<i", flatbuffer, table)[0]
        if vtable < 0:
            raise IndexError("vtable before buffer start")
        vtable_size = struct.unpack_from("<H", flatbuffer, vtable)[0]

        def slot(index: int) -> int:
            at = 4 + 2 * index
            return struct.unpack_from("<H", flatbuffer, vtable + at)[0] if at + 2 <= vtable_size else 0

        kind_at, body_at = slot(_HEADER_TYPE_SLOT), slot(_BODY_LENGTH_SLOT)
        kind_tag = flatbuffer[table + kind_at] if kind_at else 0
        body_length = struct.unpack_from("<q", flatbuffer, table + body_at)[0] if body_at else 0
        kind = MessageKind(kind_tag)
    except (struct.error, IndexError, ValueError) as exc:
        raise Malformed(f"unreadable IPC message header: {exc}", recoverable=False) from exc
    if body_length < 0:
        raise Malformed(f"IPC message declares a negative body length {body_length}", recoverable=False)
    return kind, body_length


def _read_exact(source: ByteSource, size: int, *, at_boundary: bool = False) -> bytes:
    data = source.read(size)
    while len(data) < size:
        more = source.read(size - len(data))
        if not more:
            break
        data += more
    if len(data) < size:
        if at_boundary and not data:
            raise ConnectionClosed("the peer closed the connection")
        raise Truncated(f"input ended inside an IPC message ({len(data)} of {size} bytes)")
    return data


def _read_body(source: ByteSource, size: int) -> pa.Buffer | None:
    if size == 0:
        return None
    body = pa.allocate_buffer(size)
    view = memoryview(body)
    filled = 0
    while filled < size:
        got = source.readinto(view[filled:])
        if not got:
            raise Truncated(f"input ended inside an IPC message body ({filled} of {size} bytes)")
        filled += got
    view.release()
    return body


def _skip(source: ByteSource, size: int) -> None:
    while size > 0:
        got = len(source.read(min(size, _SKIP_CHUNK_BYTES)))
        if not got:
            raise Truncated(f"input ended while skipping an IPC message body ({size} bytes left)")
        size -= got
