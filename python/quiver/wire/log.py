"""Log and error records: zero-row batches whose custom metadata carries the message.

A log batch has ``vgi_rpc.log_level`` and ``vgi_rpc.log_message`` (plus an optional JSON
object in ``vgi_rpc.log_extra``). An error is a log at level ``EXCEPTION`` whose extras
name the exception type; its code, kind and details are also set as top-level keys.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from . import keys
from .metadata import BatchMetadata

TRACEBACK_CHARS_MAX = 16000
ERROR_DETAILS_BYTES_MAX = 4096
_TRACEBACK_FRAMES = 5


class LogLevel(StrEnum):
    """Log levels, spelled exactly as on the wire."""

    EXCEPTION = "EXCEPTION"
    ERROR = "ERROR"
    WARN = "WARN"
    INFO = "INFO"
    DEBUG = "DEBUG"
    TRACE = "TRACE"


class ErrorCode(StrEnum):
    """gRPC status names used as ``vgi_rpc.error_code``."""

    UNKNOWN = "UNKNOWN"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    INTERNAL = "INTERNAL"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A message for the client's log, with optional string-valued extras."""

    level: LogLevel
    message: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    server_id: str | None = None
    request_id: str | None = None

    def to_metadata(self) -> dict[str, str]:
        """The record as batch metadata (without server and request ids)."""
        metadata = {keys.LOG_LEVEL: self.level.value, keys.LOG_MESSAGE: self.message}
        if self.extra:
            metadata[keys.LOG_EXTRA] = json.dumps(dict(self.extra))
        return metadata

    @classmethod
    def from_metadata(cls, metadata: BatchMetadata) -> LogRecord:
        """Parses a log batch's metadata; raises ``ValueError`` for an unknown level."""
        level = LogLevel(metadata[keys.LOG_LEVEL])
        return cls(
            level,
            metadata[keys.LOG_MESSAGE],
            parse_extra(metadata.get(keys.LOG_EXTRA)),
            metadata.get(keys.SERVER_ID),
            metadata.get(keys.REQUEST_ID),
        )


@dataclass(frozen=True, slots=True)
class ErrorReport:
    """An error as it travels: the exception type name, its message, and classification."""

    exception_type: str
    message: str
    code: str = ErrorCode.UNKNOWN.value
    kind: str | None = None
    details: list[Any] | None = None
    traceback: str | None = None
    frames: list[dict[str, Any]] | None = None
    server_id: str | None = None
    request_id: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException, *, code: str | None = None, kind: str | None = None) -> ErrorReport:
        """Describes ``exc``; code, kind and details come from its attributes when present."""
        frames = traceback.extract_tb(exc.__traceback__)[-_TRACEBACK_FRAMES:]
        return cls(
            exception_type=getattr(exc, "exception_type", type(exc).__name__),
            message=str(exc),
            code=str(code or getattr(exc, "error_code", ErrorCode.UNKNOWN.value)),
            kind=kind or getattr(exc, "error_kind", None),
            details=getattr(exc, "error_details", None),
            traceback=_truncate("".join(traceback.format_exception(exc))),
            frames=[
                {"file": frame.filename, "line": frame.lineno, "function": frame.name, "code": frame.line or ""}
                for frame in frames
            ],
        )

    def to_metadata(self) -> dict[str, str]:
        """The report as the metadata of an EXCEPTION batch (without server and request ids)."""
        extra: dict[str, Any] = {
            "exception_type": self.exception_type,
            "exception_message": self.message,
            "error_code": self.code,
        }
        metadata = {
            keys.LOG_LEVEL: LogLevel.EXCEPTION.value,
            keys.LOG_MESSAGE: f"{self.exception_type}: {self.message}",
        }
        details = _encode_details(self.details)
        if self.kind:
            extra["error_kind"] = self.kind
        if details is not None:
            extra["error_details"] = self.details
        if self.traceback:
            extra["traceback"] = self.traceback
        if self.frames:
            extra["frames"] = self.frames
        metadata[keys.LOG_EXTRA] = json.dumps(extra)
        if self.kind:
            metadata[keys.ERROR_KIND] = self.kind
        metadata[keys.ERROR_CODE] = self.code
        if details is not None:
            metadata[keys.ERROR_DETAILS] = details
        return metadata

    @classmethod
    def from_metadata(cls, metadata: BatchMetadata) -> ErrorReport:
        """Parses an EXCEPTION batch; top-level keys win over their copies in the extras."""
        extra = parse_extra(metadata.get(keys.LOG_EXTRA))
        details_text = metadata.get(keys.ERROR_DETAILS)
        details = _parse_json(details_text) if details_text else extra.get("error_details")
        traceback_text = extra.get("traceback")
        return cls(
            exception_type=str(extra.get("exception_type", LogLevel.EXCEPTION.value)),
            message=metadata.get(keys.LOG_MESSAGE, ""),
            code=metadata.get(keys.ERROR_CODE) or str(extra.get("error_code", ErrorCode.UNKNOWN.value)),
            kind=metadata.get(keys.ERROR_KIND) or extra.get("error_kind"),
            details=details if isinstance(details, list) else None,
            traceback=traceback_text if isinstance(traceback_text, str) else None,
            server_id=metadata.get(keys.SERVER_ID),
            request_id=metadata.get(keys.REQUEST_ID),
        )


def parse_extra(text: str | None) -> dict[str, Any]:
    """The ``log_extra`` object; anything that is not a JSON object reads as empty."""
    value = _parse_json(text) if text else None
    return value if isinstance(value, dict) else {}


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _encode_details(details: list[Any] | None) -> str | None:
    if details is None:
        return None
    text = json.dumps(details, separators=(",", ":"))
    return text if len(text.encode()) <= ERROR_DETAILS_BYTES_MAX else None


def _truncate(text: str) -> str:
    if len(text) <= TRACEBACK_CHARS_MAX:
        return text
    return text[:TRACEBACK_CHARS_MAX] + "\n… <traceback truncated>"
