"""The error a client raises when a call fails remotely or breaks the protocol."""

from __future__ import annotations

from typing import Any

from ..wire.log import ErrorReport


class RpcError(Exception):
    """A call failed: the server raised, or the conversation broke the protocol.

    ``error_type`` is the remote exception's class name (``"ValueError"``), or
    ``"ProtocolError"`` for a conversation that went wrong; ``str(error)`` is
    ``"<error_type>: <error_message>"``.
    """

    def __init__(
        self,
        error_type: str,
        error_message: str,
        *,
        remote_traceback: str | None = None,
        request_id: str | None = None,
        error_code: str = "UNKNOWN",
        error_kind: str | None = None,
        error_details: list[Any] | None = None,
    ) -> None:
        super().__init__(f"{error_type}: {error_message}")
        self.error_type = error_type
        self.error_message = error_message
        self.remote_traceback = remote_traceback
        self.request_id = request_id
        self.error_code = error_code
        self.error_kind = error_kind
        self.error_details = error_details

    @classmethod
    def from_report(cls, report: ErrorReport) -> RpcError:
        """The error described by an EXCEPTION batch."""
        return cls(
            report.exception_type,
            report.message,
            remote_traceback=report.traceback,
            request_id=report.request_id,
            error_code=report.code,
            error_kind=report.kind,
            error_details=report.details,
        )


def protocol_error(message: str) -> RpcError:
    """A client-side protocol violation (``error_type == "ProtocolError"``)."""
    return RpcError("ProtocolError", message)
