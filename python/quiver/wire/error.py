"""Errors raised while moving IPC streams over a byte stream."""

from __future__ import annotations


class WireError(Exception):
    """The bytes of a stream could not be read or written.

    ``recoverable`` says whether the byte stream is still aligned on a message boundary:
    when true, the rest of the offending IPC stream can be skipped and the connection
    keeps working; when false, the connection must be closed.
    """

    recoverable: bool = False


class ConnectionClosed(WireError):
    """The peer closed the connection (or it broke) between or inside messages."""


class Truncated(WireError):
    """The byte stream ended in the middle of a message."""


class Malformed(WireError):
    """The bytes are not a valid Arrow IPC stream, or a batch failed validation.

    ``stream_ended``: the offending stream's end marker was read too, so nothing is left to skip.
    """

    def __init__(self, message: str, *, recoverable: bool, stream_ended: bool = False) -> None:
        super().__init__(message)
        self.recoverable = recoverable
        self.stream_ended = stream_ended


class LimitExceeded(Malformed):
    """A message or stream is larger than the configured :class:`~quiver.wire.Limits` allow."""
