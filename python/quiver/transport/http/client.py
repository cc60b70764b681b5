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
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import pyarrow as pa

from ...rpc.client import MethodProxy, RpcError, protocol_error, split_answers, unary_value
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

P = TypeVar("P")
LogHandler = Callable[[LogRecord], None]
_FRAMEWORK_KEYS = (keys.STREAM_STATE, keys.CALL_STATE)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a server advertises on ``OPTIONS {prefix}/health``."""

    max_response_bytes: int | None
    max_request_bytes: int | None
    accepts_response_cap: bool
    encodings: tuple[str, ...]

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Capabilities:
        """Parses the ``VGI-*`` capability headers (lower-case names)."""
        encodings = headers.get("vgi-supported-encodings")
        return cls(
            _int_or_none(headers.get("vgi-max-response-bytes")),
            _int_or_none(headers.get("vgi-max-request-bytes")),
            headers.get("vgi-accept-max-response-bytes-support") == "true",
            ("zstd",) if encodings is None else tuple(codec.parse_codings(encodings)),
        )


class HttpClient(Generic[P]):
    """A client of ``protocol`` served at ``url`` (plus ``prefix``); ``api`` (or ``with``) gives typed methods.

    ``accept_max_response_bytes`` is sent on every call (after checking once that the
    server honours it) so that a server refuses, rather than sends, a larger answer.
    ``compression`` (``"zstd"`` or ``"gzip"``) compresses request bodies and asks for
    compressed answers; by default bodies travel as they are, which is the fastest
    choice on a local network. ``connection`` replaces the socket connection to ``url``
    (a :class:`WsgiConnection` calls an app in process).
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
        self._headers = {"Content-Type": ARROW_STREAM, "Accept-Encoding": compression or "identity"}
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
        response = self._post(f"/{method}/init", self._request(spec, args, kwargs))
        body = _Body(response)
        header = None
        if spec.header_type is not None:
            error, batches = split_answers(self._answers(self._stream_of(body)))
            if error is not None:
                raise error
            if not batches:
                raise protocol_error(f"{method}(): the header stream carried no header")
            header = dataclass_from_batch(spec.header_type, batches[0])
        call = HttpStreamCall(self, spec, header)
        call._take_turn(self._stream_of(body), init=True)
        return call

    def capabilities(self) -> Capabilities:
        """The server's advertised capabilities (``OPTIONS {prefix}/health``), asked once."""
        if self._capabilities is None:
            response = self.connection.request("OPTIONS", f"{self.prefix}/health")
            if not 200 <= response.status < 300:
                raise protocol_error(f"capability discovery failed with HTTP {response.status}")
            self._capabilities = Capabilities.from_headers(response.headers)
        return self._capabilities

    def close(self) -> None:
        """Closes the connection."""
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

    def _post(self, route: str, chunks: list[Any]) -> Response:
        headers = self._headers
        if self.accept_max_response_bytes is not None:
            if not self.capabilities().accepts_response_cap:
                raise protocol_error(f"the server does not honour {ACCEPT_MAX_RESPONSE_BYTES}")
            headers = {**headers, ACCEPT_MAX_RESPONSE_BYTES: str(self.accept_max_response_bytes)}
        if self.compression is not None:
            chunks = [codec.encode(chunks, self.compression)]
        path = f"{self.prefix}/{self.protocol.name}{route}"
        return self.connection.request("POST", path, chunks, headers)

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

    def __init__(self, client: HttpClient[Any], spec: MethodSpec, header: Any) -> None:
        self._client = client
        self.spec = spec
        self.header = header
        self.output_schema: pa.Schema = EMPTY_SCHEMA
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
        response = client._post(f"/{self.spec.name}/exchange", _serialize(empty_batch(EMPTY_SCHEMA), metadata, 0))
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
        response = client._post(f"/{self.spec.name}/exchange", _serialize(batch, tokens, batch.nbytes))
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
                if batch.num_rows == 0 and (init or self.spec.kind is MethodKind.PRODUCER):
                    continue  # a zero-row token batch
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
