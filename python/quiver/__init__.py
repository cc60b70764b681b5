"""quiver: Apache Arrow RPC in pure Python, wire-compatible with vgi-rpc v1.

The most used names are re-exported here; the layers live in :mod:`quiver.wire`
(IPC streams with per-batch metadata), :mod:`quiver.shm` (shared-memory segments),
:mod:`quiver.transport` (pipes, subprocesses, sockets) and :mod:`quiver.rpc` (client,
server, typed protocols). :mod:`quiver.sql` opens DuckDB with quiver's extension loaded;
``quiver.load(connection)`` loads it into a DuckDB connection of your own (:mod:`quiver.extension`).

``quiver.connect()`` answers all three: with a ``tcp://`` or ``unix://`` address, it is
:func:`quiver.client.connect` (a DB-API connection to a quiver server); with no arguments, a
database path or keywords only, it is :func:`quiver.sql.connect` (DuckDB, workers attached as
catalogs); with a protocol class first, it is :func:`quiver.rpc.connect` (an RPC client on a
connection).

``quiver.native`` is the Rust client of the quiver server (the ``quiver_native`` module) when it is
installed, else ``None``; ``quiver.implementation()`` says which is in use (:mod:`quiver.native_module`).
"""

from typing import TYPE_CHECKING, Any

from .extension import extension_path, load
from .native_module import implementation, native
from .rpc import (
    AnnotatedBatch,
    ArrowType,
    CallContext,
    Client,
    ExchangeState,
    Output,
    ProducerState,
    RpcError,
    Server,
    Stream,
    StreamCall,
    StreamState,
    serve_stdio,
    serve_tcp,
    serve_unix,
)
from .rpc import connect as _rpc_connect
from .transport import connect_tcp, connect_unix, pipe_pair, spawn
from .wire import Limits, LogLevel, LogRecord

# `Level` was this name before the wire layer's LogLevel; user code imports it from here.
Level = LogLevel

if TYPE_CHECKING:
    import duckdb

    from .client import Connection as ServerConnection

_SERVER_SCHEMES = ("tcp://", "unix://")


def connect(*args: Any, **kwargs: Any) -> "Client[Any] | duckdb.DuckDBPyConnection | ServerConnection":
    """Connect to a quiver server, to DuckDB with quiver loaded, or to an RPC worker, by the first argument.

    ``connect("tcp://127.0.0.1:5000", token=...)`` / ``connect("unix:///path")``: a DB-API 2.0
    connection to a quiver server (:func:`quiver.client.connect`).
    ``connect()`` / ``connect("file.db", workers={"w": "launch:..."})``: DuckDB with quiver's
    extension loaded (:func:`quiver.sql.connect`). ``connect(Protocol, connection, **options)``: an
    RPC client (:func:`quiver.rpc.connect`).
    """
    if args and isinstance(args[0], type):
        return _rpc_connect(*args, **kwargs)
    if args and isinstance(args[0], str) and args[0].startswith(_SERVER_SCHEMES):
        from .client import connect as server_connect

        return server_connect(*args, **kwargs)
    from .sql import connect as sql_connect

    return sql_connect(*args, **kwargs)


__version__ = "0.1.0"

__all__ = [
    "AnnotatedBatch",
    "ArrowType",
    "CallContext",
    "Client",
    "ExchangeState",
    "Level",
    "Limits",
    "LogLevel",
    "LogRecord",
    "Output",
    "ProducerState",
    "RpcError",
    "Server",
    "Stream",
    "StreamCall",
    "StreamState",
    "connect",
    "connect_tcp",
    "connect_unix",
    "extension_path",
    "implementation",
    "load",
    "native",
    "pipe_pair",
    "serve_stdio",
    "serve_tcp",
    "serve_unix",
    "spawn",
]
