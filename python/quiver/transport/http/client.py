"""The client: typed calls to a protocol served over HTTP (by quiver or by vgi-rpc).

>>> with http_connect(Calculator, "http://127.0.0.1:8000") as calc:
...     calc.add(1.0, 2.0)
...     for batch in calc.count(3):
...         print(batch.batch)

The calls and their results are those of :class:`quiver.Client`; only the transport
differs. Each unary call is one ``POST``; a stream call is an ``/init`` request and one
``/exchange`` request per turn, tied together by the tokens the server hands out.
Closing a stream sends nothing (HTTP streams hold no connection); :meth:`~HttpStreamCall.cancel`
tells the server. One connection is kept alive; a client is not shared between threads.

A relay sends requests encoded elsewhere with :meth:`~HttpClient.call_raw` and
:meth:`~HttpClient.stream_raw`, as it would on :class:`quiver.Client`. Sticky sessions
(:meth:`~HttpClient.begin_session`, :mod:`.sessions`) and upload URLs
(:meth:`~HttpClient.request_upload_urls`) are the HTTP-only extras.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

import pyarrow as pa

from ...rpc.client import MethodProxy, RpcError, protocol_error, split_answers, split_items, unary_value
from ...rpc.method import MethodKind, MethodSpec, protocol_spec
from ...rpc.stream import EMPTY_SCHEMA, AnnotatedBatch
from ...rpc.types import dataclass_from_batch
from ...wire import keys
from ...wire.error import WireError
from ...wire.limits import DEFAULT_LIMITS, Limits
from ...wire.log import ErrorReport, LogRecord
from ...wire.metadata import BatchMetadata
from ...wire.reader import Item, WholeStream, decode_stream
from ...wire.role import BatchRole, classify
from ...wire.sink import GatherBuffer
from ...wire.writer import StreamWriter, empty_batch
from . import codec
from .app import ACCEPT_MAX_RESPONSE_BYTES, ARROW_STREAM
from .connection import HttpConnection, Response, WsgiConnection
from .sessions import SESSION, SESSION_ROUTE, SessionStack

P = TypeVar("P")
LogHandler = Callable[[LogRecord], None]
_FRAMEWORK_KEYS = (keys.STREAM_STATE, keys.CALL_STATE)
#: The server-level route that vends upload URLs, and the most one request may ask for.
UPLOAD_URL_ROUTE = "/__upload_url__/init"
UPLOAD_URLS_MAX = 100


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a server advertises on ``OPTIONS {prefix}/health``."""

    max_response_bytes: int | None
    max_request_bytes: int | None
    accepts_response_cap: bool
    encodings: tuple[str, ...]
    max_externalized_response_bytes: int | None = None
    externalization_enabled: bool = False
    upload_url_support: bool = False
    max_upload_bytes: int | None = None
    sticky_enabled: bool = False
    sticky_default_ttl: int | None = None
    sticky_echo_headers: tuple[str, ...] = ()

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Capabilities:
        """Parses the ``VGI-*`` capability headers (lower-case names)."""
        encodings = headers.get("vgi-supported-encodings")
        echo = headers.get("vgi-sticky-echo-headers") or ""
        return cls(
            _int_or_none(headers.get("vgi-max-response-bytes")),
            _int_or_none(headers.get("vgi-max-request-bytes")),
            headers.get("vgi-accept-max-response-bytes-support") == "true",
            ("zstd",) if encodings is None else tuple(codec.parse_codings(encodings)),
            _int_or_none(headers.get("vgi-max-externalized-response-bytes")),
            headers.get("vgi-externalization-enabled") == "true",
            headers.get("vgi-upload-url-support") == "true",
            _int_or_none(headers.get("vgi-max-upload-bytes")),
            headers.get("vgi-sticky-enabled") == "true",
            _int_or_none(headers.get("vgi-sticky-default-ttl")),
            tuple(name.strip() for name in echo.split(",") if name.strip()),
        )


