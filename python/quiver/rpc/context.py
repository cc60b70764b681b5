"""The context a method body runs in: who is calling, and a log for the client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..wire.log import LogLevel, LogRecord


class CallContext:
    """Handed to a method (or a stream turn) that declares a ``ctx`` parameter.

    Logs written with :meth:`log` travel to the client as log batches, in order, ahead
    of the call's result.
    """

    __slots__ = ("_records", "metadata", "method", "peer", "request_id", "server_id")

    def __init__(
        self,
        method: str,
        metadata: Mapping[str, str],
        *,
        request_id: str,
        server_id: str,
        peer: str,
        records: list[Any] | None = None,
    ) -> None:
        self.method = method
        self.metadata = metadata
        self.request_id = request_id
        self.server_id = server_id
        self.peer = peer
        self._records: list[Any] = [] if records is None else records

    def log(self, level: LogLevel | str, message: str, **extra: Any) -> None:
        """Sends a log record to the client (``EXCEPTION`` is reserved for errors)."""
        self._records.append(log_record(level, message, extra))

    def take_logs(self) -> list[LogRecord]:
        """The records logged so far, removed from the context."""
        records = list(self._records)
        self._records.clear()
        return records


def log_record(level: LogLevel | str, message: str, extra: Mapping[str, Any]) -> LogRecord:
    """A client-directed log record; extras travel as strings."""
    level = LogLevel(level)
    if level is LogLevel.EXCEPTION:
        raise ValueError("level EXCEPTION is reserved for errors; raise an exception instead")
    return LogRecord(level, message, {key: str(value) for key, value in extra.items()})
