"""A stand-in for the quiver server in the client's tests, over the ``duckdb`` Python package.

``quiver.server`` 1.0.0 served by this package's RPC server, one DuckDB connection per session.

It takes the real server's command line (``--listen``, ``--token-env``/``--no-auth``, ``--watch-stdin``,
``--database``) and announces the same ``PORT:``/``UNIX:``/``TOKEN:``/``READY`` lines, so the client's
tests run the same against either. It is deliberately simple (an insert stages its batches in memory
until the commit marker) and is no model for the real server (``crates/quiver-server``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
from typing import Any

import duckdb
import pyarrow as pa

from quiver import server_protocol as sp
from quiver.rpc import AnnotatedBatch, CallContext, ExchangeState, Output, ProducerState, Server, Stream
from quiver.transport.socket import listen_tcp, listen_unix

_SESSIONS: dict[str, Session] = {}
_SESSIONS_LOCK = threading.Lock()


class AuthenticationError(Exception):
    pass


def _rows(parameters: bytes | None) -> list[list[Any]]:
    if parameters is None:
        return [[]]
    table = pa.ipc.open_stream(pa.py_buffer(parameters)).read_all()
    return [list(row.values()) for row in table.to_pylist()]


class Producer(ProducerState):
    def __init__(self, reader: pa.RecordBatchReader) -> None:
        self.reader = reader

    def produce(self, out: Output, ctx: CallContext) -> None:
        try:
            out.emit(self.reader.read_next_batch())
        except StopIteration:
            out.finish()


class Inserter(ExchangeState):
    def __init__(self, session: Session, target: str, mode: sp.InsertMode) -> None:
        self.session, self.target, self.mode = session, target, mode
        self.staged: list[pa.RecordBatch] = []
        self.rows = 0

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        self.staged.append(input.batch)
        self.rows += input.batch.num_rows
        if input.metadata.get(sp.COMMIT_KEY) == sp.COMMIT_VALUE:
            self.session.append(self.target, self.mode, pa.Table.from_batches(self.staged, input.batch.schema))
        out.emit_pydict({sp.ROWS_FIELD: [self.rows]})


class Session:
    def __init__(self, database: duckdb.DuckDBPyConnection, name: str, token: str | None) -> None:
        self.con = database.cursor()
        self.name = name
        self.token = token
        self.session_id: str | None = None

    def _check(self) -> None:
        if self.session_id is None:
            raise AuthenticationError("authentication failed")

    def connect(self, token: str | None = None, client_name: str | None = None) -> dict[str, str]:
        if self.session_id is not None or (self.token is not None and token != self.token):
            raise AuthenticationError("authentication failed")
        self.session_id = secrets.token_hex(16)
        with _SESSIONS_LOCK:
            _SESSIONS[self.session_id] = self
        version = duckdb.__version__
        return {
            "server_version": "double",
            "duckdb_version": f"v{version}",
            "session_id": self.session_id,
            "database": self.name,
        }

    def execute(self, sql: str, parameters: bytes | None = None) -> int | None:
        self._check()
        total: int | None = None
        for row in _rows(parameters):
            relation = self.con.execute(sql, row) if row else self.con.execute(sql)
            described = self.con.description
            counted = relation.fetchone() if described and [c[0] for c in described] == ["Count"] else None
            if counted is not None:
                total = (total or 0) + int(counted[0])
        return total

    def query(self, sql: str, parameters: bytes | None = None, batch_rows: int | None = None) -> Stream[Producer]:
        self._check()
        (row,) = _rows(parameters)
        relation = self.con.execute(sql, row) if row else self.con.execute(sql)
        reader = relation.to_arrow_reader(batch_rows or sp.BATCH_ROWS_DEFAULT)
        return Stream(reader.schema, Producer(reader))

    def insert(
        self, table: str, schema_name: str | None, catalog: str | None, schema: bytes, mode: str
    ) -> Stream[Inserter]:
        self._check()
        target = ".".join(f'"{part}"' for part in (catalog, schema_name, table) if part)
        declared = pa.ipc.read_schema(pa.py_buffer(schema))
        return Stream(sp.ACK_SCHEMA, Inserter(self, target, sp.InsertMode.parse(mode)), input_schema=declared)

    def append(self, target: str, mode: sp.InsertMode, data: pa.Table) -> None:
        self.con.register("__staged", data)
        try:
            if mode is sp.InsertMode.REPLACE:
                self.con.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM __staged")
            elif mode is sp.InsertMode.CREATE:
                self.con.execute(f"CREATE TABLE {target} AS SELECT * FROM __staged")
            elif mode is sp.InsertMode.CREATE_APPEND:
                self.con.execute(f"CREATE TABLE IF NOT EXISTS {target} AS SELECT * FROM __staged LIMIT 0")
                self.con.execute(f"INSERT INTO {target} BY NAME SELECT * FROM __staged")
            else:
                self.con.execute(f"INSERT INTO {target} BY NAME SELECT * FROM __staged")
        finally:
            self.con.unregister("__staged")

    def tables(self, catalog: str | None = None, schema_name: str | None = None) -> Stream[Producer]:
        self._check()
        reader = self.con.execute(
            "SELECT database_name AS catalog, schema_name, table_name, 'BASE TABLE' AS table_type,"
            " column_count::BIGINT AS column_count, estimated_size::BIGINT AS estimated_rows FROM duckdb_tables()"
        ).to_arrow_reader()
        return Stream(sp.TABLES_SCHEMA, Producer(reader))

    def table_schema(self, table: str, schema_name: str | None = None, catalog: str | None = None) -> bytes:
        self._check()
        target = ".".join(f'"{part}"' for part in (catalog, schema_name, table) if part)
        return bytes(self.con.execute(f"SELECT * FROM {target} LIMIT 0").to_arrow_table().schema.serialize())

    def cancel(self, session_id: str) -> bool:
        self._check()
        with _SESSIONS_LOCK:
            other = _SESSIONS.get(session_id)
        if other is None:
            return False
        other.con.interrupt()
        return True

    # The methods the client does not use yet are answered as the protocol says they exist.
    def prepare(self, sql: str) -> dict[str, Any]:
        raise NotImplementedError("prepare")

    def execute_prepared(self, statement_id: int, parameters: bytes | None = None) -> int | None:
        raise NotImplementedError("execute_prepared")

    def query_prepared(
        self, statement_id: int, parameters: bytes | None = None, batch_rows: int | None = None
    ) -> Stream[Producer]:
        raise NotImplementedError("query_prepared")

    def close_prepared(self, statement_id: int) -> None:
        raise NotImplementedError("close_prepared")

    def close(self) -> None:
        with _SESSIONS_LOCK:
            _SESSIONS.pop(self.session_id or "", None)
        self.con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default=":memory:")
    parser.add_argument("--listen", action="append", default=[])
    parser.add_argument("--token-env", default="QUIVER_TOKEN")
    parser.add_argument("--no-auth", action="store_true")
    parser.add_argument("--watch-stdin", action="store_true")
    args, _ = parser.parse_known_args()
    database = duckdb.connect(args.database)
    token = None if args.no_auth else os.environ.get(args.token_env)
    addresses = [sp.Address.parse(text) for text in args.listen or ["tcp://127.0.0.1:0"]]
    if token is None and not args.no_auth and any(not a.is_unix for a in addresses):
        token = secrets.token_hex(16)
        print(f"TOKEN:{token}")
    for address in addresses:
        if address.path is not None:
            listener = listen_unix(address.path)
            print(f"UNIX:{address.path}")
            needed = None
        else:
            listener = listen_tcp(address.host or "127.0.0.1", address.port)
            print(f"PORT:{listener.port}")
            needed = token

        def handle(connection: Any, needed: str | None = needed) -> None:
            session = Session(database, args.database, needed)
            try:
                Server(sp.QuiverServer, session).serve(connection)
            finally:
                session.close()

        threading.Thread(target=listener.serve, args=(handle,), daemon=True).start()
    print("READY", flush=True)
    if args.watch_stdin:
        sys.stdin.read()
    else:
        threading.Event().wait()
    database.close()


if __name__ == "__main__":
    main()
