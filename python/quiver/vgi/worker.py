"""A worker: its functions, the ``vgi.v2`` service built from them, and launching it.

The service's methods live by concern: :mod:`.catalog` answers the catalog calls from the
function definitions alone, :mod:`.bind` resolves and checks a call, and :mod:`.init` runs a
function's stream. Launch: stdio by default; ``--unix PATH`` prints ``UNIX:<abs path>`` and
serves connections on threads until ``--idle-timeout`` seconds pass with none.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from ..rpc import MethodKind, Server
from ..rpc.session import Session
from ..transport.socket import SocketConnection, listen_unix
from ..transport.stdio import stdio_connection
from . import aggregate
from .aggregate import AggregateMethods
from .bind import BindMethods
from .buffering import BufferedCalls, BufferingMethods
from .catalog import CatalogMethods
from .docs import Docs, Schema
from .execution import Executions
from .function import AGGREGATE, SCALAR, TABLE, TABLE_BUFFERING, TABLE_IN_OUT, Arg, Function
from .init import InitMethods
from .log import LEVELS, log, set_level
from .protocol import VgiV2
from .splits import PlanMethods


class Worker:
    """A catalog of functions, served over stdio or a Unix socket.

    >>> worker = Worker("demo")
    >>> @worker.scalar(returns=pa.string(), args=[Arg("s", pa.string())])
    ... def shout(s): return pc.utf8_upper(s)
    >>> worker.main()
    """

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        default_schema: str = "main",
        comment: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """A worker serving the catalog ``name``.

        ``default_schema``: where unqualified names resolve (``USE w``) and functions live unless
        they name a ``schema``; ``comment`` and ``tags`` describe the catalog (``duckdb_databases()``).
        """
        self.name = name
        self.description = description
        self.default_schema = default_schema
        self.comment = comment
        self.tags = dict(tags or {})
        self.schemas: dict[str, Schema] = {default_schema: Schema(default_schema)}
        self.functions: dict[str, Function] = {}
        self.executions = Executions()
        self.buffered = BufferedCalls()
        self.aggregates = aggregate.Executions()

    def schema(self, name: str, *, comment: str | None = None, tags: Mapping[str, str] | None = None) -> Schema:
        """Declares schema ``name`` (with or without functions), its comment and tags (``duckdb_schemas()``)."""
        declared = Schema(name, comment, dict(tags or {}))
        self.schemas[name] = declared
        return declared

    # decorators ------------------------------------------------------------------------

    def add(self, function: Function) -> Function:
        """Registers ``function``; one without a schema lives in the default schema."""
        if function.name in self.functions:
            raise ValueError(f"function '{function.name}' registered twice")
        if function.schema is None:
            function.schema = self.default_schema
        self.schemas.setdefault(function.schema, Schema(function.schema))
        self.functions[function.name] = function
        return function

    def scalar(
        self,
        *,
        returns: pa.DataType,
        args: list[Arg],
        name: str | None = None,
        doc: str | None = None,
        schema: str | None = None,
        **docs: Any,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(*columns) -> pa.Array``: one output value per input row.

        Every decorator also takes ``schema=`` (default: the worker's default schema) and the
        :class:`~quiver.vgi.docs.Docs` fields ``comment=``, ``tags=``, ``examples=``, ``categories=``.
        """
        described = Docs(**docs)

        def wrap(body: Callable[..., Any]) -> Function:
            return self.add(
                Function(
                    name or body.__name__,
                    SCALAR,
                    body,
                    list(args),
                    doc or _doc(body),
                    returns=returns,
                    schema=schema,
                    docs=described,
                )
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
        splits: Callable[[dict[str, Any]], list[bytes]] | None = None,
        splits_per_page: int | None = None,
        schema: str | None = None,
        **docs: Any,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(args, scan) -> Iterator[pa.RecordBatch]``, full output columns; the SDK filters and projects.

        With ``shared_work(args) -> total units``, ``scan.claim(n)`` hands out ``(start, end)`` ranges
        across every connection of the execution (``None`` when done); then ``max_workers`` may exceed 1.

        With ``splits(args) -> list[bytes]`` the scan is planned instead: each payload names one unit
        of work, the engine redeems each on any connection, and the body reads its unit from
        ``scan.split``. ``max_workers`` bounds how many splits run at once; ``splits_per_page`` how
        many one plan page carries.
        """
        described = Docs(**docs)

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
                    max_workers=max_workers if shared_work or splits else 1,
                    shared_work=shared_work,
                    splits=splits,
                    splits_per_page=splits_per_page,
                    schema=schema,
                    docs=described,
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
        schema: str | None = None,
        **docs: Any,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(args, state, batch) -> RecordBatch | Iterable[RecordBatch]``; ``finalize(args, state)`` likewise.

        ``output`` is the output schema, or a function of the input schema (default: the input schema).
        Table-in-out functions run on one connection (``max_workers`` 1), so finalize sees the one state.
        """
        if not any(a.table for a in args):
            raise ValueError("a table-in-out function needs an Arg.table_input(...) argument")
        described = Docs(**docs)

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
                    schema=schema,
                    docs=described,
                )
            )

        return wrap

    def aggregate(
        self,
        *,
        name: str,
        returns: pa.DataType,
        args: list[Arg],
        doc: str = "",
        order_dependent: bool = False,
        distinct_independent: bool = False,
        schema: str | None = None,
        **docs: Any,
    ) -> Callable[[Any], Function]:
        """Decorates an :class:`~quiver.vgi.aggregate.Aggregator` (a class, instantiated once, or an object).

        ``order_dependent``: the result depends on the rows' order, so the engine keeps ``ORDER BY``
        inside the call; ``distinct_independent``: ``DISTINCT`` does not change the result (a min, a
        max), so the engine may drop it (by default it is honoured).
        """
        described = Docs(**docs)

        def wrap(aggregator: Any) -> Function:
            body = aggregator() if isinstance(aggregator, type) else aggregator
            return self.add(
                Function(
                    name,
                    AGGREGATE,
                    body,
                    list(args),
                    doc or _doc(aggregator),
                    returns=returns,
                    order_dependent=order_dependent,
                    distinct_dependent=not distinct_independent,
                    schema=schema,
                    docs=described,
                )
            )

        return wrap

    def buffered_table(
        self,
        *,
        args: list[Arg],
        output: Callable[[pa.Schema, dict[str, Any]], pa.Schema] | pa.Schema | None = None,
        name: str | None = None,
        doc: str | None = None,
        schema: str | None = None,
        **docs: Any,
    ) -> Callable[[Callable[..., Any]], Function]:
        """``fn(args, table: pa.Table) -> pa.Table | RecordBatch | Iterable[RecordBatch]``.

        A buffered table function (``table_buffering``), called once with the whole input table.

        ``output`` is the output schema, or a function of the input schema (default: the input schema).
        """
        if not any(a.table for a in args):
            raise ValueError("a buffered table function needs an Arg.table_input(...) argument")
        described = Docs(**docs)

        def wrap(body: Callable[..., Any]) -> Function:
            return self.add(
                Function(
                    name or body.__name__,
                    TABLE_BUFFERING,
                    body,
                    list(args),
                    doc or _doc(body),
                    output=output,
                    max_workers=1,
                    schema=schema,
                    docs=described,
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
        parser = argparse.ArgumentParser(description=self.description or f"VGI worker {self.name}")
        parser.add_argument("--unix", metavar="PATH")
        parser.add_argument("--idle-timeout", type=float, default=300.0, metavar="SECS")
        parser.add_argument("--debug", action="store_true")
        parser.add_argument("--quiet", action="store_true")
        parser.add_argument("--log-level")
        parser.add_argument("--log-format")
        parser.add_argument("--log-logger")
        options = parser.parse_args(argv)
        level = LEVELS.get((options.log_level or "").lower())
        if options.debug:
            level = LEVELS["debug"]
        elif options.quiet:
            level = LEVELS["error"]
        if level is not None:
            set_level(level)
        if options.unix:
            self.serve_unix(options.unix, options.idle_timeout)
        else:
            self.serve_stdio()


def _doc(body: Callable[..., Any]) -> str:
    return (body.__doc__ or "").strip()


class _Service(CatalogMethods, BindMethods, InitMethods, PlanMethods, BufferingMethods, AggregateMethods):
    """The implementation of :class:`~quiver.vgi.protocol.VgiV2` for one :class:`Worker`."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker


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
