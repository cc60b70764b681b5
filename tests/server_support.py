"""Driving a quiver server in tests: start ``python -m quiver.serve`` and read its announcement,
and talk ``quiver.server`` with quiver's own Python RPC client (``quiver.rpc``), through the
protocol class below — the wire as crates/quiver-server-protocol states it, not a DB-API client.

Imported by the server test modules (``from server_support import ...``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol

import pyarrow as pa

from quiver.rpc.client import Client
from quiver.rpc.stream import ExchangeState, ProducerState, Stream
from quiver.rpc.types import ArrowType
from quiver.transport.socket import connect_tcp, connect_unix

ROOT = Path(__file__).resolve().parent.parent
#: Bound on every wait for the server: generous, since tests share a loaded 2-core machine.
WAIT_SECONDS = 60.0


#: ``connect``'s reply (crates/quiver-server-protocol/src/session.rs), read as a dict.
SessionInfo = Annotated[
    object,
    ArrowType(
        pa.struct(
            [
                pa.field(name, pa.string(), nullable=False)
                for name in ("server_version", "duckdb_version", "session_id", "database")
            ]
        ),
        nullable=False,
    ),
]
#: ``prepare``'s reply, read as a dict.
PreparedInfo = Annotated[
    object,
    ArrowType(
        pa.struct(
            [
                pa.field("statement_id", pa.int64(), nullable=False),
                pa.field("parameter_count", pa.int64(), nullable=False),
                pa.field("result_schema", pa.binary()),
            ]
        ),
        nullable=False,
    ),
]


class QuiverServer(Protocol):
    """``quiver.server`` 1.0.0 (crates/quiver-server-protocol/src/methods.rs)."""

    protocol_name: ClassVar[str] = "quiver.server"
    protocol_version: ClassVar[str] = "1.0.0"

    def connect(self, token: str | None = None, client_name: str | None = None) -> SessionInfo: ...
    def execute(self, sql: str, parameters: bytes | None = None) -> int | None: ...
    def query(
        self, sql: str, parameters: bytes | None = None, batch_rows: int | None = None
    ) -> Stream[ProducerState, None]: ...
    def prepare(self, sql: str) -> PreparedInfo: ...
    def execute_prepared(self, statement_id: int, parameters: bytes | None = None) -> int | None: ...
    def query_prepared(
        self, statement_id: int, parameters: bytes | None = None, batch_rows: int | None = None
    ) -> Stream[ProducerState, None]: ...
    def close_prepared(self, statement_id: int) -> None: ...
    def insert(
        self, table: str, schema_name: str | None, catalog: str | None, schema: bytes, mode: str
    ) -> Stream[ExchangeState, None]: ...
    def tables(self, catalog: str | None = None, schema_name: str | None = None) -> Stream[ProducerState, None]: ...
    def table_schema(self, table: str, schema_name: str | None = None, catalog: str | None = None) -> bytes: ...
    def cancel(self, session_id: str) -> bool: ...


COMMIT = {"quiver.insert.commit": "1"}


def parameters(**columns: list[Any]) -> bytes:
    """A nested parameters stream: one row per execution, one column per parameter."""
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def schema_message(schema: pa.Schema) -> bytes:
    """A schema as the protocol nests it (a framed schema message)."""
    return schema.serialize().to_pybytes()


class ServerProcess:
    """``python -m quiver.serve`` with its announcement read; stopped (SIGTERM) by :meth:`stop`."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, stdin: Any = subprocess.DEVNULL) -> None:
        environment = {**os.environ, **(env or {})}
        environment["PYTHONPATH"] = str(ROOT / "python")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "quiver.serve", *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            text=True,
        )
        self.stderr_text = ""
        self.port: int | None = None
        self.unix: str | None = None
        self.token: str | None = None
        self.flight_sql: str | None = None
        #: Every announcement line before READY, in order.
        self.announced: list[str] = []
        deadline = time.monotonic() + WAIT_SECONDS
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline().strip()
            if line == "READY":
                return
            if not line:
                raise AssertionError(f"server ended before READY: {self.process.stderr.read()}")  # type: ignore[union-attr]
            self.announced.append(line)
            kind, _, value = line.partition(":")
            if kind == "PORT":
                self.port = int(value)
            elif kind == "UNIX":
                self.unix = value
            elif kind == "TOKEN":
                self.token = value
            elif kind == "FLIGHT_SQL":
                self.flight_sql = value
        raise AssertionError("no READY from the server")

    def client(self, *, token: str | None = None, unix: bool = False, shm_size: int | None = None) -> Client[Any]:
        """A connected client (``connect`` already called, with the announced token by default)."""
        client = self.raw_client(unix=unix, shm_size=shm_size)
        client.call("connect", token=token if token is not None else self.token, client_name="test")
        return client

    def raw_client(self, *, unix: bool = False, shm_size: int | None = None) -> Client[Any]:
        """A client that has not called ``connect``."""
        if unix:
            assert self.unix is not None
            connection = connect_unix(self.unix)
        else:
            assert self.port is not None
            connection = connect_tcp("127.0.0.1", self.port)
        return Client(QuiverServer, connection, shm_size=shm_size)

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def stop(self) -> int:
        """SIGTERM, then the exit status (bounded wait)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout=WAIT_SECONDS)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=WAIT_SECONDS)
        if self.process.stderr is not None and not self.process.stderr.closed:
            self.stderr_text = self.process.stderr.read()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def query_table(client: Client[Any], sql: str, **options: Any) -> pa.Table:
    """A query's whole result."""
    with client.stream("query", sql, **options) as call:
        batches = [item.batch for item in call]
    schema = batches[0].schema if batches else None
    return pa.Table.from_batches(batches, schema=schema)


def wait_until(condition: Any, what: str, seconds: float = WAIT_SECONDS) -> None:
    """Polls ``condition`` until true, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
