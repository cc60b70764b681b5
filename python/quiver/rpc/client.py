"""The client: typed calls to a remote protocol over one connection.

>>> with connect(Calculator, spawn(["python", "-m", "calculator"])) as calc:
...     calc.add(1.0, 2.0)
...     for batch in calc.count(3):
...         print(batch.batch)

Calls are sequential (the wire is lockstep): a stream call must be finished, closed or
cancelled before the next call, and a client is not shared between threads. Logs the
server sends go to ``on_log``; a remote error becomes :class:`RpcError`; a broken
connection raises :class:`~quiver.wire.WireError` (``ConnectionClosed``, ``Truncated``).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any, Generic, TypeVar, cast

import pyarrow as pa

from ..shm.config import ShmConfig
from ..shm.segment import BudgetExceeded, Segment
from ..transport.connection import Connection
from ..wire import keys
from ..wire.error import ConnectionClosed, Malformed
from ..wire.framing import END_OF_STREAM, skip_stream
from ..wire.limits import DEFAULT_LIMITS, Limits
from ..wire.log import ErrorReport, LogRecord
from ..wire.metadata import BatchMetadata
from ..wire.reader import Item, StreamReader, read_stream
from ..wire.role import BatchRole, classify
from ..wire.sink import GatherBuffer
from ..wire.writer import StreamWriter, empty_batch
from .method import RESULT_FIELD, MethodKind, MethodSpec, protocol_spec
from .shm_route import ShmRoute, debug
from .stream import EMPTY_SCHEMA, AnnotatedBatch
from .types import dataclass_from_batch

P = TypeVar("P")
LogHandler = Callable[[LogRecord], None]


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


class Client(Generic[P]):
    """A connection to a server hosting ``protocol``; ``api`` (or ``with``) gives typed methods.

    Shared memory: with ``shm_size`` (or ``VGI_RPC_SHM_SIZE_BYTES``) on a local
    connection, the client creates a segment, advertises it on every request, sends
    large inputs through it and unlinks it on :meth:`close`.
    """

    def __init__(
        self,
        protocol: type[P],
        connection: Connection,
        *,
        on_log: LogHandler | None = None,
        limits: Limits = DEFAULT_LIMITS,
        shm: ShmConfig | None = None,
        shm_size: int | None = None,
    ) -> None:
        self.protocol = protocol_spec(protocol)
        self.connection = connection
        self.on_log = on_log
        self.limits = limits
        self._out = GatherBuffer()
        self._open_stream: StreamCall | None = None
        config = ShmConfig.from_env() if shm is None else shm
        if shm_size is not None:
            config = replace(config, segment_size_bytes=shm_size)
        size = config.segment_to_create()
        self.route: ShmRoute | None = None
        if size and connection.local:
            try:
                self.route = ShmRoute(Segment.create(size, budget_bytes=config.process_max_bytes), config)
            except BudgetExceeded as exc:  # over the process budget: this connection runs inline
                if config.debug:
                    debug(f"inline connection: {exc}")
        self.api: P = cast(P, MethodProxy(self))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Calls a unary method and returns its decoded result."""
        spec = self._method(method, stream=False)
        self._send_request(spec, args, kwargs)
        value = unary_value(spec, self._read_whole())
        self._end_turn()  # a result read from shared memory is decoded: free its region now
        return value

    def stream(self, method: str, *args: Any, **kwargs: Any) -> StreamCall:
        """Starts a producer or exchange call; reads its header first when it declares one."""
        spec = self._method(method, stream=True)
        self._send_request(spec, args, kwargs)
        call = StreamCall(self, spec)
        if spec.header_type is not None:
            call._read_header()
        self._open_stream = call
        return call

    def call_raw(self, batch: pa.RecordBatch, metadata: BatchMetadata) -> Item | None:
        """Calls a unary method with a request encoded elsewhere (a relay's).

        ``metadata`` is the caller's whole map (method, protocol, version, its own keys); the
        client adds only its segment. Returns the reply's data batch with its metadata (``None``
        when the reply carries none); a remote error raises :class:`RpcError`.
        """
        self._check_idle()
        self._send_batch(batch, dict(metadata))
        error, items = split_items(self._read_whole())
        if error is not None:
            raise error
        return items[0] if items else None

    def stream_raw(
        self, batch: pa.RecordBatch, metadata: BatchMetadata, *, exchange: bool, has_header: bool
    ) -> StreamCall:
        """Starts a stream call with a request encoded elsewhere, as :meth:`call_raw` sends it.

        The caller says what the method is (exchange or producer, with a header or not); the
        header arrives undecoded in :attr:`StreamCall.header_batch`.
        """
        self._check_idle()
        kind = MethodKind.EXCHANGE if exchange else MethodKind.PRODUCER
        name = metadata.get(keys.METHOD, "")
        spec = MethodSpec(name, kind, (), batch.schema, None, EMPTY_SCHEMA, None, None)
        self._send_batch(batch, dict(metadata))
        call = StreamCall(self, spec)
        if has_header:
            call._read_header()
        self._open_stream = call
        return call

    def close(self) -> None:
        """Closes the connection (and unlinks an owned shared-memory segment)."""
        if self.connection.closed:
            return
        self.connection.close()
        if self.route is not None:
            if self.route.config.debug:
                print(self.route.stats.summary(self.connection.peer, "client"), file=sys.stderr, flush=True)
            self.route.segment.close()

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
        self._check_idle()
        return spec

    def _check_idle(self) -> None:
        if self._open_stream is not None and not self._open_stream.closed:
            raise protocol_error("a stream call is still open; finish, close or cancel it before the next call")

    def _send_request(self, spec: MethodSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        batch = spec.request_batch(spec.bind(args, kwargs))
        metadata = {
            keys.METHOD: spec.name,
            keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE,
            keys.PROTOCOL: self.protocol.name,
            keys.REQUEST_ID: secrets.token_hex(8),
        }
        if self.protocol.version is not None:
            metadata[keys.PROTOCOL_VERSION] = self.protocol.version
        self._send_batch(batch, metadata)

    def _send_batch(self, batch: pa.RecordBatch, metadata: dict[str, str]) -> None:
        """Writes one request stream, naming the segment when the client owns one."""
        if self.route is not None:
            metadata[keys.SHM_SEGMENT_NAME] = self.route.segment.name
            metadata[keys.SHM_SEGMENT_SIZE] = str(self.route.segment.size_bytes)
        writer = StreamWriter(self._out, batch.schema, expected_bytes=batch.nbytes)
        self._write(writer, batch, metadata)
        writer.close()
        self._flush()

    # -- replies ------------------------------------------------------------------------

    def _read_whole(self) -> list[Item | RpcError]:
        """A whole reply stream: its data batches (pointers resolved) and errors; logs go to ``on_log``."""
        started = time.perf_counter()
        stream = read_stream(self.connection.reader, self.limits)
        if stream is None:
            raise ConnectionClosed("the server closed the connection")
        self._count_inbound(started, len(stream.batches))
        answers = (self._interpret(*item) for item in stream.batches)
        return [answer for answer in answers if answer is not None]

    def _open_reply(self) -> StreamReader:
        """The output stream of a stream call, to be read batch by batch (in lockstep with the input)."""
        reader = StreamReader.open(self.connection.reader, self.limits, lockstep=True)
        if reader is None:
            raise ConnectionClosed("the server closed the connection")
        return reader

    def _next_item(self, reader: StreamReader) -> Item | RpcError | None:
        """The next data batch or error of a stream being read batch by batch."""
        while (item := self._read(reader)) is not None:
            answer = self._interpret(*item)
            if answer is not None:
                return answer
        return None

    def _interpret(self, batch: pa.RecordBatch, metadata: dict[str, str]) -> Item | RpcError | None:
        """Data (pointers resolved), an error, or ``None`` for a log handed to ``on_log``."""
        role = classify(batch, metadata)
        if role is BatchRole.LOG:
            self._deliver_log(metadata)
            return None
        if role is BatchRole.ERROR:
            return RpcError.from_report(ErrorReport.from_metadata(metadata))
        if role is BatchRole.EXTERNAL:
            raise protocol_error("externally stored batches are not supported on this transport")
        if self.route is not None:
            # The server is answering with data, so it attached the segment when the request named
            # it (servers attach on first sight and never re-open by name): drop the name.
            self.route.segment.unlink_name()
        if role is BatchRole.SHM_POINTER:
            return self._resolve(batch, metadata)
        return batch, metadata

    def _read(self, reader: StreamReader) -> Item | None:
        """The next batch; a batch refused here leaves the stream unread for the call to end first."""
        started = time.perf_counter()
        item = reader.read()
        self._count_inbound(started, item is not None)
        return item

    def _count_inbound(self, started: float, batches: int) -> None:
        if self.route is not None:
            self.route.stats.waiting_seconds += time.perf_counter() - started
            self.route.stats.inbound_total += batches

    def _resolve(self, batch: pa.RecordBatch, metadata: dict[str, str]) -> Item:
        if self.route is None:
            raise protocol_error("the server sent a shared-memory pointer but this client has no segment")
        return self.route.resolve(batch, metadata, self.limits)

    def _deliver_log(self, metadata: BatchMetadata) -> None:
        try:
            record = LogRecord.from_metadata(metadata)
        except ValueError as exc:
            raise protocol_error(f"log batch with an unknown level: {exc}") from exc
        if self.on_log is not None:
            self.on_log(record)

    # -- output -------------------------------------------------------------------------

    def _write(self, writer: StreamWriter, batch: pa.RecordBatch, metadata: BatchMetadata) -> None:
        routed = self.route.try_write(batch, metadata) if self.route is not None else None
        if routed is not None:
            batch, metadata = routed
        writer.write(batch, metadata)

    def _flush(self) -> None:
        self._end_turn()
        chunks = self._out.take()
        if chunks:
            self.connection.send(chunks)

    def _end_turn(self) -> None:
        if self.route is not None:
            self.route.segment.collect()


class StreamCall:
    """Client side of one producer or exchange call.

    Producers: iterate (or :meth:`tick`) until the server finishes. Exchanges:
    :meth:`exchange` one batch at a time, then :meth:`close`. :meth:`cancel` stops either
    early. Use as a context manager to close it on exit.
    """

    def __init__(self, client: Client[Any], spec: MethodSpec) -> None:
        self._client = client
        self.spec = spec
        self.header: Any = None
        #: The header as it arrived, before decoding (``None`` for a method without one).
        self.header_batch: pa.RecordBatch | None = None
        self._input: StreamWriter | None = None
        self._output: StreamReader | None = None
        self.closed = False

    def tick(self, metadata: BatchMetadata | None = None) -> AnnotatedBatch | None:
        """Asks a producer for its next batch; ``None`` once it has finished."""
        if self.spec.kind is not MethodKind.PRODUCER:
            raise TypeError(f"{self.spec.name}() is an exchange; use exchange()")
        self._check_open()
        if not metadata and self._input is not None:
            self._client._out.write(_TICK_MESSAGE)  # the same bytes every time: encoded once
            self._client._flush()
        else:
            self._send(empty_batch(EMPTY_SCHEMA), metadata or {})
        return self._receive()

    def exchange(self, batch: pa.RecordBatch, metadata: BatchMetadata | None = None) -> AnnotatedBatch:
        """Sends one batch to an exchange and returns its answer."""
        if self.spec.kind is not MethodKind.EXCHANGE:
            raise TypeError(f"{self.spec.name}() is a producer; use tick() or iterate")
        self._check_open()
        self._send(batch, metadata or {})
        answer = self._receive()
        if answer is None:
            raise protocol_error(f"{self.spec.name}(): the server ended the exchange without an answer")
        return answer

    @property
    def output_schema(self) -> pa.Schema | None:
        """The output stream's schema, known once the first answer has been read (a dynamic result's shape)."""
        return None if self._output is None else self._output.schema

    def __iter__(self) -> Iterator[AnnotatedBatch]:
        while not self.closed and (batch := self.tick()) is not None:
            yield batch

    def close(self) -> None:
        """Ends the call: closes the input and reads the rest of the output."""
        if self.closed:
            return
        self.closed = True
        self._end_input(None)
        self._drain_output(raise_errors=True)

    def cancel(self) -> None:
        """Cancels the call; the server stops without answering. A no-op once closed."""
        if self.closed:
            return
        self.closed = True
        self._end_input({keys.CANCEL: "1"})
        self._drain_output(raise_errors=False)

    def __enter__(self) -> StreamCall:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(RpcError, ConnectionClosed):
            self.close()

    # -- internals ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise protocol_error("Stream has been closed or cancelled")

    def _read_header(self) -> None:
        """Reads the header stream; on error completes the call and raises."""
        error, batches = split_answers(self._client._read_whole())
        if error is not None or not batches:
            self.closed = True
            self._end_input(None)
            raise error or protocol_error(f"{self.spec.name}(): the header stream carried no header")
        self.header_batch = batches[0]
        if self.spec.header_type is not None:
            self.header = dataclass_from_batch(self.spec.header_type, batches[0])

    def _send(self, batch: pa.RecordBatch, metadata: BatchMetadata) -> None:
        if self._input is None:
            self._input = StreamWriter(self._client._out, batch.schema)
        self._client._write(self._input, batch, metadata)
        self._client._flush()

    def _receive(self) -> AnnotatedBatch | None:
        client = self._client
        try:
            if self._output is None:
                self._output = client._open_reply()
            item = client._next_item(self._output)
        except Malformed as exc:
            self._refuse(exc)
            raise
        if isinstance(item, RpcError):
            self._drain_output(raise_errors=False)
            self._finish()
            raise item
        if item is None:
            self._finish()
            return None
        return AnnotatedBatch(*item)

    def _refuse(self, error: Malformed) -> None:
        """Ends the call after this client refused a message of its output.

        The server writes the rest of the output only as the client takes turns, so the client
        cancels first (the server then ends its output) and skips the rest afterwards; the
        connection stays usable. An unrecoverable error leaves the byte stream unaligned: the
        caller must drop the connection.
        """
        self.closed = True
        if not error.recoverable:
            return
        client = self._client
        self._end_input({keys.CANCEL: "1"})
        if self._output is not None:
            self._output.drain()
        elif not error.stream_ended:
            skip_stream(client.connection.reader, client.limits)
        client._end_turn()

    def _finish(self) -> None:
        """The output ended: close the input stream and release the connection."""
        self.closed = True
        self._end_input(None)

    def _end_input(self, control: dict[str, str] | None) -> None:
        """Writes an optional zero-row control batch and the input end marker."""
        client = self._client
        if self._input is None:
            self._input = StreamWriter(client._out, EMPTY_SCHEMA, expected_bytes=0)
        if control is not None:
            self._input.write(empty_batch(self._input.schema), control)
        self._input.close()
        client._flush()
        if client._open_stream is self:
            client._open_stream = None

    def _drain_output(self, *, raise_errors: bool) -> None:
        """Reads the output stream to its end, discarding data; logs still go to ``on_log``."""
        client = self._client
        if self._output is None:
            error, _ = split_answers(client._read_whole())
        else:
            error = None
            try:
                while (item := client._next_item(self._output)) is not None:
                    error = error or (item if isinstance(item, RpcError) else None)
            except Malformed as exc:
                # The input has ended, so the server ends its output by itself: skip what is left.
                if exc.recoverable:
                    self._output.drain()
                raise
        client._end_turn()
        if error is not None and raise_errors:
            raise error


def _tick_message() -> bytes:
    """The IPC message of a tick (a zero-row batch of the empty schema, no metadata)."""
    schema_only = _empty_schema_stream(None)
    with_tick = _empty_schema_stream(empty_batch(EMPTY_SCHEMA))
    return with_tick[len(schema_only) - len(END_OF_STREAM) : -len(END_OF_STREAM)]


def _empty_schema_stream(batch: pa.RecordBatch | None) -> bytes:
    """An empty-schema IPC stream holding ``batch`` (or nothing)."""
    sink = GatherBuffer()
    writer = StreamWriter(sink, EMPTY_SCHEMA, expected_bytes=0)
    if batch is not None:
        writer.write(batch)
    writer.close()
    return b"".join(sink.take())


_TICK_MESSAGE = _tick_message()


def split_items(answers: list[Item | RpcError]) -> tuple[RpcError | None, list[Item]]:
    """The first error among a stream's answers, and its data batches with their metadata."""
    errors = [answer for answer in answers if isinstance(answer, RpcError)]
    return (errors[0] if errors else None), [answer for answer in answers if not isinstance(answer, RpcError)]


def split_answers(answers: list[Item | RpcError]) -> tuple[RpcError | None, list[pa.RecordBatch]]:
    """The first error among a stream's answers, and its data batches."""
    errors = [answer for answer in answers if isinstance(answer, RpcError)]
    return (errors[0] if errors else None), [answer[0] for answer in answers if not isinstance(answer, RpcError)]


def unary_value(spec: MethodSpec, answers: list[Item | RpcError]) -> Any:
    """The decoded result of a unary call's answers; the first error among them is raised."""
    error, batches = split_answers(answers)
    if error is not None:
        raise error
    if not batches:
        raise protocol_error(f"{spec.name}(): the response stream ended without a result batch")
    if spec.result is None:
        return None
    batch = batches[0]
    if batch.num_rows != 1 or batch.schema.get_field_index(RESULT_FIELD) < 0:
        raise protocol_error(f"{spec.name}(): expected a 1-row result batch with a 'result' column")
    value = spec.result.from_scalar(batch.column(RESULT_FIELD)[0])
    if value is None and not spec.result.nullable:
        raise protocol_error(f"{spec.name}(): the server returned null for a non-nullable result")
    return value


class MethodProxy:
    """Attribute access to a protocol's methods through a client.

    The client is anything with ``protocol``, ``call`` and ``stream``: a :class:`Client`
    or an HTTP client.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Any]:
        spec = self._client.protocol.methods.get(name)
        if spec is None:
            raise AttributeError(f"protocol {self._client.protocol.name} has no method {name!r}")
        method = partial(self._client.stream if spec.is_stream else self._client.call, name)
        setattr(self, name, method)
        return method

    def __dir__(self) -> list[str]:
        return sorted(self._client.protocol.methods)


def connect(protocol: type[P], connection: Connection, **options: Any) -> Client[P]:
    """A :class:`Client` for ``protocol`` over ``connection`` (options as for :class:`Client`)."""
    return Client(protocol, connection, **options)
