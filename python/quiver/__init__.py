"""quiver: Apache Arrow RPC in pure Python, wire-compatible with vgi-rpc v1.

The most used names are re-exported here; the layers live in :mod:`quiver.wire`
(IPC streams with per-batch metadata), :mod:`quiver.shm` (shared-memory segments),
:mod:`quiver.transport` (pipes, subprocesses, sockets) and :mod:`quiver.rpc` (client,
server, typed protocols).
"""

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
    connect,
    serve_stdio,
    serve_tcp,
    serve_unix,
)
from .transport import connect_tcp, connect_unix, pipe_pair, spawn
from .wire import Level, Limits, LogRecord

__version__ = "0.1.0"

__all__ = [
    "AnnotatedBatch",
    "ArrowType",
    "CallContext",
    "Client",
    "ExchangeState",
    "Level",
    "Limits",
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
    "pipe_pair",
    "serve_stdio",
    "serve_tcp",
    "serve_unix",
    "spawn",
]
