"""The server's Flight SQL front door driven by a real Flight SQL client: ADBC's DB-API
(``adbc-driver-flightsql`` over ``adbc-driver-manager``, the Go driver), against
``python -m quiver.serve --listen grpc://127.0.0.1:0`` (crates/quiver-server/src/flight_sql/).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pytest

from server_support import ServerProcess


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    assert process.flight_sql is not None and process.flight_sql.startswith("grpc://127.0.0.1:")
    assert process.token is not None
    yield process
    assert process.stop() == 0


def connect(server: ServerProcess, **options: Any) -> Any:
    """An ADBC DB-API connection with the server's token as a bearer header."""
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {server.token}"}
    return flightsql.connect(server.flight_sql, db_kwargs=db_kwargs, **options)


def test_create_insert_select(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE m1 (id INTEGER, name VARCHAR)")
        cur.execute("INSERT INTO m1 VALUES (1, 'a'), (2, 'b'), (3, NULL)")
        cur.execute("SELECT id, name FROM m1 ORDER BY id")
        assert cur.fetchall() == [(1, "a"), (2, "b"), (3, None)]
        conn.commit()


def test_a_sql_error_keeps_duckdb_message_and_the_server_serves_on(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as raised:
            cur.execute("SELECT * FROM no_such_table")
        assert "Catalog Error: Table with name no_such_table does not exist" in str(raised.value)
        conn.rollback()
        cur.execute("SELECT 42 AS answer")
        assert cur.fetchall() == [(42,)]


def test_a_wrong_token_is_refused_with_nothing_more(server: ServerProcess) -> None:
    db_kwargs = {"adbc.flight.sql.authorization_header": "Bearer wrong"}
    with (
        pytest.raises(adbc_driver_manager.Error) as raised,
        flightsql.connect(server.flight_sql, db_kwargs=db_kwargs) as conn,
        conn.cursor() as cur,
    ):
        cur.execute("SELECT 1")
    assert "authentication failed" in str(raised.value)
    assert "Bearer" not in str(raised.value)


def test_an_update_counts_its_rows(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE m2 AS SELECT range::BIGINT AS n FROM range(10)")
        statement = cur.adbc_statement
        statement.set_sql_query("UPDATE m2 SET n = n + 1 WHERE n < 5")
        assert statement.execute_update() == 5
        cur.execute("SELECT sum(n) FROM m2")
        assert cur.fetchone() == (50,)
