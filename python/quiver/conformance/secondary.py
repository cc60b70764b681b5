"""``conformance.Secondary.v1``: the second protocol every conformance worker hosts beside the primary.

It makes visible what a one-protocol worker hides:

- routing by (protocol, method): ``echo_string`` has the primary's name and signature but
  prefixes its answer, so a server dispatching on the bare method name answers wrongly;
- a per-protocol version gate: it declares no ``protocol_version`` while the primary
  declares one, so gating every call against the primary's version refuses these calls;
- the error model: ``fail`` raises the code and kind asked for, with fixed details (one
  ``ErrorInfo``, a ``RetryInfo`` when a delay is given, one detail type no client knows);
  ``fail_oversized`` raises details over the 4 KiB cap, which the server must drop whole.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..wire.log import ErrorCode

SECONDARY_PROTOCOL = "conformance.Secondary.v1"
ECHO_PREFIX = "secondary:"
INVALID_CODE_KIND = "invalid_code"
OVERSIZED_KIND = "details_oversized"
OVERSIZED_PADDING_BYTES = 5000

# gRPC's canonical status names: the closed set ``fail`` accepts.
STATUS_CODES = frozenset(
    {
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    }
)

FAIL_ERROR_INFO: dict[str, Any] = {"@type": "vgi_rpc.ErrorInfo", "metadata": {"fixture": SECONDARY_PROTOCOL}}
PROBE_DETAIL: dict[str, Any] = {
    "@type": f"{SECONDARY_PROTOCOL}.Probe",
    "note": "clients ignore detail types they do not know",
}


class StatusError(Exception):
    """An error with an explicit status code, kind and details (read by the error report)."""

    def __init__(self, message: str, *, code: str, kind: str | None, details: list[dict[str, Any]]) -> None:
        super().__init__(message)
        assert code in STATUS_CODES, code
        self.error_code = code
        self.error_kind = kind or None
        self.error_details = details


def retry_info(delay_seconds: float) -> dict[str, Any]:
    """A ``RetryInfo`` detail; a whole number of seconds travels as an integer, as every port writes it."""
    delay: float | int = int(delay_seconds) if float(delay_seconds).is_integer() else float(delay_seconds)
    return {"@type": "vgi_rpc.RetryInfo", "retry_delay_seconds": delay}


def fail_details(retry_delay_seconds: float) -> list[dict[str, Any]]:
    """The details ``fail`` sends, in wire order."""
    details = [FAIL_ERROR_INFO]
    if retry_delay_seconds > 0:
        details.append(retry_info(retry_delay_seconds))
    details.append(PROBE_DETAIL)
    return details


class Secondary:
    """The fixture protocol; no ``protocol_version`` on purpose."""

    protocol_name: ClassVar[str] = SECONDARY_PROTOCOL

    def echo_string(self, value: str) -> str: ...
    def fail(self, code: str, kind: str, retry_delay_seconds: float) -> None: ...
    def fail_oversized(self) -> None: ...


class SecondaryImpl:
    """Answers :class:`Secondary` exactly as the shared suite asserts."""

    def echo_string(self, value: str) -> str:
        return ECHO_PREFIX + value

    def fail(self, code: str, kind: str, retry_delay_seconds: float) -> None:
        if code not in STATUS_CODES:
            violation = {"field": "code", "description": "must be a canonical code name"}
            raise StatusError(
                f"{code!r} is not a canonical error code",
                code=ErrorCode.INVALID_ARGUMENT.value,
                kind=INVALID_CODE_KIND,
                details=[{"@type": "vgi_rpc.BadRequest", "field_violations": [violation]}],
            )
        raise StatusError(
            f"{SECONDARY_PROTOCOL} fail: {code} {kind}".rstrip(),
            code=code,
            kind=kind,
            details=fail_details(retry_delay_seconds),
        )

    def fail_oversized(self) -> None:
        # RetryInfo first and small: a server that dropped only the detail that does not fit
        # would keep it and turn the error retryable, which the suite can observe.
        raise StatusError(
            f"{SECONDARY_PROTOCOL} fail_oversized: details exceed 4 KiB",
            code=ErrorCode.RESOURCE_EXHAUSTED.value,
            kind=OVERSIZED_KIND,
            details=[
                retry_info(1),
                {"@type": "vgi_rpc.ErrorInfo", "metadata": {"padding": "x" * OVERSIZED_PADDING_BYTES}},
            ],
        )
