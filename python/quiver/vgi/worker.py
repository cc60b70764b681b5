"""The worker: the ``vgi.v2`` protocol answered from a set of decorated functions.

Catalog calls are answered from the function definitions alone (the attach token is
self-contained), ``bind`` resolves and checks a call, and ``init`` runs a function's
stream: an exchange for scalars and table-in-out INPUT, a producer for table scans and
FINALIZE. Launch: stdio by default; ``--unix PATH`` prints ``UNIX:<abs path>`` and
serves connections on threads until ``--idle-timeout`` seconds pass with none.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, ClassVar

import pyarrow as pa

from ..rpc import ArrowType, CallContext, ExchangeState, MethodKind, Output, Server, Stream
from ..rpc.session import Session
from ..rpc.stream import AnnotatedBatch
from ..transport.socket import SocketConnection, listen_unix
from ..transport.stdio import stdio_connection
from . import filters as vgi_filters
from . import wire
from .errors import ArgumentValidationError, InvalidArgumentError, NotFoundError, OpaqueDataNotRecognizedError
from .execution import Executions
from .function import SCALAR, TABLE, TABLE_IN_OUT, Arg, Function, sql_name

SCHEMA_NAME = "main"
UNBOUNDED_WORKERS = 99999
CATALOG_VERSION = 1
_ATTACH_PREFIX = b"quiver-vgi-py:v1:"
_STATUS = "vgi.status"


class SchemaObjectType(Enum):
    TABLE = "table"
    VIEW = "view"
    SCALAR_FUNCTION = "scalar_function"
    TABLE_FUNCTION = "table_function"
    AGGREGATE_FUNCTION = "aggregate_function"
    SCALAR_MACRO = "scalar_macro"
    TABLE_MACRO = "table_macro"
    INDEX = "index"


@dataclass
class GlobalInitResponse:
    execution_id: bytes
    opaque_data: Annotated[bytes | None, ArrowType(pa.binary())] = None
    max_workers: int = UNBOUNDED_WORKERS


Tx = Annotated[bytes | None, ArrowType(pa.binary())]


class VgiV2:
    """The part of ``vgi.v2`` this SDK answers; anything else is an unknown method."""

    protocol_name: ClassVar[str] = "vgi.v2"
    protocol_version: ClassVar[str] = "2.2.0"

    def catalog_catalogs(self) -> bytes: ...
    def catalog_attach(self, request: bytes) -> bytes: ...
    def catalog_schemas(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def catalog_schema_get(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_functions(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_tables(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_views(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_indexes(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_macros(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_contents(self, attach_opaque_data: bytes, if_none_match: str | None = None) -> bytes: ...
    def catalog_version(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def catalog_detach(self, attach_opaque_data: bytes) -> None: ...
    def catalog_copy_from_formats(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def bind(self, request: bytes) -> bytes: ...
    def init(self, request: bytes) -> Stream[ExchangeState, GlobalInitResponse]: ...
    def table_function_cardinality(self, request: bytes) -> bytes: ...


# -- logging ------------------------------------------------------------------------------

_LEVELS = {"error": 0, "warning": 1, "warn": 1, "info": 2, "debug": 3}
_level = 1


def log(level: str, message: str) -> None:
    """A plain line on stderr (stdout carries protocol bytes only)."""
    if _LEVELS[level] <= _level:
        print(f"quiver-vgi-py [{os.getpid()}] {level}: {message}", file=sys.stderr, flush=True)


# -- the worker -----------------------------------------------------------------------------


class Worker:
    """A catalog of functions, served over stdio or a Unix socket.

    >>> worker = Worker("demo")
    >>> @worker.scalar(returns=pa.string(), args=[Arg("s", pa.string())])
    ... def shout(s): return pc.utf8_upper(s)
    >>> worker.main()
    """

    def __init__(self, name: str, description: str = "") -> None:
        self.name = name
        self.description = description
        self.functions: dict[str, Function] = {}
        self.executions = Executions()

    # decorators ------------------------------------------------------------------------

    def add(self, function: Function) -> Function:
        if function.name in self.functions:
            raise ValueError(f"function '{function.name}' registered twice")
        self.functions[function.name] = function
        return function

    def scalar(
        self, *, returns: pa.DataType, args: list[Arg], name: str | None = None, doc: str | None = None
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(*columns) -> pa.Array``: one output value per input row."""

        def wrap(body: Callable[..., Any]) -> Function:
            return self.add(
                Function(name or body.__name__, SCALAR, body, list(args), doc or _doc(body), returns=returns)
            )

        return wrap

    def table(
        self,
        *,
        output: pa.Schema,
        args: list[Arg] = (),
        name: str | None = None,
        doc: str | None = None,
        projection: bool = False,
        filters: bool = False,
        max_workers: int = 1,
        shared_work: Callable[[dict[str, Any]], int] | None = None,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(args, scan) -> Iterator[pa.RecordBatch]``, full output columns; the SDK filters and projects.

        With ``shared_work(args) -> total units``, ``scan.claim(n)`` hands out ``(start, end)`` ranges
        across every connection of the execution (``None`` when done); then ``max_workers`` may exceed 1.
        """

        def wrap(body: Callable[..., Any]) -> Function:
            return self.add(
                Function(
                    name or body.__name__,
                    TABLE,
                    body,
                    list(args),
                    doc or _doc(body),
                    output=output,
                    projection_pushdown=projection,
                    filter_pushdown=filters,
                    max_workers=max_workers if shared_work else 1,
                    shared_work=shared_work,
                )
            )

        return wrap

    def table_in_out(
        self,
        *,
        args: list[Arg],
        output: Callable[[pa.Schema, dict[str, Any]], pa.Schema] | pa.Schema | None = None,
        name: str | None = None,
        doc: str | None = None,
        finalize: Callable[[dict[str, Any], Any], Any] | None = None,
        initial_state: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(args, state, batch) -> RecordBatch | Iterable[RecordBatch]``; ``finalize(args, state)`` likewise.

        ``output`` is the output schema, or a function of the input schema (default: the input schema).
        Table-in-out functions run on one connection (``max_workers`` 1), so finalize sees the one state.
        """
        if not any(a.table for a in args):
            raise ValueError("a table-in-out function needs an Arg.table_input(...) argument")

        def wrap(body: Callable[..., Any]) -> Function:
            return self.add(
                Function(
                    name or body.__name__,
                    TABLE_IN_OUT,
                    body,
                    list(args),
                    doc or _doc(body),
                    output=output,
                    max_workers=1,
                    finalize=finalize,
                    initial_state=initial_state,
                )
            )

        return wrap

    # serving -----------------------------------------------------------------------------

    def server(self) -> Server:
        server = _VgiServer()
        server.add(VgiV2, _Service(self))
        return server

    def serve_stdio(self) -> None:
        log("info", f"{self.name}: serving stdio")
        self.server().serve(stdio_connection())
        log("info", f"{self.name}: engine gone, exiting")

    def serve_unix(self, path: str, idle_timeout: float = 300.0) -> None:
        """Serves connections concurrently until ``idle_timeout`` seconds pass with none (<= 0: never)."""
        self.executions.in_memory = True
        server = self.server()
        path = os.path.abspath(path)
        active = [0]
        idle_since = [time.monotonic()]
        lock = threading.Lock()

        def handle(connection: SocketConnection) -> None:
            try:
                server.serve(connection)
            finally:
                with lock:
                    active[0] -= 1
                    idle_since[0] = time.monotonic()

        with listen_unix(path) as listener:
            print(f"UNIX:{path}", flush=True)
            log("info", f"{self.name}: serving {path}")
            listener.socket.settimeout(0.1)
            while True:
                try:
                    sock, _ = listener.socket.accept()
                except TimeoutError:
                    with lock:
                        idle = active[0] == 0 and time.monotonic() - idle_since[0] >= idle_timeout
                    if idle_timeout > 0 and idle:
                        log("info", f"{self.name}: idle for {idle_timeout}s, exiting")
                        return
                    continue
                sock.settimeout(None)
                with lock:
                    active[0] += 1
                threading.Thread(target=handle, args=(SocketConnection(sock, peer="unix:peer"),), daemon=True).start()

    def main(self, argv: list[str] | None = None) -> None:
        """The command line engines launch: stdio, or ``--unix PATH [--idle-timeout SECS]``."""
        global _level
        parser = argparse.ArgumentParser(description=self.description or f"VGI worker {self.name}")
        parser.add_argument("--unix", metavar="PATH")
        parser.add_argument("--idle-timeout", type=float, default=300.0, metavar="SECS")
        parser.add_argument("--debug", action="store_true")
        parser.add_argument("--quiet", action="store_true")
        parser.add_argument("--log-level")
        parser.add_argument("--log-format")
        parser.add_argument("--log-logger")
        options = parser.parse_args(argv)
        if options.log_level and options.log_level.lower() in _LEVELS:
            _level = _LEVELS[options.log_level.lower()]
        _level = 3 if options.debug else 0 if options.quiet else _level
        if options.unix:
            self.serve_unix(options.unix, options.idle_timeout)
        else:
            self.serve_stdio()

    # catalog rows ------------------------------------------------------------------------

    def resolve(self, name: str, schema_path: list[str] | None) -> Function:
        function = self.functions.get(name)
        if function is None or (schema_path and [p.lower() for p in schema_path] != [SCHEMA_NAME]):
            available = ", ".join(f"'{n}'" for n in sorted(self.functions))
            raise NotFoundError(f"Unknown function: '{name}'\n  Available functions: [{available}]")
        return function

    def function_info(self, function: Function) -> dict[str, Any]:
        table_like = function.kind != SCALAR
        defaults = function.default_values()
        output = pa.schema([pa.field("result", function.returns)]) if function.kind == SCALAR else wire.EMPTY_SCHEMA
        return {
            "comment": None,
            "tags": [],
            "name": function.name,
            "schema_path": [SCHEMA_NAME],
            "function_type": "SCALAR" if function.kind == SCALAR else "TABLE",
            "arguments": wire.schema_bytes(function.arguments_schema()),
            "output_schema": wire.schema_bytes(output),
            "parameter_default_values": None if defaults is None else wire.stream_bytes([defaults], defaults.schema),
            "stability": None if table_like else "CONSISTENT",
            "null_handling": None if table_like else "DEFAULT",
            "argument_monotonicity": None,
            "description": function.description,
            "examples": [],
            "categories": [],
            "projection_pushdown": function.projection_pushdown if table_like else None,
            "filter_pushdown": function.filter_pushdown if table_like else None,
            "sampling_pushdown": False if table_like else None,
            "late_materialization": False if table_like else None,
            "filter_semantic_profiles": [vgi_filters.SEMANTICS] if function.filter_pushdown else [],
            "additional_filter_functions": [],
            "runtime_filter_algorithms": [],
            "filter_evaluation_contexts": [],
            "order_preservation": "PRESERVES_ORDER" if table_like else None,
            "max_workers": function.max_workers if table_like else None,
            "supports_batch_index": False,
            "supports_splits": False,
            "filters_exactly_applied": False,
            "supports_positions": False,
            "split_token_ttl_seconds": None,
            "partition_kind": "NOT_PARTITIONED",
            "order_dependent": "NOT_ORDER_DEPENDENT",
            "distinct_dependent": "NOT_DISTINCT_DEPENDENT",
            "supports_window": False,
            "streaming_partitioned": False,
            "has_finalize": function.finalize is not None,
            "source_order_dependent": False,
            "sink_order_dependent": False,
            "requires_input_batch_index": False,
            "input_from_args": False,
            "input_rows_per_call": None,
            "required_settings": [],
            "required_secrets": [],
        }

    def schema_info(self) -> dict[str, Any]:
        scalars = sum(1 for f in self.functions.values() if f.kind == SCALAR)
        counts = {
            "aggregate_function": 0,
            "index": 0,
            "macro": 0,
            "scalar_function": scalars,
            "table": 0,
            "table_function": len(self.functions) - scalars,
            "view": 0,
        }
        return {"comment": None, "tags": [], "path": [SCHEMA_NAME], "estimated_object_count": list(counts.items())}


def _doc(body: Callable[..., Any]) -> str:
    return (body.__doc__ or "").strip()


# -- bind -------------------------------------------------------------------------------------


@dataclass
class Bound:
    function: Function
    args: dict[str, Any]
    input_schema: pa.Schema | None
    output_schema: pa.Schema


def bind(worker: Worker, request: dict[str, Any]) -> Bound:
    """Resolves a ``BindRequest`` row, checks the call's shape and arguments, computes the output schema."""
    function = worker.resolve(request["function_name"], request.get("schema_path"))
    function_type = request.get("function_type") or "TABLE"
    input_schema = wire.read_schema(request.get("input_schema"))
    name = function.name
    if function.kind == SCALAR:
        if function_type != "SCALAR":
            raise InvalidArgumentError(f"{name}() is a scalar function, but was bound as {function_type}")
        if input_schema is None:
            raise InvalidArgumentError(f"{name}() is a scalar function: it needs its column arguments as input")
        if len(input_schema) != len(function.args):
            raise ArgumentValidationError(
                f"{name}() takes {len(function.args)} column argument(s), got {len(input_schema)}"
            )
        for index, (arg, column) in enumerate(zip(function.args, input_schema, strict=True)):
            if column.type != arg.type and column.type != pa.null():
                raise ArgumentValidationError(
                    f"{name}(): column argument {index} '{arg.name}' must be {_sql(arg.type)}, got {_sql(column.type)}"
                )
        args = function.bind_arguments(request.get("arguments"))
        return Bound(function, args, input_schema, pa.schema([pa.field("result", function.returns)]))
    kind_name = "table function" if function.kind == TABLE else "table-in-out function"
    if function_type != "TABLE":
        raise InvalidArgumentError(f"{name}() is a {kind_name}, but was bound as {function_type}")
    if function.kind == TABLE and input_schema is not None:
        raise InvalidArgumentError(f"{name}() is a table function: it takes no input table")
    if function.kind == TABLE_IN_OUT and input_schema is None:
        raise InvalidArgumentError(f"{name}() is a table-in-out function: it needs an input table")
    args = function.bind_arguments(request.get("arguments"))
    output = function.output
    if callable(output):
        output = output(input_schema, args)
    if output is None:
        output = input_schema
    return Bound(function, args, input_schema, output)


def _sql(arrow_type: pa.DataType) -> str:
    return sql_name(arrow_type)


# -- init streams -------------------------------------------------------------------------------


@dataclass
class _VgiStream(Stream):  # type: ignore[type-arg]
    """A stream whose shape (producer or exchange) is chosen per ``init`` call."""

    producer: bool = False


class _Scan:
    """What a table function's body sees: its share of the execution's work."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.rows = 0

    def claim(self, units: int) -> tuple[int, int] | None:
        if self.counter is None:
            return None
        return self.counter.claim(units)


class _TableState(ExchangeState):
    def __init__(
        self,
        bound: Bound,
        batches: Iterator[pa.RecordBatch],
        filter: Any,
        projection: list[int] | None,
        output_schema: pa.Schema,
        scan: _Scan,
    ) -> None:
        self.bound, self.batches, self.filter, self.projection = bound, batches, filter, projection
        self.output_schema, self.scan = output_schema, scan

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = next(self.batches, None)
        if batch is None:
            log("debug", f"{self.bound.function.name}(): connection emitted {self.scan.rows} row(s)")
            return out.finish()
        batch = _shape(batch, self.bound.output_schema, self.filter, self.projection)
        self.scan.rows += batch.num_rows
        out.emit(batch)


class _ScalarState(ExchangeState):
    def __init__(self, bound: Bound) -> None:
        self.bound = bound

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = input.batch
        result = self.bound.function.body(*batch.columns)
        if not isinstance(result, (pa.Array, pa.ChunkedArray)):
            result = pa.array(result, self.bound.function.returns)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        if len(result) != batch.num_rows:
            raise ValueError(f"{self.bound.function.name}() returned {len(result)} values for {batch.num_rows} rows")
        if result.type != self.bound.function.returns:
            result = result.cast(self.bound.function.returns)
        out.emit(pa.RecordBatch.from_arrays([result], schema=self.bound.output_schema))


class _InOutState(ExchangeState):
    def __init__(self, bound: Bound, state: Any, filter: Any, projection: list[int] | None) -> None:
        self.bound, self.state, self.filter, self.projection = bound, state, filter, projection
        self.pending: list[pa.RecordBatch] = []

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        if input.metadata.get(_STATUS) == "CONTINUE":
            if not self.pending:
                raise InvalidArgumentError("CONTINUE without pending output")
        else:
            if self.pending:
                raise InvalidArgumentError("new input while output is still pending")
            produced = self.bound.function.body(self.bound.args, self.state, input.batch)
            batches = [produced] if isinstance(produced, pa.RecordBatch) else list(produced or [])
            self.pending = [_shape(b, self.bound.output_schema, self.filter, self.projection) for b in batches]
            if not self.pending:
                self.pending = [_empty(_projected(self.bound.output_schema, self.projection))]
        batch = self.pending.pop(0)
        out.emit(batch, {_STATUS: "HAVE_MORE_OUTPUT"} if self.pending else None)


class _FinalizeState(ExchangeState):
    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.batches = batches

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = next(self.batches, None)
        if batch is None:
            return out.finish()
        out.emit(batch)


def _projected(schema: pa.Schema, projection: list[int] | None) -> pa.Schema:
    return schema if projection is None else pa.schema([schema.field(i) for i in projection])


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def _shape(batch: pa.RecordBatch, schema: pa.Schema, filter: Any, projection: list[int] | None) -> pa.RecordBatch:
    """Filters (on the unprojected columns) and then projects a batch the body produced."""
    if batch.schema != schema:
        batch = pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema], schema=schema)
    if filter is not None:
        batch = filter.apply(batch)
    if projection is not None:
        batch = batch.select(projection)
    return batch


class _Service:
    """The implementation of :class:`VgiV2` for one :class:`Worker`."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    # catalog ---------------------------------------------------------------------------

    def _check_attach(self, token: bytes) -> None:
        if token != _ATTACH_PREFIX + self.worker.name.encode():
            raise OpaqueDataNotRecognizedError("attach_opaque_data was not issued by this worker")

    def _items(self, schema: pa.Schema, rows: list[dict[str, Any]]) -> bytes:
        return wire.row_bytes(wire.ITEMS, {"items": [wire.row_bytes(schema, row) for row in rows]})

    def _functions(self, wanted: str | None) -> list[Function]:
        functions = sorted(self.worker.functions.values(), key=lambda f: f.name)
        if wanted == "SCALAR_FUNCTION":
            return [f for f in functions if f.kind == SCALAR]
        if wanted == "TABLE_FUNCTION":
            return [f for f in functions if f.kind != SCALAR]
        return [] if wanted else functions

    def catalog_catalogs(self) -> bytes:
        row = {
            "name": self.worker.name,
            "implementation_version": None,
            "data_version_spec": None,
            "attach_option_specs": [],
            "releases": [],
            "source_url": None,
        }
        return self._items(wire.CATALOG_INFO, [row])

    def catalog_attach(self, request: bytes) -> bytes:
        name = wire.read_row(request)["name"]
        if name != self.worker.name:
            raise NotFoundError(f"Unknown catalog: '{name}' (this worker serves '{self.worker.name}')")
        return wire.row_bytes(
            wire.CATALOG_ATTACH_RESULT,
            {
                "attach_opaque_data": _ATTACH_PREFIX + name.encode(),
                "supports_transactions": False,
                "supports_time_travel": False,
                "catalog_version_frozen": True,
                "catalog_version": CATALOG_VERSION,
                "attach_opaque_data_required": False,
                "default_schema": SCHEMA_NAME,
                "settings": [],
                "secret_types": [],
                "attach_catalogs": [],
                "comment": None,
                "tags": [],
                "supports_column_statistics": False,
                "global_functions": [],
                "global_function_prefix": "",
                "resolved_data_version": None,
                "resolved_implementation_version": None,
                "supports_catalog_contents": True,
            },
        )

    def catalog_schemas(self, attach_opaque_data: bytes, transaction_opaque_data: bytes | None = None) -> bytes:
        self._check_attach(attach_opaque_data)
        return self._items(wire.SCHEMA_INFO, [self.worker.schema_info()])

    def catalog_schema_get(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Any = None
    ) -> bytes:
        self._check_attach(attach_opaque_data)
        rows = [self.worker.schema_info()] if _is_main(path) else []
        return self._items(wire.SCHEMA_INFO, rows)

    def catalog_schema_contents_functions(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Any = None
    ) -> bytes:
        self._check_attach(attach_opaque_data)
        functions = self._functions(type.name) if _is_main(path) else []
        return self._items(wire.FUNCTION_INFO, [self.worker.function_info(f) for f in functions])

    def _nothing(self, attach_opaque_data: bytes, *_: Any) -> bytes:
        self._check_attach(attach_opaque_data)
        return wire.row_bytes(wire.ITEMS, {"items": []})

    catalog_schema_contents_tables = _nothing
    catalog_schema_contents_views = _nothing
    catalog_schema_contents_indexes = _nothing
    catalog_schema_contents_macros = _nothing
    catalog_copy_from_formats = _nothing

    def catalog_contents(self, attach_opaque_data: bytes, if_none_match: str | None = None) -> bytes:
        self._check_attach(attach_opaque_data)
        etag = f"quiver-vgi-py-{CATALOG_VERSION}-{len(self.worker.functions)}"
        row: dict[str, Any] = {"catalog_version": CATALOG_VERSION, "etag": etag, "not_modified": False}
        if if_none_match == etag:
            row["not_modified"] = True
        else:
            schemas = wire.rows_batch(wire.SCHEMA_INFO, [self.worker.schema_info()])
            functions = wire.rows_batch(
                wire.FUNCTION_INFO, [self.worker.function_info(f) for f in self._functions(None)]
            )
            row["schemas"] = wire.stream_bytes([schemas], wire.SCHEMA_INFO)
            row["functions"] = wire.stream_bytes([functions], wire.FUNCTION_INFO)
        return wire.row_bytes(wire.CATALOG_CONTENTS_RESPONSE, row)

    def catalog_version(self, attach_opaque_data: bytes, transaction_opaque_data: Any = None) -> bytes:
        self._check_attach(attach_opaque_data)
        return wire.row_bytes(wire.CATALOG_VERSION_RESPONSE, {"version": CATALOG_VERSION})

    def catalog_detach(self, attach_opaque_data: bytes) -> None:
        self._check_attach(attach_opaque_data)

    # functions ---------------------------------------------------------------------------

    def bind(self, request: bytes) -> bytes:
        bound = bind(self.worker, wire.read_row(request))
        log("debug", f"bind {bound.function.name}()")
        return wire.row_bytes(
            wire.BIND_RESPONSE,
            {
                "output_schema": wire.schema_bytes(bound.output_schema),
                "opaque_data": None,
                "lookup_secret_types": [],
                "lookup_scopes": [],
                "lookup_names": [],
            },
        )

    def table_function_cardinality(self, request: bytes) -> bytes:
        return wire.row_bytes(wire.TABLE_CARDINALITY, {"estimate": None, "max": None})

    def init(self, request: bytes) -> Stream:  # type: ignore[type-arg]
        init = wire.read_row(request)
        bound = bind(self.worker, wire.read_row(init["bind_call"]))
        function, phase = bound.function, init.get("phase")
        execution_id = init.get("execution_id")
        secondary = execution_id is not None
        execution_id = execution_id or uuid.uuid4().bytes
        header = GlobalInitResponse(
            execution_id, init.get("init_opaque_data") if secondary else None, UNBOUNDED_WORKERS
        )
        role = "secondary" if secondary else "primary"
        log("debug", f"init {function.name}() {role} phase={phase}")
        projection = init.get("projection_ids") if function.projection_pushdown else None
        filter = None
        if function.filter_pushdown and init.get("pushdown_filters"):
            filter = vgi_filters.parse(init["pushdown_filters"], bound.output_schema)
        if function.kind == SCALAR:
            if phase is not None:
                raise InvalidArgumentError(f"{function.name}() is a scalar function: init takes no phase ({phase})")
            return _VgiStream(bound.output_schema, _ScalarState(bound), bound.input_schema, header)
        if function.kind == TABLE:
            if phase is not None:
                raise InvalidArgumentError(f"{function.name}() is a table function: init takes no phase ({phase})")
            executions = self.worker.executions
            if function.shared_work is None:
                counter = None
                header.max_workers = 1
            elif secondary:
                counter = executions.join(execution_id)
                log("debug", f"secondary init of execution {execution_id.hex()}")
            else:
                counter = executions.start(execution_id, int(function.shared_work(bound.args)))
                header.max_workers = function.max_workers or 1
                log("debug", f"execution {execution_id.hex()} started")
            scan = _Scan(counter)
            batches = iter(function.body(bound.args, scan))
            output = _projected(bound.output_schema, projection)
            state = _TableState(bound, batches, filter, projection, output, scan)
            return _VgiStream(output, state, wire.EMPTY_SCHEMA, header, producer=True)
        # table-in-out
        substream = init.get("substream_id") or b""
        key = (execution_id, substream)
        if phase == "INPUT":
            state = function.initial_state(bound.args) if function.initial_state else {}
            with self.worker.executions.lock:
                self.worker.executions.states[key] = state
            output = _projected(bound.output_schema, projection)
            return _VgiStream(output, _InOutState(bound, state, filter, projection), bound.input_schema, header)
        if phase == "FINALIZE":
            with self.worker.executions.lock:
                state = self.worker.executions.states.pop(key, None)
            produced = function.finalize(bound.args, state) if function.finalize else []
            batches = [produced] if isinstance(produced, pa.RecordBatch) else list(produced or [])
            shaped = iter([_shape(b, bound.output_schema, None, None) for b in batches])
            return _VgiStream(bound.output_schema, _FinalizeState(shaped), wire.EMPTY_SCHEMA, header, producer=True)
        raise InvalidArgumentError(
            f"{function.name}() is a table-in-out function: init requires an input row "
            f"stream (phase INPUT or FINALIZE, got {phase})"
        )


def _is_main(path: list[str] | None) -> bool:
    return [p.lower() for p in (path or [])] == [SCHEMA_NAME]


# -- serving: init's shape is chosen per call -------------------------------------------------


class _VgiSession(Session):
    """A session where ``init`` streams may be producers (finish) or exchanges, per call."""

    def _turn(self, spec: Any, stream: Any, item: Any, output: Any) -> bool:
        if getattr(stream, "producer", False):
            spec = _producer(spec)
        return super()._turn(spec, stream, item, output)


_PRODUCERS: dict[str, Any] = {}


def _producer(spec: Any) -> Any:
    found = _PRODUCERS.get(spec.name)
    if found is None:
        found = _PRODUCERS[spec.name] = dataclasses.replace(spec, kind=MethodKind.PRODUCER)
    return found


class _VgiServer(Server):
    def serve(self, connection: Any) -> None:
        _VgiSession(self.protocols, connection, limits=self.limits, shm=self.shm, server_id=self.server_id).run()
