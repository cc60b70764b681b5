"""What the Flight SQL tests share: a server with a gRPC listener, an ADBC connection to it, the
refusal a client gets, and small table helpers.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.compute
import pytest

from server_support import ServerProcess


def flight_sql_server(extension: Path) -> Iterator[ServerProcess]:
    """A server with one gRPC listener and a generated token, stopped (exit 0 asserted) at the end."""
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    assert process.flight_sql is not None and process.flight_sql.startswith("grpc://127.0.0.1:")
    assert process.token is not None
    yield process
    assert process.stop() == 0


def connect(server: ServerProcess, **options: Any) -> Any:
    """An ADBC DB-API connection with the server's token as a bearer header."""
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {server.token}"}
    return flightsql.connect(server.flight_sql, db_kwargs=db_kwargs, **options)


def refusal(uri: str, db_kwargs: dict[str, str] | None = None) -> str:
    """The error a client gets running a statement with these options (the test fails if none)."""
    with warnings.catch_warnings():
        # ADBC warns that it could not turn autocommit off: the server refused it too.
        warnings.simplefilter("ignore")
        with (
            pytest.raises(adbc_driver_manager.Error) as raised,
            flightsql.connect(uri, db_kwargs=db_kwargs or {}) as conn,
            conn.cursor() as cur,
        ):
            cur.execute("SELECT 1")
    return str(raised.value)


def readings(start: int, rows: int) -> pa.Table:
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table({"id": ids, "value": pa.compute.multiply(ids, 0.5)})


def count(cur: Any, table: str) -> int:
    cur.execute(f"SELECT count(*) FROM {table}")
    return cur.fetchone()[0]
