"""The WSGI application: a quiver :class:`~quiver.rpc.Server` behind vgi-rpc's HTTP routes.

Routes (``{prefix}`` is ``""`` or a path such as ``/vgi``):

====================================================  ======================================
``POST {prefix}/{protocol}/{method}``                 unary call; body = request stream
``POST {prefix}/{protocol}/{method}/init``            open a stream call (runs a producer's
                                                      first turn)
``POST {prefix}/{protocol}/{method}/exchange``        one more turn, or a cancel
``GET | OPTIONS | HEAD {prefix}/health``              health JSON / capability headers
====================================================  ======================================

Bodies are Arrow IPC streams (``application/vnd.apache.arrow.stream``), the same
streams the byte-stream transports carry. A stream call is a chain of requests tied by
two tokens in batch metadata (see :mod:`.streams`): ``/init`` answers with the
optional header stream, then the output stream whose last batch carries the tokens
(an exchange's first data batch carries them on later turns; a producer's turn ends
with a zero-row token batch unless it finished).

Status codes follow vgi-rpc: 400 for a malformed request, 404 for an unknown protocol
or method, 413 for an oversized body, 415 for a wrong content type or coding, and a
method's own error as 200 with ``X-VGI-RPC-Error: true`` (the error batch is in the
body either way). Every response carries the capability headers vgi-rpc clients probe
with ``OPTIONS {prefix}/health``. A response larger than ``max_response_bytes`` (or
the client's ``VGI-Accept-Max-Response-Bytes``) is replaced by a
``ResponseTooLargeError`` and, for a stream, ends the stream.

Every response carries ``X-Request-ID``: the client's own when it sent one, else the
request id the call ran under (the request's ``vgi_rpc.request_id``, or one minted here),
the same id every log and error batch of the call is stamped with, so a client's record
and the worker's can be joined. An Arrow body is compressed with the coding the client's
accept headers negotiate (:func:`.codec.negotiate`).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from http import HTTPStatus
from typing import Any

import pyarrow as pa

from ...rpc import errors
from ...rpc.conform import conform_input, decode_params
from ...rpc.context import CallContext
from ...rpc.dispatch import (
    BoundMethod,
    HostedProtocol,
    Rejected,
    check_request_rows,
    check_stream,
    conformed_answers,
    header_batch,
    request_envelope,
    version_gate,
)
from ...rpc.method import MethodKind
from ...rpc.server import Server
from ...rpc.stream import EMPTY_SCHEMA, AnnotatedBatch, Output
from ...wire import keys
from ...wire.error import WireError
from ...wire.limits import Limits
from ...wire.log import ErrorCode, ErrorReport, LogRecord
from ...wire.metadata import BatchMetadata
from ...wire.reader import WholeStream, decode_stream
from ...wire.sink import GatherBuffer
from ...wire.writer import StreamWriter, empty_batch
from . import codec
from .message import body_length
from .streams import STREAM_TTL_S, STREAMS_MAX, OpenStream, StreamTable, StreamTokenError

ARROW_STREAM = "application/vnd.apache.arrow.stream"
RPC_ERROR_HEADER = "X-VGI-RPC-Error"
REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_CHARS_MAX = 1024
"""A longer inbound ``X-Request-ID`` is not echoed (a fresh one is minted instead)."""
ACCEPT_MAX_RESPONSE_BYTES = "VGI-Accept-Max-Response-Bytes"
RESPONSE_BYTES_MIN = 65536
"""The smallest response cap a server or client may set (vgi-rpc's rule)."""
BUDGET_BYTES_MAX = (1 << 53) - 1
_POSITIVE = re.compile(r"[1-9][0-9]*\Z", re.ASCII)
_FRAMEWORK_KEYS = (keys.STREAM_STATE, keys.CALL_STATE, keys.CANCEL)

StartResponse = Callable[..., Any]


class ResponseTooLargeError(RuntimeError):
    """A successful answer does not fit the response cap (not retryable: same call, same size)."""

    error_code = ErrorCode.RESOURCE_EXHAUSTED.value


class _Turn(Enum):
    CONTINUES = "continues"
    FINISHED = "finished"
    FAILED = "failed"


@dataclass(slots=True)
class _Reply:
    status: int
    chunks: list[Any]
    failed: bool = False
    content_type: str = ARROW_STREAM
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: OpenStream | None = None
    """A stream call this reply continues: parked once the reply is known to fit the cap."""
    request_id: str = ""
    """The id the call ran under, when a call ran."""


class _Refused(Exception):
    """A request refused before any method ran: an HTTP status and an Arrow error body."""

    def __init__(self, status: int, report: ErrorReport) -> None:
        super().__init__(report.message)
        self.status = status
        self.report = report


class WsgiApp:
    """A WSGI application serving every protocol ``server`` hosts.

    ``max_response_bytes`` caps response bodies (at least 64 KiB; ``None``: only the
    client's own cap applies); ``max_request_bytes`` caps request bodies (``None``: the
    server's :class:`~quiver.Limits`). Open streams live in a :class:`StreamTable` of
    ``streams_max`` calls, each expiring after ``stream_ttl_s`` unused.
    ``response_codings`` are the codings responses may be compressed with, and the ones
    ``VGI-Supported-Encodings`` advertises (``()``: never compress, advertised as an empty
    list); compressed requests are decoded either way, since what a server sends is its
    policy but what a peer sends is not.
    """

    def __init__(
        self,
        server: Server,
        *,
        prefix: str = "",
        max_response_bytes: int | None = None,
        max_request_bytes: int | None = None,
        stream_ttl_s: float = STREAM_TTL_S,
        streams_max: int = STREAMS_MAX,
        response_codings: Sequence[str] = codec.ENCODINGS,
    ) -> None:
        if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError(f"prefix must be empty or start with '/' and not end with one, got {prefix!r}")
        if max_response_bytes is not None and not RESPONSE_BYTES_MIN <= max_response_bytes <= BUDGET_BYTES_MAX:
            raise ValueError(f"max_response_bytes must be from {RESPONSE_BYTES_MIN} through {BUDGET_BYTES_MAX}")
        if max_request_bytes is not None and max_request_bytes < 1:
            raise ValueError("max_request_bytes must be positive")
        unknown = [name for name in response_codings if name not in codec.ENCODINGS]
        if unknown:
            raise ValueError(f"response_codings must be drawn from {codec.ENCODINGS}, got {unknown}")
        self.server = server
        self.prefix = prefix
        self.max_response_bytes = max_response_bytes
        self.max_request_bytes = max_request_bytes
        self.limits: Limits = server.limits
        self.streams = StreamTable(ttl_s=stream_ttl_s, capacity=streams_max)
        self.response_codings = tuple(dict.fromkeys(response_codings))
        self.capability_headers = _capability_headers(max_response_bytes, max_request_bytes, self.response_codings)
        first = next(iter(server.protocols), "")
        self._health = json.dumps({"status": "ok", "server_id": server.server_id, "protocol": first}).encode()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[Any]:
        inbound = _inbound_request_id(environ)
        reply = self._handle(environ, inbound)
        request_id = inbound or reply.request_id or _mint_request_id()
        headers = [("Content-Type", reply.content_type), *self.capability_headers, *reply.headers]
        headers.append((REQUEST_ID_HEADER, request_id))
        if reply.failed:
            headers.append((RPC_ERROR_HEADER, "true"))
        chunks = reply.chunks
        coding, stamp = codec.negotiate(
            environ.get("HTTP_ACCEPT_ENCODING"), environ.get("HTTP_X_VGI_ACCEPT_ENCODING"), self.response_codings
        )
        if coding is not None and reply.content_type == ARROW_STREAM and body_length(chunks) > 0:
            chunks = [codec.encode(chunks, coding)]
            headers.append((stamp, coding))
        headers.append(("Content-Length", str(body_length(chunks))))
        start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", headers)
        if environ.get("quiver.buffers"):
            return chunks
        return [b"".join(chunks)] if chunks else []

    # -- routing ------------------------------------------------------------------------

    def _handle(self, environ: dict[str, Any], inbound_request_id: str | None) -> _Reply:
        verb = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "") or "/"
        if not path.startswith(self.prefix):
            return _text(404, "not found")
        rest = path[len(self.prefix) :]
        if rest == "/health":
            if verb in ("GET", "HEAD"):
                return _Reply(200, [self._health], content_type="application/json")
            if verb == "OPTIONS":
                return _Reply(200, [], content_type="text/plain")
            return _text(405, "health answers GET, HEAD and OPTIONS", allow="GET, HEAD, OPTIONS")
        if rest in ("", "/"):
            return _text(200, f"quiver HTTP endpoint serving {', '.join(self.server.protocols)}\n")
        parts = rest[1:].split("/")
        if verb == "OPTIONS":
            return _Reply(204, [], content_type="text/plain", headers=[("Allow", "POST, OPTIONS")])
        if len(parts) == 1 and parts[0].startswith("__") and parts[0].endswith("__") and verb == "POST":
            return self._refusal(_Refused(404, errors.reserved_not_implemented(parts[0])), inbound_request_id)
        if len(parts) == 2 or (len(parts) == 3 and parts[2] in ("init", "exchange")):
            if verb != "POST":
                known = parts[0] in self.server.protocols
                return _text(405, "RPC endpoints answer POST", allow="POST") if known else _text(404, "not found")
            kind = parts[2] if len(parts) == 3 else "unary"
            return self._post(environ, parts[0], parts[1], kind, inbound_request_id)
        return _text(404, "not found")

    def _post(
        self, environ: dict[str, Any], protocol_name: str, method_name: str, kind: str, inbound_request_id: str | None
    ) -> _Reply:
        try:
            budget = self._budget(environ)
            hosted, bound = self._resolve(protocol_name, method_name)
            if (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip() != ARROW_STREAM:
                raise _Refused(
                    415,
                    ErrorReport(
                        "TypeError", f"Expected Content-Type: '{ARROW_STREAM}', got {environ.get('CONTENT_TYPE')!r}"
                    ),
                )
            body = self._body(environ)
            peer = f"http:{environ.get('REMOTE_ADDR', '?')}:{environ.get('REMOTE_PORT', '?')}"
            if kind == "exchange":
                reply = self._exchange(hosted, bound, body, peer)
            else:
                if bound.spec.is_stream != (kind == "init"):
                    raise _Refused(400, _misrouted(method_name, bound.spec.is_stream))
                reply = self._call(hosted, bound, body, peer, inbound_request_id, opens_stream=kind == "init")
        except _Refused as refused:
            return self._refusal(refused, inbound_request_id)
        return self._capped(reply, budget, method_name)

    def _resolve(self, protocol_name: str, method_name: str) -> tuple[HostedProtocol, BoundMethod]:
        hosted = self.server.protocols.get(protocol_name)
        if hosted is None:
            report = errors.check_protocol_name(protocol_name, list(self.server.protocols))
            raise _Refused(404, report or errors.protocol_error(f"protocol {protocol_name!r} is not hosted"))
        bound = hosted.methods.get(method_name)
        if bound is None:
            raise _Refused(404, errors.method_not_found(hosted.name, method_name, list(hosted.methods)))
        return hosted, bound

    # -- requests -----------------------------------------------------------------------

    def _budget(self, environ: dict[str, Any]) -> int | None:
        """The response cap of this request: the server's and the client's, whichever is lower."""
        raw = environ.get("HTTP_" + ACCEPT_MAX_RESPONSE_BYTES.upper().replace("-", "_"))
        client: int | None = None
        if raw is not None:
            if _POSITIVE.fullmatch(raw) is None or not RESPONSE_BYTES_MIN <= int(raw) <= BUDGET_BYTES_MAX:
                text = (
                    f"{ACCEPT_MAX_RESPONSE_BYTES} must be one decimal integer "
                    f"from {RESPONSE_BYTES_MIN} through {BUDGET_BYTES_MAX}"
                )
                raise _Refused(400, ErrorReport("ValueError", text))
            client = int(raw)
        caps = [cap for cap in (self.max_response_bytes, client) if cap is not None]
        return min(caps) if caps else None

    def _body(self, environ: dict[str, Any]) -> bytes:
        request_max = self.max_request_bytes or self.limits.body_bytes_max
        body = environ.get("quiver.body")
        if body is None:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            if length > request_max:
                raise _Refused(413, _too_large(length, request_max))
            body = environ["wsgi.input"].read(length)
        elif len(body) > request_max:
            raise _Refused(413, _too_large(len(body), request_max))
        coding = environ.get("HTTP_CONTENT_ENCODING")
        if coding:
            try:
                body = codec.decode(body, coding, request_max)
            except codec.CodingError as exc:
                status = 413 if exc.too_large else 415 if "not supported" in str(exc) else 400
                raise _Refused(status, ErrorReport("ValueError", str(exc))) from exc
        return bytes(body)

    def _request(self, body: bytes) -> tuple[str, dict[str, str], pa.RecordBatch]:
        stream = self._stream(body)
        try:
            method, metadata, batch = request_envelope(stream)
            check_request_rows(batch)
        except Rejected as rejected:
            raise _Refused(400, rejected.report) from rejected
        return method, metadata, batch

    def _stream(self, body: bytes) -> WholeStream:
        """The request stream of a body (decoded in C++: the body is already in memory)."""
        try:
            decoded = decode_stream(pa.py_buffer(body), 0, self.limits)
        except WireError as exc:
            raise _Refused(400, errors.malformed(str(exc))) from exc
        if decoded is None:
            raise _Refused(400, errors.malformed("the request body is empty; expected an Arrow IPC stream"))
        return decoded[0]

    def _params(
        self, hosted: HostedProtocol, bound: BoundMethod, method: str, metadata: BatchMetadata, batch: pa.RecordBatch
    ) -> dict[str, Any]:
        """The checks between reading a request and running it; the decoded parameters."""
        spec = bound.spec
        if method != spec.name:
            raise _Refused(
                400,
                ErrorReport(
                    "TypeError",
                    f"Method name mismatch: URL path has '{spec.name}' but Arrow IPC custom_metadata "
                    f"'vgi_rpc.method' has '{method}'. These must match.",
                ),
            )
        named = metadata.get(keys.PROTOCOL)
        if named is not None and named != hosted.name:
            raise _Refused(
                400, errors.protocol_error(f"the URL names protocol '{hosted.name}' but the request names '{named}'")
            )
        report = version_gate(hosted, metadata)
        if report is not None:
            raise _Refused(400, report)
        try:
            return decode_params(spec, batch)
        except Exception as exc:  # every parameter problem is reported to the client
            raise _Refused(400, ErrorReport.from_exception(exc)) from exc

    # -- calls --------------------------------------------------------------------------

    def _call(
        self,
        hosted: HostedProtocol,
        bound: BoundMethod,
        body: bytes,
        peer: str,
        inbound_request_id: str | None,
        *,
        opens_stream: bool,
    ) -> _Reply:
        method, metadata, batch = self._request(body)
        params = self._params(hosted, bound, method, metadata, batch)
        del batch
        request_id = inbound_request_id or metadata.get(keys.REQUEST_ID) or _mint_request_id()
        ctx = CallContext(bound.spec.name, metadata, request_id=request_id, server_id=self.server.server_id, peer=peer)
        reply = self._open(hosted, bound, params, ctx) if opens_stream else self._unary(bound, params, ctx)
        reply.request_id = request_id
        return reply

    def _unary(self, bound: BoundMethod, params: dict[str, Any], ctx: CallContext) -> _Reply:
        spec = bound.spec
        try:
            result = spec.result_batch(bound(params, ctx))
        except Exception as exc:  # the method's error goes to the client
            result = ErrorReport.from_exception(exc)
        size = 0 if isinstance(result, ErrorReport) else result.nbytes
        out = GatherBuffer()
        writer = StreamWriter(out, spec.result_schema, expected_bytes=size)
        self._write_logs(writer, ctx.take_logs(), ctx.request_id)
        if isinstance(result, ErrorReport):
            writer.write_empty(self._stamp(result.to_metadata(), ctx.request_id))
        else:
            writer.write(result)
        writer.close()
        return _Reply(200, out.take(), failed=isinstance(result, ErrorReport))

    def _open(self, hosted: HostedProtocol, bound: BoundMethod, params: dict[str, Any], ctx: CallContext) -> _Reply:
        spec = bound.spec
        out = GatherBuffer()
        try:
            stream = check_stream(spec, bound(params, ctx))
            header = header_batch(spec, stream.header)
        except Exception as exc:  # an init error replaces the header / output stream
            self._write_error_stream(out, ErrorReport.from_exception(exc), ctx.take_logs(), ctx.request_id)
            return _Reply(200, out.take(), failed=True)
        entry = self.streams.open(hosted.name, bound, stream, ctx.request_id, dict(ctx.metadata))
        logs = ctx.take_logs()
        if header is not None:
            writer = StreamWriter(out, header.schema, expected_bytes=header.nbytes)
            self._write_logs(writer, logs, ctx.request_id)
            writer.write(header)
            writer.close()
            logs = []
        output = StreamWriter(out, stream.output_schema)
        self._write_logs(output, logs, ctx.request_id)
        if spec.kind is MethodKind.PRODUCER:
            # Over HTTP a producer's first turn runs inside /init; its tick carries the
            # /init request's metadata, as a real first tick would.
            tick = empty_batch(EMPTY_SCHEMA)
            turn = self._turn(entry, tick, _user_metadata(ctx.metadata), output, first=True, peer=ctx.peer)
        else:
            entry.renew()
            output.write_empty({keys.STREAM_STATE: entry.cursor_token, keys.CALL_STATE: entry.call_token})
            turn = _Turn.CONTINUES
        output.close()
        return _Reply(200, out.take(), failed=turn is _Turn.FAILED, stream=_continuing(entry, turn))

    def _exchange(self, hosted: HostedProtocol, bound: BoundMethod, body: bytes, peer: str) -> _Reply:
        stream = self._stream(body)
        if not stream.batches:
            raise _Refused(400, errors.malformed("an /exchange request carries one batch"))
        batch, metadata = stream.batches[0]
        cursor = metadata.get(keys.STREAM_STATE)
        if cursor is None:
            raise _Refused(400, ErrorReport("RuntimeError", "Missing state token in exchange request"))
        try:
            entry = self.streams.take(cursor, metadata.get(keys.CALL_STATE), hosted.name, bound.spec.name)
        except StreamTokenError as exc:
            raise _Refused(400, ErrorReport.from_exception(exc)) from exc
        output_schema = entry.stream.output_schema
        out = GatherBuffer()
        if keys.CANCEL in metadata and batch.num_rows == 0:
            ctx = self._context(entry, metadata, peer)
            with contextlib.suppress(Exception):  # errors in a cancel hook are deliberately ignored
                entry.stream.state.on_cancel(ctx)
            writer = StreamWriter(out, output_schema, expected_bytes=0)
            writer.close()
            return _Reply(200, out.take(), request_id=entry.request_id)
        output = StreamWriter(out, output_schema)
        turn = self._turn(entry, batch, _user_metadata(metadata), output, first=False, peer=peer)
        output.close()
        return _Reply(
            200,
            out.take(),
            failed=turn is _Turn.FAILED,
            stream=_continuing(entry, turn),
            request_id=entry.request_id,
        )

    def _turn(
        self,
        entry: OpenStream,
        batch: pa.RecordBatch,
        metadata: dict[str, str],
        output: StreamWriter,
        *,
        first: bool,
        peer: str,
    ) -> _Turn:
        """Runs one turn and writes its answers, the next cursor token included."""
        stream, spec = entry.stream, entry.bound.spec
        out = Output(stream.output_schema)
        try:
            batch = conform_input(stream.input_schema, batch)
            ctx = self._context(entry, metadata, peer, records=out.items)
            stream.state.process(AnnotatedBatch(batch, metadata), out, ctx)
            answers = conformed_answers(spec.kind, out)
        except Exception as exc:  # a turn's error ends the stream
            output.write_empty(self._stamp(ErrorReport.from_exception(exc).to_metadata(), entry.request_id))
            return _Turn.FAILED
        turn = _Turn.FINISHED if out.finished else _Turn.CONTINUES
        if turn is _Turn.CONTINUES:
            entry.renew()
        exchange = spec.kind is MethodKind.EXCHANGE
        for answer in answers:
            if isinstance(answer, LogRecord):
                output.write_empty(self._stamp(answer.to_metadata(), entry.request_id))
            elif exchange:
                output.write(answer.batch, {**answer.metadata, keys.STREAM_STATE: entry.cursor_token})
            else:
                output.write(answer.batch, answer.metadata)
        if turn is _Turn.CONTINUES and not exchange:
            tokens = {keys.STREAM_STATE: entry.cursor_token}
            if first:
                tokens[keys.CALL_STATE] = entry.call_token
            output.write_empty(tokens)
        return turn

    # -- answers ------------------------------------------------------------------------

    def _capped(self, reply: _Reply, budget: int | None, method: str) -> _Reply:
        """Parks a stream that goes on, unless its answer breaks the response cap (which ends it)."""
        size = body_length(reply.chunks)
        if budget is not None and size > budget and not reply.failed:
            out = GatherBuffer()
            error = ResponseTooLargeError(
                f"HTTP body exceeds max_response_bytes ({size} > {budget}) for method {method!r}"
            )
            self._write_error_stream(out, ErrorReport.from_exception(error), (), reply.request_id)
            return _Reply(200, out.take(), failed=True, request_id=reply.request_id)
        if reply.stream is not None:
            self.streams.park(reply.stream)
        return reply

    def _refusal(self, refused: _Refused, inbound_request_id: str | None) -> _Reply:
        """An error body for a request no method ran for, stamped with the id the header echoes."""
        request_id = inbound_request_id or _mint_request_id()
        out = GatherBuffer()
        self._write_error_stream(out, refused.report, (), request_id)
        return _Reply(refused.status, out.take(), failed=refused.status >= 500, request_id=request_id)

    def _write_error_stream(
        self, out: GatherBuffer, report: ErrorReport, logs: Sequence[LogRecord], request_id: str
    ) -> None:
        writer = StreamWriter(out, EMPTY_SCHEMA, expected_bytes=0)
        self._write_logs(writer, logs, request_id)
        writer.write_empty(self._stamp(report.to_metadata(), request_id))
        writer.close()

    def _write_logs(self, writer: StreamWriter, records: Sequence[LogRecord], request_id: str) -> None:
        for record in records:
            writer.write_empty(self._stamp(record.to_metadata(), request_id))

    def _stamp(self, metadata: dict[str, str], request_id: str) -> dict[str, str]:
        metadata[keys.SERVER_ID] = self.server.server_id
        if request_id:
            metadata[keys.REQUEST_ID] = request_id
        return metadata

    def _context(
        self, entry: OpenStream, metadata: BatchMetadata, peer: str, records: list[Any] | None = None
    ) -> CallContext:
        return CallContext(
            entry.bound.spec.name,
            metadata,
            request_id=entry.request_id,
            server_id=self.server.server_id,
            peer=peer,
            records=records,
        )


def make_wsgi_app(server: Server, **options: Any) -> WsgiApp:
    """A :class:`WsgiApp` for ``server`` (options as for :class:`WsgiApp`)."""
    return WsgiApp(server, **options)


def _capability_headers(
    max_response_bytes: int | None, max_request_bytes: int | None, response_codings: tuple[str, ...]
) -> list[tuple[str, str]]:
    # Present even when empty: an empty list says "compresses nothing", an absent header
    # says "predates the advertisement", and clients act on the difference.
    headers = [
        ("VGI-Accept-Max-Response-Bytes-Support", "true"),
        ("VGI-Externalization-Enabled", "false"),
        ("VGI-Supported-Encodings", ", ".join(response_codings)),
    ]
    if max_response_bytes is not None:
        headers.append(("VGI-Max-Response-Bytes", str(max_response_bytes)))
    if max_request_bytes is not None:
        headers.append(("VGI-Max-Request-Bytes", str(max_request_bytes)))
    return headers


def _inbound_request_id(environ: dict[str, Any]) -> str | None:
    """The client's ``X-Request-ID``, when it sent a usable one."""
    raw = (environ.get("HTTP_X_REQUEST_ID") or "").strip()
    if not raw or len(raw) > REQUEST_ID_CHARS_MAX:
        return None
    return raw


def _mint_request_id() -> str:
    """A fresh correlation id: 16 hex characters, as vgi-rpc mints them."""
    return secrets.token_hex(8)


def _continuing(entry: OpenStream, turn: _Turn) -> OpenStream | None:
    return entry if turn is _Turn.CONTINUES else None


def _user_metadata(metadata: BatchMetadata) -> dict[str, str]:
    """Request metadata without the HTTP stream bookkeeping keys."""
    return {key: value for key, value in metadata.items() if key not in _FRAMEWORK_KEYS}


def _misrouted(method: str, is_stream: bool) -> ErrorReport:
    if is_stream:
        return ErrorReport("TypeError", f"Stream method '{method}' requires /init and /exchange endpoints")
    return ErrorReport("TypeError", f"Method '{method}' is not a stream")


def _too_large(size: int, limit: int) -> ErrorReport:
    text = f"request body of {size} bytes exceeds max_request_bytes={limit}"
    return ErrorReport("RequestTooLarge", text, code=ErrorCode.RESOURCE_EXHAUSTED.value)


def _text(status: int, text: str, *, allow: str | None = None) -> _Reply:
    headers = [("Allow", allow)] if allow else []
    return _Reply(status, [text.encode()], content_type="text/plain; charset=utf-8", headers=headers)
