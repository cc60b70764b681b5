"""What every server front end shares: hosted methods, request checks, stream rules.

A byte-stream :class:`~quiver.rpc.session.Session` and the HTTP application
(:mod:`quiver.transport.http`) both read a request stream, check its envelope, route it
to a bound method, gate the protocol version, run the method and hold its stream to the
turn rules. The steps live here once; each front end only decides how bytes arrive and
where the answers go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..wire import keys
from ..wire.log import ErrorReport, LogRecord
from ..wire.metadata import BatchMetadata
from ..wire.reader import WholeStream
from . import errors
from .conform import conform_output
from .context import CallContext
from .method import MethodKind, MethodSpec
from .stream import AnnotatedBatch, Output, Stream
from .types import dataclass_to_batch

TRANSPORT_OPTIONS = "__transport_options__"
"""The reserved method a byte-stream client asks for the server's transport capabilities."""


@dataclass(frozen=True, slots=True)
class BoundMethod:
    """A protocol method and the implementation function that answers it."""

    spec: MethodSpec
    function: Callable[..., Any]
    wants_ctx: bool

    def __call__(self, params: dict[str, Any], ctx: CallContext) -> Any:
        if self.wants_ctx:
            return self.function(*params.values(), ctx=ctx)
        return self.function(*params.values())


@dataclass(frozen=True, slots=True)
class HostedProtocol:
    """A protocol a server hosts: wire name, version (if gated) and bound methods."""

    name: str
    version: str | None
    methods: dict[str, BoundMethod]


class Rejected(Exception):
    """A request that was read whole but cannot be served; ``report`` goes to the client."""

    def __init__(self, report: ErrorReport) -> None:
        super().__init__(report.message)
        self.report = report


def request_envelope(stream: WholeStream) -> tuple[str, dict[str, str], pa.RecordBatch]:
    """The method name, metadata and batch of a request stream, its envelope checked.

    Raises :class:`Rejected` unless the stream carries exactly one batch with a UTF-8
    ``vgi_rpc.method`` and ``vgi_rpc.request_version`` 1.
    """
    if len(stream.batches) != 1:
        count = len(stream.batches)
        raise Rejected(errors.protocol_error(f"request stream carries {count} batches; expected exactly one"))
    batch, metadata = stream.batches[0]
    method = metadata.get(keys.METHOD)
    if method is None:
        raise Rejected(errors.missing_method())
    version = metadata.get(keys.REQUEST_VERSION)
    if version != keys.REQUEST_VERSION_VALUE:
        raise Rejected(errors.bad_request_version(version))
    if not is_utf8(method):
        raise Rejected(errors.protocol_error(f"Invalid 'vgi_rpc.method' {method!r}: not a UTF-8 method name."))
    return method, metadata, batch


def check_request_rows(batch: pa.RecordBatch) -> None:
    """A request with parameters carries exactly one row."""
    if batch.num_columns and batch.num_rows != 1:
        raise Rejected(errors.protocol_error(f"Expected 1 row in request batch, got {batch.num_rows}."))


def route(
    protocols: Mapping[str, HostedProtocol], method: str, metadata: BatchMetadata
) -> tuple[HostedProtocol, BoundMethod]:
    """Finds the protocol and method a request addresses (``vgi_rpc.protocol`` names it)."""
    if method.startswith("__") and method.endswith("__") and len(method) > 4:
        raise Rejected(errors.reserved_not_implemented(method))
    name = metadata.get(keys.PROTOCOL)
    report = errors.check_protocol_name(name, list(protocols))
    if report is not None:
        raise Rejected(report)
    protocol = protocols[name or ""]
    bound = protocol.methods.get(method)
    if bound is None:
        raise Rejected(errors.method_not_found(protocol.name, method, list(protocol.methods)))
    return protocol, bound


def version_gate(protocol: HostedProtocol, metadata: BatchMetadata) -> ErrorReport | None:
    """The version error for a call to a version-gated protocol, if any."""
    if protocol.version is None:
        return None
    return errors.check_protocol_version(protocol.name, metadata.get(keys.PROTOCOL_VERSION), protocol.version)


def check_stream(spec: MethodSpec, value: Any) -> Stream[Any, Any]:
    """The :class:`Stream` a stream method returned, checked for its kind."""
    if not isinstance(value, Stream):
        raise TypeError(f"{spec.name}() must return a Stream, got {type(value).__name__}")
    if not isinstance(value.output_schema, pa.Schema) or not isinstance(value.input_schema, pa.Schema):
        raise TypeError(f"{spec.name}() returned a Stream without pyarrow schemas")
    if spec.kind is MethodKind.PRODUCER and len(value.input_schema):
        raise TypeError(f"{spec.name}() is a producer; its input schema must be empty")
    return value


def header_batch(spec: MethodSpec, header: Any) -> pa.RecordBatch | None:
    """The one-row header batch of a ``Stream[State, Header]`` method (``None`` without one)."""
    if spec.header_type is None:
        return None
    if not isinstance(header, spec.header_type):
        raise TypeError(f"{spec.name}() must return a {spec.header_type.__name__} header, got {type(header).__name__}")
    return dataclass_to_batch(header)


def conformed_answers(kind: MethodKind, out: Output) -> list[LogRecord | AnnotatedBatch]:
    """A turn's logs and data, checked against the turn rules, data conformed to the output schema."""
    if kind is MethodKind.EXCHANGE and out.finished:
        raise RuntimeError("an exchange cannot finish; the client ends it by closing its input")
    if not out.finished and out.data_count == 0:
        raise RuntimeError("No data batch was emitted")
    return [
        entry
        if isinstance(entry, LogRecord)
        else AnnotatedBatch(conform_output(out.schema, entry.batch), entry.metadata)
        for entry in out.items
    ]


def is_utf8(text: str) -> bool:
    """Whether ``text`` decoded from valid UTF-8 (undecodable bytes arrive as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
