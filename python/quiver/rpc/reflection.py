"""``vgi_rpc.Reflection.v1``: what a server hosts, and each protocol's wire surface.

Discovery is an ordinary co-hosted protocol, registered by every :class:`Server`, so a
client reaches it like any other: ``list_protocols`` is the cheap question (names,
versions, hashes), ``describe`` the full one (every method's schemas as Arrow IPC).
It declares no ``protocol_version`` on purpose: a client whose version was refused calls
it to learn what the server has, so it must never be gated itself.

Schemas travel serialized (empty bytes when absent); the :mod:`protocol_hash` is what
compares across ports, taken over decoded schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa

from ..wire import keys
from ..wire.log import ErrorCode
from .dispatch import HostedProtocol
from .errors import PROTOCOL_NOT_SUPPORTED
from .method import MethodKind, MethodSpec
from .protocol_hash import protocol_hash

if TYPE_CHECKING:
    from .server import Server

REFLECTION_PROTOCOL = "vgi_rpc.Reflection.v1"
SERVER_VERSION = "quiver"

STREAM_KINDS = {MethodKind.UNARY: "", MethodKind.PRODUCER: "producer", MethodKind.EXCHANGE: "exchange"}


@dataclass(frozen=True)
class MethodInfo:
    """One method's wire surface; ``stream_kind`` is empty for unary methods."""

    name: str
    method_type: str
    has_return: bool
    has_header: bool
    stream_kind: str
    params_schema_ipc: bytes
    result_schema_ipc: bytes
    header_schema_ipc: bytes
    idempotency: str = "unknown"
    deprecated: bool = False
    deprecation_message: str = ""


@dataclass(frozen=True)
class ServiceDescription:
    """One protocol, fully; no server identity, so two servers of one protocol describe it alike."""

    protocol: str
    protocol_version: str
    protocol_hash: str
    deprecated: bool
    deprecation_message: str
    features: list[str]
    methods: list[MethodInfo]


@dataclass(frozen=True)
class ProtocolSummary:
    """One hosted protocol without its methods: enough to tell whether a description changed."""

    protocol: str
    protocol_version: str
    protocol_hash: str
    deprecated: bool
    deprecation_message: str
    features: list[str]


@dataclass(frozen=True)
class ProtocolList:
    """What a server hosts, reflection included, and who the server is."""

    server_id: str
    server_version: str
    request_version: str
    protocols: list[ProtocolSummary]


class Reflection:
    """Discovery, versioned by its name."""

    protocol_name: ClassVar[str] = REFLECTION_PROTOCOL

    def list_protocols(self) -> ProtocolList: ...
    def describe(self, protocol: str) -> ServiceDescription: ...


class ProtocolNotSupportedError(LookupError):
    """``describe`` was asked about a protocol this server does not host; classified as routing is."""

    error_code = ErrorCode.UNIMPLEMENTED.value
    error_kind = PROTOCOL_NOT_SUPPORTED


class ReflectionImpl:
    """Answers from the server's live protocol table, so it cannot disagree with dispatch."""

    def __init__(self, server: Server) -> None:
        self._server = server
        # A hosted protocol never changes once added, so each description is built once.
        self._descriptions: dict[str, ServiceDescription] = {}

    def list_protocols(self) -> ProtocolList:
        hosted = self._server.protocols.values()
        return ProtocolList(
            server_id=self._server.server_id,
            server_version=SERVER_VERSION,
            request_version=keys.REQUEST_VERSION_VALUE,
            protocols=[_summary(self._describe(protocol)) for protocol in hosted],
        )

    def describe(self, protocol: str) -> ServiceDescription:
        hosted = self._server.protocols.get(protocol)
        if hosted is None:
            names = sorted(self._server.protocols)
            raise ProtocolNotSupportedError(f"This server does not host protocol {protocol!r}. Hosted: {names}.")
        return self._describe(hosted)

    def _describe(self, hosted: HostedProtocol) -> ServiceDescription:
        description = self._descriptions.get(hosted.name)
        if description is None:
            specs = {name: bound.spec for name, bound in hosted.methods.items()}
            description = self._descriptions[hosted.name] = describe_protocol(hosted.name, hosted.version, specs)
        return description


def describe_protocol(name: str, version: str | None, methods: Mapping[str, MethodSpec]) -> ServiceDescription:
    """The description of one protocol, methods sorted by name as the hash orders them."""
    return ServiceDescription(
        protocol=name,
        protocol_version=version or "",
        protocol_hash=protocol_hash(name, methods),
        deprecated=False,
        deprecation_message="",
        features=[],
        methods=[method_info(methods[method]) for method in sorted(methods)],
    )


def method_info(spec: MethodSpec) -> MethodInfo:
    has_return = spec.kind is MethodKind.UNARY and spec.result is not None
    return MethodInfo(
        name=spec.name,
        method_type="unary" if spec.kind is MethodKind.UNARY else "stream",
        has_return=has_return,
        has_header=spec.header_schema is not None,
        stream_kind=STREAM_KINDS[spec.kind],
        params_schema_ipc=_schema_ipc(spec.params_schema),
        result_schema_ipc=_schema_ipc(spec.result_schema if has_return else None),
        header_schema_ipc=_schema_ipc(spec.header_schema),
    )


def _schema_ipc(schema: pa.Schema | None) -> bytes:
    """Empty bytes, not null, for an absent schema: every reader treats it as absent either way."""
    return b"" if schema is None else schema.serialize().to_pybytes()


def _summary(description: ServiceDescription) -> ProtocolSummary:
    return ProtocolSummary(
        protocol=description.protocol,
        protocol_version=description.protocol_version,
        protocol_hash=description.protocol_hash,
        deprecated=description.deprecated,
        deprecation_message=description.deprecation_message,
        features=list(description.features),
    )
