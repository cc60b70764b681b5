"""One connection, served: read a request, dispatch it, write the reply, repeat.

The wire is lockstep, so a session is a plain loop. Every reply is gathered in memory
and leaves in one vectored write per turn. A bad request gets an error reply and the
connection keeps serving; only bytes that cannot be resynchronised (or a closed
connection) end a session. Request validation and streams
behave as vgi-rpc's do (its conformance suite checks them: tests/test_conformance.py).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..shm.config import ShmConfig
from ..shm.segment import Segment
from ..shm.table import ShmError
from ..transport.connection import Connection
from ..wire import keys
from ..wire.error import ConnectionClosed, Malformed, Truncated, WireError
from ..wire.limits import Limits
from ..wire.log import ErrorReport, LogRecord
from ..wire.metadata import BatchMetadata
from ..wire.reader import Item, StreamReader, read_stream
from ..wire.role import BatchRole, classify
from ..wire.sink import GatherBuffer
from ..wire.writer import StreamWriter, empty_batch
from . import errors
from .conform import conform_input, decode_params
from .context import CallContext
from .dispatch import (
    TRANSPORT_OPTIONS,
    BoundMethod,
    HostedProtocol,
    Rejected,
    check_request_rows,
    check_stream,
    conformed_answers,
    header_batch,
    request_envelope,
    route,
    version_gate,
)
from .method import MethodSpec
from .shm_route import ShmRoute, debug
from .stream import EMPTY_SCHEMA, AnnotatedBatch, Output, Stream


@dataclass(slots=True)
class _Request:
    method: str
    metadata: dict[str, str]
    batch: pa.RecordBatch | None
    """Taken (set to ``None``) once decoded, so a shared-memory request region is freed early."""


class Session:
    """Serves one connection until the client closes it."""

    def __init__(
        self,
        protocols: Mapping[str, HostedProtocol],
        connection: Connection,
        *,
        limits: Limits,
        shm: ShmConfig,
        server_id: str,
    ) -> None:
        self.protocols = protocols
        self.connection = connection
        self.limits = limits
        self.shm = shm
        self.server_id = server_id
        self.out = GatherBuffer()
        self.route: ShmRoute | None = None
        self.request_id = ""

    def run(self) -> None:
        """Serves requests until the connection ends, then closes it."""
        try:
            while self._serve_one():
                pass
        except ConnectionClosed:
            pass
        except Truncated as exc:
            # A peer gone between requests is a clean end; one gone inside a message
            # leaves a line saying where it stopped.
            print(f"quiver: connection {self.connection.peer} ended inside a message: {exc}", file=sys.stderr)
        except WireError as exc:
            print(f"quiver: connection {self.connection.peer} ended: {exc}", file=sys.stderr)
        finally:
            self._close()

    def _serve_one(self) -> bool:
        """Serves one request; ``False`` once the connection is done."""
        self.request_id = ""
        try:
            request = self._read_request()
        except Rejected as rejected:
            self._write_error_stream(EMPTY_SCHEMA, rejected.report)
            self._flush()
            return True
        except Malformed as exc:
            self._write_error_stream(EMPTY_SCHEMA, errors.malformed(str(exc)))
            self._flush()
            return exc.recoverable
        if request is None:
            return False
        self._dispatch(request)
        self._flush()
        return True

    # -- requests -----------------------------------------------------------------------

    def _read_request(self) -> _Request | None:
        """Reads one request stream through its end marker, then checks its envelope."""
        with self._waiting():
            stream = read_stream(self.connection.reader, self.limits)
        if stream is None:
            return None
        method, metadata, batch = request_envelope(stream)
        self._attach_shm(metadata)
        batch, metadata = self._resolve(batch, metadata)
        check_request_rows(batch)
        return _Request(method, metadata, batch)

    def _attach_shm(self, metadata: BatchMetadata) -> None:
        """Attaches (or re-attaches) the segment a request advertises."""
        name = metadata.get(keys.SHM_SEGMENT_NAME)
        if name is None or self.shm.disabled or not self.connection.local:
            return
        if self.route is not None and self.route.segment.name == name:
            return
        try:
            segment = Segment.attach(name)
        except ShmError as exc:
            raise Rejected(errors.protocol_error(f"cannot attach shared memory {name!r}: {exc}")) from exc
        if self.shm.debug:
            debug(f"attached {segment.name} size={segment.size_bytes} data_size={segment.data_size_bytes}")
        self._close_shm()
        self.route = ShmRoute(segment, self.shm)

    def _resolve(self, batch: pa.RecordBatch, metadata: dict[str, str]) -> Item:
        """Replaces a shared-memory pointer batch by the batch it points at."""
        if self.route is not None:
            self.route.stats.inbound_total += 1
        if classify(batch, metadata) is not BatchRole.SHM_POINTER:
            return batch, metadata
        if self.route is None:
            raise Malformed("shm pointer batch but no shared-memory segment is attached", recoverable=True)
        return self.route.resolve(batch, metadata, self.limits)

    def _dispatch(self, request: _Request) -> None:
        method, metadata, batch, request.batch = request.method, request.metadata, request.batch, None
        assert batch is not None
        self.request_id = metadata.get(keys.REQUEST_ID) or secrets.token_hex(8)
        if method == TRANSPORT_OPTIONS:
            return self._transport_options()
        try:
            protocol, bound = route(self.protocols, method, metadata)
        except Rejected as rejected:
            return self._write_error_stream(EMPTY_SCHEMA, rejected.report)
        spec = bound.spec
        version_error = version_gate(protocol, metadata)
        if version_error is not None:
            return self._reject_call(spec, version_error)
        try:
            params = decode_params(spec, batch)
        except Exception as exc:  # every parameter problem is reported to the client
            return self._reject_call(spec, ErrorReport.from_exception(exc))
        del batch  # the values are decoded: a shared-memory request region can go now
        if spec.is_stream:
            return self._serve_stream(bound, params, metadata)
        return self._serve_unary(bound, params, metadata)

    def _reject_call(self, spec: MethodSpec, report: ErrorReport) -> None:
        """Answers a call that will not run; a stream's client still sends one input stream."""
        self._write_error_stream(EMPTY_SCHEMA if spec.is_stream else spec.result_schema, report)
        if spec.is_stream:
            self._flush()
            self._drain_input()

    def _transport_options(self) -> None:
        usable = not self.shm.disabled and self.connection.local
        metadata = {
            keys.TRANSPORT_SHM: "true" if usable else "false",
            keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE,
            keys.SERVER_ID: self.server_id,
        }
        writer = StreamWriter(self.out, EMPTY_SCHEMA, expected_bytes=0)
        writer.write(empty_batch(EMPTY_SCHEMA), metadata)
        writer.close()

    # -- unary --------------------------------------------------------------------------

    def _serve_unary(self, bound: BoundMethod, params: dict[str, Any], metadata: dict[str, str]) -> None:
        ctx = self._context(bound.spec.name, metadata)
        try:
            with self._processing():
                result = bound.spec.result_batch(bound(params, ctx))
        except Exception as exc:  # the method's error goes to the client
            result = ErrorReport.from_exception(exc)
        size = 0 if isinstance(result, ErrorReport) else result.nbytes
        writer = StreamWriter(self.out, bound.spec.result_schema, expected_bytes=size)
        self._write_logs(writer, ctx.take_logs())
        if isinstance(result, ErrorReport):
            writer.write_empty(self._stamp(result.to_metadata()))
        else:
            self._write_data(writer, result, {})
        writer.close()

    # -- streams ------------------------------------------------------------------------

    def _serve_stream(self, bound: BoundMethod, params: dict[str, Any], metadata: dict[str, str]) -> None:
        spec = bound.spec
        ctx = self._context(spec.name, metadata)
        try:
            with self._processing():
                stream = check_stream(spec, bound(params, ctx))
                header = header_batch(spec, stream.header)
        except Exception as exc:  # an init error replaces the header/output stream
            self._write_error_stream(EMPTY_SCHEMA, ErrorReport.from_exception(exc), ctx.take_logs())
            self._flush()
            return self._drain_input()
        logs = ctx.take_logs()
        if header is not None:
            self._write_header_stream(header, logs)
            logs = []
        self._flush()
        with self._waiting():
            try:
                reader = StreamReader.open(self.connection.reader, self.limits)
            except Malformed as exc:
                return self._write_error_stream(EMPTY_SCHEMA, errors.malformed(str(exc)))
        if reader is None:
            raise ConnectionClosed("the client closed the connection before opening the stream input")
        output = StreamWriter(self.out, stream.output_schema)
        self._write_logs(output, logs)
        while self._next_turn(spec, stream, reader, output, metadata):
            pass
        output.close()
        self._flush()
        with self._waiting():
            reader.drain()

    def _write_header_stream(self, header: pa.RecordBatch, logs: Sequence[LogRecord]) -> None:
        writer = StreamWriter(self.out, header.schema, expected_bytes=header.nbytes)
        self._write_logs(writer, logs)
        writer.write(header)
        writer.close()

    def _next_turn(
        self,
        spec: MethodSpec,
        stream: Stream[Any, Any],
        reader: StreamReader,
        output: StreamWriter,
        metadata: BatchMetadata,
    ) -> bool:
        """Answers the next input batch; ``False`` at the end of input, a cancel, a finish or an error.

        Everything read in a turn is released when this returns, before the next flush, so
        a shared-memory input region is freed within the turn that consumed it.
        """
        self._flush()
        try:
            with self._waiting():
                item = reader.read()
        except Malformed as exc:
            if not exc.recoverable:
                raise
            output.write_empty(self._stamp(errors.malformed(str(exc)).to_metadata()))
            return False
        if item is None:
            return False
        if keys.CANCEL in item[1] and item[0].num_rows == 0:
            self._cancel(stream, spec, metadata)
            return False
        return self._turn(spec, stream, item, output)

    def _turn(self, spec: MethodSpec, stream: Stream[Any, Any], item: Item, output: StreamWriter) -> bool:
        """Processes one input batch and writes its answer; ``False`` ends the stream."""
        out = Output(stream.output_schema)
        try:
            batch, metadata = self._resolve(*item)
            batch = conform_input(stream.input_schema, batch)
            ctx = self._context(spec.name, metadata, records=out.items)
            with self._processing():
                stream.state.process(AnnotatedBatch(batch, metadata), out, ctx)
            answers = conformed_answers(spec.kind, out)
        except Exception as exc:  # a turn's error ends the stream with an EXCEPTION batch
            output.write_empty(self._stamp(ErrorReport.from_exception(exc).to_metadata()))
            return False
        for answer in answers:
            if isinstance(answer, LogRecord):
                output.write_empty(self._stamp(answer.to_metadata()))
            else:
                self._write_data(output, answer.batch, answer.metadata)
        return not out.finished

    def _cancel(self, stream: Stream[Any, Any], spec: MethodSpec, metadata: BatchMetadata) -> None:
        with contextlib.suppress(Exception):  # errors in a cancel hook are deliberately ignored
            stream.state.on_cancel(self._context(spec.name, metadata))

    # -- writing ------------------------------------------------------------------------

    def _write_logs(self, writer: StreamWriter, records: Sequence[LogRecord]) -> None:
        for record in records:
            writer.write_empty(self._stamp(record.to_metadata()))

    def _write_data(self, writer: StreamWriter, batch: pa.RecordBatch, metadata: BatchMetadata) -> None:
        """Writes a data batch, through shared memory when it qualifies."""
        routed = self.route.try_write(batch, metadata) if self.route is not None else None
        if routed is not None:
            batch, metadata = routed
        writer.write(batch, metadata)

    def _write_error_stream(self, schema: pa.Schema, report: ErrorReport, logs: Sequence[LogRecord] = ()) -> None:
        writer = StreamWriter(self.out, schema, expected_bytes=0)
        self._write_logs(writer, logs)
        writer.write_empty(self._stamp(report.to_metadata()))
        writer.close()

    def _stamp(self, metadata: dict[str, str]) -> dict[str, str]:
        metadata[keys.SERVER_ID] = self.server_id
        if self.request_id:
            metadata[keys.REQUEST_ID] = self.request_id
        return metadata

    def _flush(self) -> None:
        """Ends this side's turn: frees released regions, then writes everything gathered."""
        if self.route is not None:
            self.route.segment.collect()
        chunks = self.out.take()
        if chunks:
            self.connection.send(chunks)

    def _drain_input(self) -> None:
        """Reads and discards one input stream (after a stream call that will not run)."""
        with self._waiting():
            reader = StreamReader.open(self.connection.reader, self.limits)
            if reader is not None:
                reader.drain()

    def _context(self, method: str, metadata: BatchMetadata, records: list[Any] | None = None) -> CallContext:
        return CallContext(
            method,
            metadata,
            request_id=self.request_id,
            server_id=self.server_id,
            peer=self.connection.peer,
            records=records,
        )

    # -- bookkeeping --------------------------------------------------------------------

    @contextmanager
    def _waiting(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.route is not None:
                self.route.stats.waiting_seconds += time.perf_counter() - started

    @contextmanager
    def _processing(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.route is not None:
                self.route.stats.process_seconds += time.perf_counter() - started

    def _close_shm(self) -> None:
        if self.route is None:
            return
        if self.route.config.debug:
            print(self.route.stats.summary(self.connection.peer, "worker"), file=sys.stderr, flush=True)
        self.route.segment.close()
        self.route = None

    def _close(self) -> None:
        with contextlib.suppress(WireError):
            self._flush()
        self._close_shm()
        self.connection.close()
