"""Reading IPC streams off a byte stream that carries many back to back.

Two ways, both never consuming a byte past a stream's end marker:

* :func:`read_stream` takes a whole stream at once. Use it where the peer sends the
  stream whole (requests, unary replies, headers): it decodes in C++ without calling
  back into Python, and any decoding error leaves the source on the next stream.
* :class:`StreamReader` reads batch by batch, pulling a message only when asked. Use it
  for the lockstep input/output streams of stream calls.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .error import ConnectionClosed, LimitExceeded, Malformed, Truncated, WireError
from .framing import END_OF_STREAM, ByteSource, Message, MessageKind, read_message, skip_stream
from .limits import DEFAULT_LIMITS, Limits
from .metadata import decode_metadata

Item = tuple[pa.RecordBatch, dict[str, str]]
"""A batch and its custom metadata."""

_JOIN_BELOW_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class WholeStream:
    """A stream read to its end marker."""

    schema: pa.Schema
    batches: list[Item]


def read_stream(source: ByteSource, limits: Limits = DEFAULT_LIMITS) -> WholeStream | None:
    """Reads and decodes a whole stream; ``None`` if the input ended cleanly before it."""
    first = _first_message(source, limits)
    if first is None:
        return None
    messages = [first]
    offset = _wire_bytes(first)
    try:
        while (message := read_message(source, limits)) is not None:
            messages.append(message)
            if len(messages) - 1 > limits.messages_per_stream_max:
                raise LimitExceeded(
                    f"IPC stream has more than {limits.messages_per_stream_max} messages", recoverable=False
                )
            offset += _wire_bytes(message)
    except Malformed as exc:
        if exc.recoverable:
            skip_stream(source, limits)
        raise _at_stream_byte(exc, offset) from exc
    except Truncated as exc:
        raise Truncated(f"{exc} (message at stream byte {offset})") from exc
    try:
        reader = pa.ipc.open_stream(_decodable(messages, limits))
        batches = []
        while True:
            batch, raw = reader.read_next_batch_with_custom_metadata()
            batches.append(_checked(batch, raw, limits))
    except StopIteration:
        return WholeStream(reader.schema, batches)
    except (pa.ArrowException, ValueError) as exc:
        raise Malformed(f"invalid IPC stream: {exc}", recoverable=True) from exc


def decode_stream(
    buffer: pa.Buffer, offset: int = 0, limits: Limits = DEFAULT_LIMITS
) -> tuple[WholeStream, int] | None:
    """Decodes the stream that starts at ``offset`` of an in-memory body, all in C++.

    For bodies that arrive whole (HTTP): no Python framing pass, no copy of the bodies.
    Returns the stream and the offset just past its end marker (where a next stream
    starts), or ``None`` when nothing is left at ``offset``. Malformed bytes raise
    :class:`Malformed`; batches are validated as :func:`read_stream` does.
    """
    if offset >= buffer.size:
        return None
    source = pa.BufferReader(buffer)
    source.seek(offset)
    batches: list[Item] = []
    try:
        reader = pa.ipc.open_stream(source)
        while True:
            batch, raw = reader.read_next_batch_with_custom_metadata()
            batches.append(_checked(batch, raw, limits))
            if len(batches) >= limits.messages_per_stream_max:
                raise Malformed("IPC stream has too many batches", recoverable=False)
    except StopIteration:
        return WholeStream(reader.schema, batches), source.tell()
    except (pa.ArrowException, ValueError) as exc:
        raise Malformed(f"invalid IPC stream: {exc}", recoverable=False) from exc


class StreamReader:
    """Reads one IPC stream batch by batch, never consuming a byte past its end marker.

    Open with :meth:`open`, then call :meth:`read` until it returns ``None``. After an
    error, :meth:`drain` skips what is left of the stream when the error was
    recoverable, so the next stream on the connection starts on a clean boundary.

    ``lockstep``: the peer writes the rest of this stream only as the reader's side takes its
    turns (a stream call's output), so skipping it at once would wait forever. An error then
    leaves the rest unread: the caller ends its turns first, then skips (:meth:`drain`, or
    :func:`~quiver.wire.framing.skip_stream` on the source when opening failed).
    """

    __slots__ = ("_feeder", "_finished", "_limits", "_reader", "_source", "schema")

    def __init__(self, source: ByteSource, limits: Limits, feeder: _Feeder, *, lockstep: bool = False) -> None:
        self._source = source
        self._limits = limits
        self._feeder = feeder
        self._finished = False
        try:
            self._reader = pa.ipc.open_stream(feeder)
        except WireError:
            raise
        except (pa.ArrowException, ValueError) as exc:
            if not lockstep:
                self.drain()
            raise Malformed(f"invalid IPC schema message: {exc}", recoverable=True) from exc
        self.schema: pa.Schema = self._reader.schema

    @classmethod
    def open(
        cls, source: ByteSource, limits: Limits = DEFAULT_LIMITS, *, lockstep: bool = False
    ) -> StreamReader | None:
        """Reads the schema of the next stream; ``None`` if the input ended cleanly before it."""
        first = _first_message(source, limits, skip_on_error=not lockstep)
        if first is None:
            return None
        feeder = _Feeder(source, limits)
        feeder.queue(first)
        return cls(source, limits, feeder, lockstep=lockstep)

    def read(self) -> Item | None:
        """The next batch and its custom metadata, or ``None`` at the end of the stream."""
        if self._finished:
            return None
        try:
            batch, raw = self._reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            self._finished = True
            return None
        except WireError:
            raise
        except (pa.ArrowException, ValueError) as exc:
            raise Malformed(f"invalid IPC message: {exc}", recoverable=True) from exc
        return _checked(batch, raw, self._limits)

    def drain(self) -> int:
        """Skips the rest of the stream through its end marker; returns messages skipped."""
        if self._finished:
            return 0
        self._finished = True
        if self._feeder.ended:
            return 0
        return skip_stream(self._source, self._limits)


def _wire_bytes(message: Message) -> int:
    """How many bytes ``message`` took on the byte stream (prefix, header, body)."""
    return len(message.header) + (message.body.size if message.body is not None else 0)


def _at_stream_byte(exc: Malformed, offset: int) -> Malformed:
    """The same error, naming where in the stream the failing message starts."""
    return type(exc)(f"{exc} (message at stream byte {offset})", recoverable=exc.recoverable)


def _first_message(source: ByteSource, limits: Limits, *, skip_on_error: bool = True) -> Message | None:
    """The schema message opening a stream; ``None`` on a clean end of input."""
    try:
        first = read_message(source, limits)
    except ConnectionClosed:
        return None
    if first is None:
        raise Malformed("IPC stream ended before its schema message", recoverable=True, stream_ended=True)
    if first.kind is not MessageKind.SCHEMA:
        if skip_on_error:
            skip_stream(source, limits)
        raise Malformed(f"IPC stream starts with a {first.kind.name} message, not a schema", recoverable=True)
    return first


def _checked(batch: pa.RecordBatch, raw: Any, limits: Limits) -> Item:
    if limits.validate:
        try:
            batch.validate(full=True)
        except pa.ArrowException as exc:
            raise Malformed(f"batch failed validation: {exc}", recoverable=True) from exc
    return batch, decode_metadata(raw)


def _decodable(messages: list[Message], limits: Limits) -> Any:
    """What pyarrow decodes a whole stream from.

    Small streams become one joined buffer (decoded in C++ only); large ones a preloaded
    feeder (no copy of the bodies).
    """
    body_bytes = sum(message.body.size for message in messages if message.body is not None)
    if body_bytes < _JOIN_BELOW_BYTES:
        parts: list[Any] = []
        for message in messages:
            parts.append(message.header)
            if message.body is not None:
                parts.append(message.body)
        parts.append(END_OF_STREAM)
        return pa.py_buffer(b"".join(parts))
    feeder = _Feeder(None, limits)
    for message in messages:
        feeder.queue(message)
    feeder.end()
    return feeder


class _Feeder:
    """The file object pyarrow reads from: whole messages, pulled only when asked for."""

    __slots__ = ("_limits", "_messages", "_pending", "_source", "closed", "ended")

    def __init__(self, source: ByteSource | None, limits: Limits) -> None:
        self._source = source
        self._limits = limits
        self._pending: deque[Any] = deque()
        self._messages = 0
        self.closed = False
        self.ended = False

    def queue(self, message: Message) -> None:
        self._messages += 1
        if self._messages > self._limits.messages_per_stream_max:
            raise Malformed(
                f"IPC stream has more than {self._limits.messages_per_stream_max} messages", recoverable=False
            )
        self._pending.append(memoryview(message.header))
        if message.body is not None:
            self._pending.append(message.body)

    def end(self) -> None:
        self.ended = True
        self._pending.append(memoryview(END_OF_STREAM))

    def read(self, size: int = -1) -> Any:
        if not self._pending:
            if self.ended or self._source is None:
                return b""
            self._pull(self._source)
        head = self._pending[0]
        if len(head) == size:
            return self._pending.popleft()
        if len(head) > size >= 0:
            self._pending[0] = head[size:]
            return head[:size]
        return self._read_across(size)

    def _pull(self, source: ByteSource) -> None:
        message = read_message(source, self._limits)
        if message is None:
            self.end()
        else:
            self.queue(message)

    def _read_across(self, size: int) -> bytes:
        out = bytearray()
        while self._pending and (size < 0 or len(out) < size):
            head = self._pending.popleft()
            want = len(head) if size < 0 else min(len(head), size - len(out))
            out += head[:want]
            if want < len(head):
                self._pending.appendleft(head[want:])
        return bytes(out)
