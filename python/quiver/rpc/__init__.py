"""RPC over Arrow IPC, wire-compatible with vgi-rpc v1: unary, producer and exchange calls.

Define a protocol as a class of annotated methods, implement it on the server, call it
through a typed client::

    class Calculator:
        protocol_version: ClassVar[str] = "1.0.0"
        def add(self, a: float, b: float) -> float: ...

    class CalculatorImpl:
        def add(self, a: float, b: float) -> float:
            return a + b

    serve_stdio(Server(Calculator, CalculatorImpl()))            # worker
    with connect(Calculator, spawn(["python", "worker.py"])) as calc:   # client
        calc.add(1.0, 2.0)
"""

from .client import Client, RpcError, StreamCall, connect
from .context import CallContext
from .method import MethodKind, MethodSpec, ProtocolSpec, protocol_spec
from .serve import serve_stdio, serve_tcp, serve_unix
from .server import Server
from .stream import AnnotatedBatch, ExchangeState, Output, ProducerState, Stream, StreamState
from .types import ArrowType, codec_for, dataclass_from_batch, dataclass_schema, dataclass_to_batch

__all__ = [
    "AnnotatedBatch",
    "ArrowType",
    "CallContext",
    "Client",
    "ExchangeState",
    "MethodKind",
    "MethodSpec",
    "Output",
    "ProducerState",
    "ProtocolSpec",
    "RpcError",
    "Server",
    "Stream",
    "StreamCall",
    "StreamState",
    "codec_for",
    "connect",
    "dataclass_from_batch",
    "dataclass_schema",
    "dataclass_to_batch",
    "protocol_spec",
    "serve_stdio",
    "serve_tcp",
    "serve_unix",
]