class HttpClient(Generic[P]):
    """A client of ``protocol`` served at ``url`` (plus ``prefix``); ``api`` (or ``with``) gives typed methods.

    ``accept_max_response_bytes`` is sent on every call (after checking once that the
    server honours it) so that a server refuses, rather than sends, a larger answer.
    ``compression`` (``"zstd"`` or ``"gzip"``) compresses request bodies and asks for
    compressed answers; by default bodies travel as they are, which is the fastest
    choice on a local network; ``compression_level`` overrides the coding's default level.
    ``headers`` go out on every request. ``connection`` replaces the socket connection to
    ``url`` (a :class:`WsgiConnection` calls an app in process).
    """

    def __init__(
        self,
        protocol: type[P],
        url: str,
        *,
        prefix: str = "",
        on_log: LogHandler | None = None,
        limits: Limits = DEFAULT_LIMITS,
        accept_max_response_bytes: int | None = None,
        compression: str | None = None,
        timeout_s: float | None = None,
        connection: HttpConnection | WsgiConnection | None = None,
        headers: Mapping[str, str] | None = None,
        compression_level: int | None = None,
    ) -> None:
        if compression is not None and compression not in codec.ENCODINGS:
            raise ValueError(f"compression must be one of {codec.ENCODINGS} or None, got {compression!r}")
        self.protocol = protocol_spec(protocol)
        self.connection = connection or HttpConnection(
            url, timeout_s=timeout_s, response_bytes_max=limits.body_bytes_max
        )
        self.prefix = prefix.rstrip("/")
        self.on_log = on_log
        self.limits = limits
        self.compression = compression
        self.accept_max_response_bytes = accept_max_response_bytes
        self.compression_level = compression_level
        #: Open sticky-session scopes; the innermost applies to every request.
        self.sessions = SessionStack()
        self._extra_headers = dict(headers or {})
        self._headers = {**self._extra_headers, "Content-Type": ARROW_STREAM}
        self._headers["Accept-Encoding"] = compression or "identity"
        if compression is not None:
            self._headers["Content-Encoding"] = compression
        self._capabilities: Capabilities | None = None
        self.api: P = cast(P, MethodProxy(self))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Calls a unary method and returns its decoded result."""
        spec = self._method(method, stream=False)
        response = self._post(f"/{method}", self._request(spec, args, kwargs))
        return unary_value(spec, self._answers(self._stream_of(_Body(response))))

    def stream(self, method: str, *args: Any, **kwargs: Any) -> HttpStreamCall:
        """Starts a producer or exchange call (``/init``); reads its header when it declares one."""
        spec = self._method(method, stream=True)
        return self._open_stream(spec, self._request(spec, args, kwargs), has_header=spec.header_type is not None)

    def call_raw(self, batch: pa.RecordBatch, metadata: BatchMetadata) -> Item | None:
        """Calls a unary method with a request encoded elsewhere (a relay's).

        ``metadata`` is the caller's whole map and goes out as it is; its protocol (this
        client's when it names none) and method name the route. Returns the reply's data
        batch with its metadata (``None`` when the reply carries none); a remote error
        raises :class:`RpcError`.
        """
        response = self._send(self._raw_route(metadata), _serialize(batch, dict(metadata), batch.nbytes))
        error, items = split_items(self._answers(self._stream_of(_Body(response))))
        if error is not None:
            raise error
        return items[0] if items else None

    def stream_raw(
        self, batch: pa.RecordBatch, metadata: BatchMetadata, *, exchange: bool, has_header: bool
    ) -> HttpStreamCall:
        """Starts a stream call with a request encoded elsewhere, as :meth:`call_raw` sends it.

        The caller says what the method is; the header arrives undecoded in
        :attr:`HttpStreamCall.header_batch`.
        """
        kind = MethodKind.EXCHANGE if exchange else MethodKind.PRODUCER
        spec = MethodSpec(metadata.get(keys.METHOD, ""), kind, (), batch.schema, None, EMPTY_SCHEMA, None, None)
        chunks = _serialize(batch, dict(metadata), batch.nbytes)
        return self._open_stream(spec, chunks, has_header=has_header, route=self._raw_route(metadata))

    def request_upload_urls(self, count: int = 1) -> list[UploadUrl]:
        """``count`` pre-signed upload/download URL pairs from the server (``__upload_url__``)."""
        if not 1 <= count <= UPLOAD_URLS_MAX:
            raise ValueError(f"count must be in 1..{UPLOAD_URLS_MAX}, got {count}")
        batch = pa.RecordBatch.from_pydict({"count": [count]}, schema=pa.schema([("count", pa.int64())]))
        metadata = {keys.METHOD: "__upload_url__", keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE}
        response = self._send(UPLOAD_URL_ROUTE, _serialize(batch, metadata, batch.nbytes))
        if response.status == 404:
            raise RpcError("NotSupported", "the server does not vend upload URLs")
        error, batches = split_answers(self._answers(self._stream_of(_Body(response))))
        if error is not None:
            raise error
        urls = [UploadUrl.from_row(row) for answer in batches for row in answer.to_pylist()]
        if len(urls) > count:
            raise protocol_error(f"asked for {count} upload URLs, got {len(urls)}")
        return urls

    # -- sticky sessions ----------------------------------------------------------------

    def begin_session(self, token: str | None = None) -> None:
        """Opens a session scope (nested in any open one); ``token`` resumes an existing session."""
        self.sessions.push(token)

    def end_session(self) -> None:
        """Closes the innermost scope; tells the server (best effort) unless it was detached."""
        scope = self.sessions.pop()
        if scope is None or scope.detached or scope.token is None:
            return
        # Best effort, as the server forgets an idle session on its own: a failure is not the caller's.
        with contextlib.suppress(Exception):
            headers = {**self._extra_headers, SESSION: scope.token}
            self.connection.request("DELETE", f"{self.prefix}{SESSION_ROUTE}", (), headers)

    def session_token(self) -> str | None:
        """The innermost scope's token (``None``: none minted yet, or outside every scope)."""
        scope = self.sessions.top
        return None if scope is None else scope.token

    def session_echo_headers(self) -> dict[str, str]:
        """The ``VGI-Echo-*`` values the innermost scope carries (names without the prefix)."""
        scope = self.sessions.top
        return {} if scope is None else dict(scope.echo_headers)

    def detach_session(self) -> str | None:
        """Lets the innermost session outlive its scope; returns its token."""
        scope = self.sessions.top
        if scope is None:
            return None
        scope.detached = True
        return scope.token

    def capabilities(self) -> Capabilities:
        """The server's advertised capabilities (``OPTIONS {prefix}/health``), asked once."""
        if self._capabilities is None:
            response = self.connection.request("OPTIONS", f"{self.prefix}/health", (), self._extra_headers)
            if not 200 <= response.status < 300:
                raise protocol_error(f"capability discovery failed with HTTP {response.status}")
            self._capabilities = Capabilities.from_headers(response.headers)
        return self._capabilities

    def close(self) -> None:
        """Ends every open session scope, innermost first, then closes the connection."""
        while len(self.sessions):
            self.end_session()
        self.connection.close()

    def __enter__(self) -> P:
        return self.api

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------

    def _method(self, name: str, *, stream: bool) -> MethodSpec:
        spec = self.protocol.methods.get(name)
        if spec is None:
            raise AttributeError(f"protocol {self.protocol.name} has no method {name!r}")
        if spec.is_stream != stream:
            raise TypeError(f"{name}() is a {spec.kind.value} method; use {'stream' if spec.is_stream else 'call'}()")
        return spec

    def _request(self, spec: MethodSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        batch = spec.request_batch(spec.bind(args, kwargs))
        metadata = {
            keys.METHOD: spec.name,
            keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE,
            keys.PROTOCOL: self.protocol.name,
            keys.REQUEST_ID: secrets.token_hex(8),
        }
        if self.protocol.version is not None:
            metadata[keys.PROTOCOL_VERSION] = self.protocol.version
        return _serialize(batch, metadata, batch.nbytes)

    def _open_stream(
        self, spec: MethodSpec, chunks: list[Any], *, has_header: bool, route: str | None = None
    ) -> HttpStreamCall:
        """Sends ``/init`` and reads the header (when there is one) and the first turn."""
        call_route = route or f"/{self.protocol.name}/{spec.name}"
        body = _Body(self._send(f"{call_route}/init", chunks))
        header_batch = None
        if has_header:
            error, batches = split_answers(self._answers(self._stream_of(body)))
            if error is not None:
                raise error
            if not batches:
                raise protocol_error(f"{spec.name}(): the header stream carried no header")
            header_batch = batches[0]
        header = None
        if header_batch is not None and spec.header_type is not None:
            header = dataclass_from_batch(spec.header_type, header_batch)
        call = HttpStreamCall(self, spec, header, call_route)
        call.header_batch = header_batch
        call._take_turn(self._stream_of(body), init=True)
        return call

    def _raw_route(self, metadata: BatchMetadata) -> str:
        method = metadata.get(keys.METHOD)
        if not method:
            raise ValueError(f"a raw request's metadata names no method ({keys.METHOD})")
        return f"/{metadata.get(keys.PROTOCOL) or self.protocol.name}/{method}"

    def _post(self, route: str, chunks: list[Any]) -> Response:
        return self._send(f"/{self.protocol.name}{route}", chunks)

    def _send(self, route: str, chunks: list[Any]) -> Response:
        """POSTs to ``route`` under the prefix, with this client's headers and its session's."""
        headers = {**self._headers, **self.sessions.request_headers()}
        if self.accept_max_response_bytes is not None:
            if not self.capabilities().accepts_response_cap:
                raise protocol_error(f"the server does not honour {ACCEPT_MAX_RESPONSE_BYTES}")
            headers[ACCEPT_MAX_RESPONSE_BYTES] = str(self.accept_max_response_bytes)
        if self.compression is not None:
            chunks = [codec.encode(chunks, self.compression, self.compression_level)]
        response = self.connection.request("POST", f"{self.prefix}{route}", chunks, headers)
        self.sessions.capture(response.headers)
        return response

    # -- replies ------------------------------------------------------------------------

    def _stream_of(self, body: _Body) -> WholeStream:
        """The next IPC stream of a response body; a body that is not one becomes an ``RpcError``."""
        response = body.response
        if response.status == 401:
            raise RpcError("AuthenticationError", response.body[:500].decode(errors="replace") or "unauthorized")
        try:
            decoded = decode_stream(body.buffer, body.offset, self.limits)
        except WireError as exc:
            raise _not_arrow(response, str(exc)) from exc
        if decoded is None:
            raise _not_arrow(response, "the body ended before an Arrow IPC stream")
        stream, body.offset = decoded
        return stream

    def _answers(self, stream: WholeStream) -> list[Item | RpcError]:
        """A stream's data batches and errors; logs go to ``on_log``."""
        answers = (self._interpret(batch, metadata) for batch, metadata in stream.batches)
        return [answer for answer in answers if answer is not None]

    def _interpret(self, batch: pa.RecordBatch, metadata: dict[str, str]) -> Item | RpcError | None:
        role = classify(batch, metadata)
        if role is BatchRole.LOG:
            try:
                record = LogRecord.from_metadata(metadata)
            except ValueError as exc:
                raise protocol_error(f"log batch with an unknown level: {exc}") from exc
            if self.on_log is not None:
                self.on_log(record)
            return None
        if role is BatchRole.ERROR:
            return RpcError.from_report(ErrorReport.from_metadata(metadata))
        if role in (BatchRole.SHM_POINTER, BatchRole.EXTERNAL):
            raise protocol_error(f"the server sent a {role.value} batch, which this HTTP client does not resolve")
        return batch, metadata


class HttpStreamCall:
    """Client side of one producer or exchange call over HTTP.

    As :class:`quiver.StreamCall`: iterate or :meth:`tick` a producer, :meth:`exchange`
    an exchange, :meth:`cancel` or :meth:`close` either; ``header`` holds the header.
    """

    def __init__(self, client: HttpClient[Any], spec: MethodSpec, header: Any, route: str | None = None) -> None:
        self._client = client
        #: ``/{protocol}/{method}``: where the call's turns go.
        self._route = route or f"/{client.protocol.name}/{spec.name}"
        self.spec = spec
        self.header = header
        self.output_schema: pa.Schema = EMPTY_SCHEMA
        #: The header as it arrived, before decoding (``None`` for a method without one).
        self.header_batch: pa.RecordBatch | None = None
        self._cursor: str | None = None
        self._call_token: str | None = None
        self._pending: AnnotatedBatch | None = None
        self.closed = False

    def tick(self, metadata: BatchMetadata | None = None) -> AnnotatedBatch | None:
        """The producer's next batch; ``None`` once it has finished.

        ``metadata`` rides on the tick request; the first batch is produced by the
        ``/init`` request, which carries the call's own metadata.
        """
        if self.spec.kind is not MethodKind.PRODUCER:
            raise TypeError(f"{self.spec.name}() is an exchange; use exchange()")
        if self._pending is not None:
            if metadata:
                raise ValueError("the first batch came with /init; tick metadata applies from the second batch on")
            batch, self._pending = self._pending, None
            return batch
        if self.closed or self._cursor is None:
            self.closed = True
            return None
        return self._turn(empty_batch(EMPTY_SCHEMA), metadata or {})

    def exchange(self, batch: pa.RecordBatch, metadata: BatchMetadata | None = None) -> AnnotatedBatch:
        """Sends one batch to an exchange and returns its answer."""
        if self.spec.kind is not MethodKind.EXCHANGE:
            raise TypeError(f"{self.spec.name}() is a producer; use tick() or iterate")
        if self.closed or self._cursor is None:
            raise protocol_error("Stream has been closed or cancelled")
        answer = self._turn(batch, metadata or {})
        if answer is None:
            raise protocol_error(f"{self.spec.name}(): the server ended the exchange without an answer")
        return answer

    def __iter__(self) -> Iterator[AnnotatedBatch]:
        while (batch := self.tick()) is not None:
            yield batch

    @property
    def resume_token(self) -> str | None:
        """The continuation token the next turn presents (``None`` once the call has ended)."""
        return self._cursor

    def close(self) -> None:
        """Ends the call on this side (nothing is sent; the server forgets it in time)."""
        self.closed = True
        self._pending = None

    def cancel(self) -> None:
        """Tells the server to stop the call (its ``on_cancel`` runs); a no-op once closed."""
        cursor = self._cursor
        self.close()
        self._cursor = None
        if cursor is None:
            return
        metadata = {keys.STREAM_STATE: cursor, keys.CANCEL: "1"}
        if self._call_token is not None:
            metadata[keys.CALL_STATE] = self._call_token
        client = self._client
        response = client._send(f"{self._route}/exchange", _serialize(empty_batch(EMPTY_SCHEMA), metadata, 0))
        error, _ = split_answers(client._answers(client._stream_of(_Body(response))))
        if error is not None and response.status >= 400:
            raise error

    def __enter__(self) -> HttpStreamCall:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _turn(self, batch: pa.RecordBatch, metadata: BatchMetadata) -> AnnotatedBatch | None:
        assert self._cursor is not None
        tokens = {**metadata, keys.STREAM_STATE: self._cursor}
        if self._call_token is not None:
            tokens[keys.CALL_STATE] = self._call_token
        client = self._client
        response = client._send(f"{self._route}/exchange", _serialize(batch, tokens, batch.nbytes))
        self._cursor = None
        self._take_turn(client._stream_of(_Body(response)), init=False)
        batch_out, self._pending = self._pending, None
        return batch_out

    def _take_turn(self, stream: WholeStream, *, init: bool) -> None:
        """Reads one turn's answers: logs, at most one data batch, the next cursor (if any)."""
        self.output_schema = stream.schema
        data: AnnotatedBatch | None = None
        for batch, metadata in stream.batches:
            cursor = metadata.get(keys.STREAM_STATE)
            if cursor is not None:
                self._cursor = cursor
                self._call_token = metadata.get(keys.CALL_STATE, self._call_token)
                # A zero-row batch carrying the cursor is only a token, except as an exchange turn's
                # one answer (a zero-row output). vgi-rpc's server sends a zero-column answer and
                # then the cursor in a token batch of its own, so one after the answer is a token.
                token_only = init or self.spec.kind is MethodKind.PRODUCER or data is not None
                if batch.num_rows == 0 and token_only:
                    continue
            answer = self._client._interpret(batch, metadata)
            if answer is None:
                continue
            if isinstance(answer, RpcError):
                self.close()
                self._cursor = None
                raise answer
            if data is not None:
                raise protocol_error(f"{self.spec.name}(): a turn answered more than one data batch")
            user = {key: value for key, value in answer[1].items() if key not in _FRAMEWORK_KEYS}
            data = AnnotatedBatch(answer[0], user)
        self._pending = data
        if self._cursor is None:
            self.closed = True


@dataclass(frozen=True, slots=True)
class UploadUrl:
    """One vended pair: ``PUT`` the bytes to ``upload_url``, the server reads ``download_url``."""

    upload_url: str
    download_url: str
    expires_at: datetime | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> UploadUrl:
        upload, download = row.get("upload_url"), row.get("download_url")
        if not isinstance(upload, str) or not isinstance(download, str):
            raise protocol_error(f"an upload URL row lacks its URLs: {sorted(row)}")
        expires = row.get("expires_at")
        return cls(upload, download, expires if isinstance(expires, datetime) else None)


class _Body:
    """A response body being read stream by stream."""

    __slots__ = ("buffer", "offset", "response")

    def __init__(self, response: Response) -> None:
        self.response = response
        self.buffer = pa.py_buffer(response.body)
        self.offset = 0


def http_connect(protocol: type[P], url: str, **options: Any) -> HttpClient[P]:
    """An :class:`HttpClient` for ``protocol`` at ``url`` (options as for :class:`HttpClient`)."""
    return HttpClient(protocol, url, **options)


def _serialize(batch: pa.RecordBatch, metadata: BatchMetadata, size: int) -> list[Any]:
    out = GatherBuffer()
    writer = StreamWriter(out, batch.schema, expected_bytes=size)
    writer.write(batch, metadata)
    writer.close()
    return out.take()


def _not_arrow(response: Response, detail: str) -> RpcError:
    preview = response.body[:200].decode(errors="replace")
    return RpcError("HttpError", f"HTTP {response.status}: response is not an Arrow IPC stream ({detail}): {preview!r}")


def _int_or_none(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None
