"""A DB-API 2.0 connection to a quiver server: one session on the server's DuckDB.

Transactions follow PEP 249: with ``autocommit`` off (the default) the first statement after
``connect``, ``commit`` or ``rollback`` is preceded by ``BEGIN``, so nothing is committed until
:meth:`Connection.commit`; ``insert_arrow`` joins that transaction too. With ``autocommit`` on, each
statement (and each ``insert_arrow``, all or nothing) commits by itself. SQL ``BEGIN``/``COMMIT``/
``ROLLBACK`` sent through a cursor are understood and keep the connection's view of the transaction.

The wire is lockstep: one call at a time per connection. A query's result holds the wire until it is
read or discarded; any other statement on the connection discards an unfinished result first
(its cursor then raises :class:`InterfaceError` on fetch). A connection is used by one thread at a
time (``threadsafety = 1``), except :meth:`Connection.cancel`, which may come from any thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pyarrow as pa

from .. import server_protocol as sp
from ..rpc import Client, RpcError
from ..shm.config import ShmConfig
from ..transport import connect_tcp, connect_unix
from ..wire.error import Malformed, WireError
from . import insert as inserting
from .cursor import Cursor
from .errors import InterfaceError, OperationalError, ProgrammingError, connection_lost, from_rpc, refused_reply
from .result import QueryResult
from .statements import transaction_control

T = TypeVar("T")

TOKEN_ENV = "QUIVER_TOKEN"
# Why 256 MiB: a segment is sparse (pages are committed as regions are used), and this holds dozens of
# the server's default batches (BATCH_ROWS_DEFAULT rows) in flight at once.
SHM_BYTES_DEFAULT = 256 << 20
CLIENT_NAME_DEFAULT = "quiver-python"


class Connection:
    """One session on a quiver server. Make one with :func:`quiver.connect`."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        autocommit: bool = False,
        shm: bool | None = None,
        shm_bytes: int = SHM_BYTES_DEFAULT,
        client_name: str = CLIENT_NAME_DEFAULT,
        batch_rows: int | None = None,
    ) -> None:
        try:
            self.address = sp.Address.parse(address)
        except ValueError as exc:
            raise ProgrammingError(str(exc)) from None
        if token is None and not self.address.is_unix:
            token = os.environ.get(TOKEN_ENV)
        if token is not None and len(token.encode()) > sp.TOKEN_BYTES_MAX:
            raise ProgrammingError(f"a token of more than {sp.TOKEN_BYTES_MAX} bytes")
        if batch_rows is not None and not 0 < batch_rows <= sp.BATCH_ROWS_MAX:
            raise ProgrammingError(f"batch_rows must be 1..{sp.BATCH_ROWS_MAX}, got {batch_rows}")
        self._token = token
        self._shm = self.address.is_unix if shm is None else shm
        self._shm_bytes = shm_bytes
        self.batch_rows = batch_rows
        self._autocommit = autocommit
        self._in_transaction = False
        self._active: QueryResult | None = None
        self._client: Client[Any] | None = None
        self._client = self._open()
        try:
            reply = self._guard(lambda: self._rpc().call(sp.CONNECT, token, client_name))
            self.session = sp.SessionInfo.from_reply(reply)
        except ValueError as exc:
            self.close()
            raise InterfaceError(str(exc)) from exc
        except BaseException:
            self.close()
            raise

    # -- PEP 249 ---------------------------------------------------------------------------

    def cursor(self) -> Cursor:
        self._check_open()
        return Cursor(self)

    def commit(self) -> None:
        """Commits the open transaction (nothing to do when none is open)."""
        if self._in_transaction:
            self._end_transaction("COMMIT")

    def rollback(self) -> None:
        """Rolls back the open transaction (nothing to do when none is open)."""
        if self._in_transaction:
            self._end_transaction("ROLLBACK")

    def close(self) -> None:
        """Closes the connection; the server rolls back what it left open. Closing twice is fine."""
        client, self._client = self._client, None
        active, self._active = self._active, None
        if active is not None:
            active.abandon("the connection is closed")
        if client is not None:
            client.close()

    @property
    def closed(self) -> bool:
        return self._client is None

    @property
    def uses_shm(self) -> bool:
        """Whether large batches travel through a shared-memory segment (a local connection, shm on)."""
        return self._client is not None and self._client.route is not None

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        """Turning autocommit on commits an open transaction first."""
        if value and self._in_transaction:
            self.commit()
        self._autocommit = value

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """Commits when the block succeeded, rolls back when it raised, then closes."""
        try:
            if not self.closed:
                if exc_type is None:
                    self.commit()
                else:
                    self.rollback()
        finally:
            self.close()

    # -- conveniences beyond PEP 249 ------------------------------------------------------

    def execute(self, sql: str, parameters: Any = None) -> Cursor:
        """A new cursor that has run ``sql``."""
        return self.cursor().execute(sql, parameters)

    def insert_arrow(
        self,
        table: str,
        data: Any,
        mode: str | sp.InsertMode = "append",
        *,
        schema_name: str | None = None,
        catalog: str | None = None,
    ) -> int:
        """Inserts Arrow data (Table, RecordBatch, RecordBatchReader) into ``table``; returns the rows.

        All or nothing: the rows become visible together at the commit (this call's, or the
        transaction's when autocommit is off). ``mode``: ``append`` (the table exists), ``create``,
        ``create_append`` or ``replace`` (the table is made from the data's schema).
        """
        try:
            mode = sp.InsertMode.parse(mode)
        except ValueError as exc:
            raise ProgrammingError(str(exc)) from None
        schema, batches = inserting.arrow_source(data)
        for name in (table, schema_name, catalog):
            if name is not None and len(name.encode()) > sp.IDENTIFIER_BYTES_MAX:
                raise ProgrammingError(f"identifier longer than {sp.IDENTIFIER_BYTES_MAX} bytes: {name[:40]}...")
        encoded = schema.serialize().to_pybytes()
        if len(schema) > sp.SCHEMA_FIELDS_MAX or len(encoded) > sp.SCHEMA_BYTES_MAX:
            raise ProgrammingError(
                f"a schema of {len(schema)} columns in {len(encoded)} bytes exceeds the limits of "
                f"{sp.SCHEMA_FIELDS_MAX} columns and {sp.SCHEMA_BYTES_MAX} bytes"
            )
        self._before_statement()
        call = self._guard(lambda: self._rpc().stream(sp.INSERT, table, schema_name, catalog, encoded, mode.value))
        return self._guard(lambda: inserting.send(call, schema, inserting.bounded(batches)))

    def tables(self, catalog: str | None = None, schema_name: str | None = None) -> pa.Table:
        """Tables and views, one row each (columns: ``server_protocol.TABLES_SCHEMA``)."""
        self._release_wire()
        call = self._guard(lambda: self._rpc().stream(sp.TABLES, catalog, schema_name))
        return QueryResult(call, self._guard).table()

    def table_schema(self, table: str, schema_name: str | None = None, catalog: str | None = None) -> pa.Schema:
        """The Arrow schema of ``table``."""
        self._release_wire()
        encoded = self._guard(lambda: self._rpc().call(sp.TABLE_SCHEMA, table, schema_name, catalog))
        return pa.ipc.read_schema(pa.py_buffer(encoded))

    def cancel(self) -> bool:
        """Interrupts this connection's running statement; safe from any thread.

        A second, short-lived connection presents this session's id as its one call (the wire of
        this one is busy with the statement); it opens no session, so it needs no place among the
        server's ``max_connections``. Returns whether a running statement was interrupted; that
        statement's caller gets an :class:`OperationalError`.
        """
        other = _open_client(self.address, shm_bytes=None)
        try:
            return bool(self._guard(lambda: other.call(sp.CANCEL, self.session.session_id)))
        finally:
            other.close()

    # -- for cursors ----------------------------------------------------------------------

    def _run_execute(self, sql: str, parameters: bytes | None) -> int | None:
        control = self._before_sql(sql)
        count = self._guard(lambda: self._rpc().call(sp.EXECUTE, sql, parameters))
        self._after_sql(control)
        return None if count is None else int(count)

    def _run_query(self, sql: str, parameters: bytes | None) -> QueryResult:
        control = self._before_sql(sql)
        call = self._guard(lambda: self._rpc().stream(sp.QUERY, sql, parameters, self.batch_rows))
        result = QueryResult(call, self._guard)
        self._after_sql(control)
        if result.open:
            self._active = result
        return result

    def _guard(self, action: Callable[[], T]) -> T:
        """Runs one step on the wire, turning its failures into DB-API errors."""
        try:
            return action()
        except RpcError as exc:
            raise from_rpc(exc) from None
        except Malformed as exc:
            if exc.recoverable:  # the call ended cleanly (rpc/client.py): the connection lives on
                raise refused_reply(exc) from exc
            self.close()
            raise connection_lost(str(self.address), exc) from exc
        except (WireError, OSError) as exc:
            self.close()
            raise connection_lost(str(self.address), exc) from exc

    # -- internals ------------------------------------------------------------------------

    def _open(self) -> Client[Any]:
        return _open_client(self.address, shm_bytes=self._shm_bytes if self._shm else None)

    def _rpc(self) -> Client[Any]:
        self._check_open()
        assert self._client is not None
        return self._client

    def _check_open(self) -> None:
        if self._client is None:
            raise InterfaceError("the connection is closed")

    def _release_wire(self) -> None:
        """Discards an unfinished result so the next call can use the wire."""
        active, self._active = self._active, None
        if active is not None and active.open:
            active.discard("another statement ran on this connection before it was read to the end")

    def _before_statement(self) -> None:
        self._release_wire()
        if not self._autocommit and not self._in_transaction:
            self._guard(lambda: self._rpc().call(sp.EXECUTE, "BEGIN", None))
            self._in_transaction = True

    def _before_sql(self, sql: str) -> bool | None:
        control = transaction_control(sql)
        if control is None:
            self._before_statement()
        else:
            self._release_wire()
        return control

    def _after_sql(self, control: bool | None) -> None:
        if control is not None:
            self._in_transaction = control

    def _end_transaction(self, sql: str) -> None:
        self._release_wire()
        self._in_transaction = False  # DuckDB ends the transaction even when COMMIT fails
        self._guard(lambda: self._rpc().call(sp.EXECUTE, sql, None))


def _open_client(address: sp.Address, *, shm_bytes: int | None) -> Client[Any]:
    """A client of ``quiver.server`` on a new connection, before any call.

    Large batches go through shared memory in segments of ``shm_bytes``, or never when it is None.
    """
    try:
        if address.path is not None:
            transport = connect_unix(address.path)
        else:
            assert address.host is not None
            transport = connect_tcp(address.host, address.port)
    except OSError as exc:
        raise OperationalError(f"cannot connect to {address}: {exc}", error_type="ConnectionRefused") from exc
    config = ShmConfig.from_env()
    config = replace(config, disabled=True) if shm_bytes is None else replace(config, segment_size_bytes=shm_bytes)
    return Client(sp.QuiverServer, transport, shm=config)
