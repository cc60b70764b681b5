"""The errors the framework itself reports, with the texts vgi-rpc peers expect."""

from __future__ import annotations

import re
from functools import lru_cache

from ..wire.log import ErrorCode, ErrorReport

_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_PROTOCOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
PROTOCOL_NAME_BYTES_MAX = 255

METHOD_NOT_IMPLEMENTED = "method_not_implemented"
PROTOCOL_NOT_SPECIFIED = "protocol_not_specified"
PROTOCOL_NOT_SUPPORTED = "protocol_not_supported"
PROTOCOL_VERSION_MISMATCH = "protocol_version_mismatch"


def protocol_error(detail: str) -> ErrorReport:
    """A request that breaks the wire protocol (reported as ``RpcError: ProtocolError: ...``)."""
    return ErrorReport("RpcError", f"ProtocolError: {detail}")


def malformed(detail: str) -> ErrorReport:
    """Bytes that are not a valid request stream."""
    return ErrorReport("ArrowInvalid", detail, code=ErrorCode.INVALID_ARGUMENT.value)


def missing_method() -> ErrorReport:
    return protocol_error(
        "Missing 'vgi_rpc.method' in request batch custom_metadata. Each request batch must carry a "
        "'vgi_rpc.method' key in its Arrow IPC custom_metadata with the method name as a UTF-8 string."
    )


def bad_request_version(value: str | None) -> ErrorReport:
    fix = "Set the 'vgi_rpc.request_version' custom_metadata value to b'1'."
    if value is None:
        return ErrorReport("VersionError", f"Missing 'vgi_rpc.request_version' in request batch custom_metadata. {fix}")
    return ErrorReport("VersionError", f"Unsupported request version {value.encode()!r}, expected b'1'. {fix}")


def reserved_not_implemented(name: str) -> ErrorReport:
    if name == "__describe__":
        text = (
            "'__describe__' was retired. Introspection is now the 'vgi_rpc.Reflection.v1' protocol: call "
            "'list_protocols' for what this server hosts, then 'describe' for one protocol's methods."
        )
    else:
        text = f"This server does not implement the reserved method '{name}'."
    return _not_implemented(text)


def method_not_found(protocol: str, name: str, available: list[str]) -> ErrorReport:
    return _not_implemented(f"Protocol '{protocol}' has no method '{name}'. Available: {sorted(available)}.")


def check_protocol_name(name: str | None, hosted: list[str]) -> ErrorReport | None:
    """The routing error for a request's protocol key, if any."""
    if name in hosted:
        return None
    if not name:
        return ErrorReport(
            "ProtocolNotSpecifiedError",
            "Request carries no 'vgi_rpc.protocol' routing key. Every request must name the protocol it "
            f"addresses. This server hosts: {hosted}.",
            code=ErrorCode.INVALID_ARGUMENT.value,
            kind=PROTOCOL_NOT_SPECIFIED,
        )
    if len(name.encode("utf-8", "surrogateescape")) > PROTOCOL_NAME_BYTES_MAX or not _PROTOCOL_NAME.fullmatch(name):
        return _not_supported(f"'vgi_rpc.protocol' is not a protocol name: {name!r}.")
    return _not_supported(f"This server does not host protocol '{name}'. Hosted: {hosted}.")


@lru_cache(maxsize=256)
def check_protocol_version(protocol: str, client: str | None, server: str) -> ErrorReport | None:
    """The version-gate error, if major and minor of ``client`` differ from ``server``'s (cached)."""
    client_parts = _semver(client)
    server_parts = _semver(server)
    if client_parts is not None and server_parts is not None and client_parts[:2] == server_parts[:2]:
        return None
    if client is None:
        direction = (
            "the client did not send a vgi_rpc.protocol_version metadata key. This is either a vgi-rpc "
            "framework bug or a non-VGI client connecting to a VGI worker."
        )
    elif client_parts is None:
        direction = "client sent a malformed protocol_version. Expected canonical semver MAJOR.MINOR.PATCH."
    elif server_parts is not None and client_parts < server_parts:
        direction = (
            f"client is too old; upgrade the VGI extension/client to a version supporting protocol_version {server}."
        )
    else:
        direction = f"server is too old; upgrade the VGI worker to a version supporting protocol_version {client}."
    shown = "<not declared>" if client is None else client
    text = (
        f"VGI client/worker protocol_version mismatch for protocol '{protocol}'.\n"
        f"  Client: {shown}\n  Server: {server}\n  Direction: {direction}"
    )
    violation = {
        "type": "protocol_version",
        "subject": protocol,
        "description": f"client declares {client or '<none>'}, server requires {server}; major and minor must match",
    }
    return ErrorReport(
        "ProtocolVersionError",
        text,
        code=ErrorCode.FAILED_PRECONDITION.value,
        kind=PROTOCOL_VERSION_MISMATCH,
        details=[{"@type": "vgi_rpc.PreconditionFailure", "violations": [violation]}],
    )


def is_semver(version: str) -> bool:
    """Whether ``version`` is canonical ``MAJOR.MINOR.PATCH``."""
    return _semver(version) is not None


def _semver(version: str | None) -> tuple[int, int, int] | None:
    match = _SEMVER.fullmatch(version) if version is not None else None
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def _not_implemented(text: str) -> ErrorReport:
    return ErrorReport(
        "MethodNotImplementedError", text, code=ErrorCode.UNIMPLEMENTED.value, kind=METHOD_NOT_IMPLEMENTED
    )


def _not_supported(text: str) -> ErrorReport:
    return ErrorReport(
        "ProtocolNotSupportedError", text, code=ErrorCode.UNIMPLEMENTED.value, kind=PROTOCOL_NOT_SUPPORTED
    )
