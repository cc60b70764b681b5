"""Faults seen from the client: a cancelled statement, a server that dies, a closed connection."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import quiver
from quiver import client as dbapi

from .server_client_support import start_server

WAIT_SECONDS_MAX = 30.0
# A statement that runs for minutes unless interrupted.
ENDLESS = "SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3"


def test_cancel_from_another_thread_interrupts_the_running_statement(tmp_path: Path) -> None:
    server = start_server(tmp_path, unix=True)
    try:
        conn = quiver.connect(server.unix, autocommit=True)
        failures: list[BaseException] = []

        def run() -> None:
            try:
                conn.execute(ENDLESS)
            except BaseException as exc:  # the assertion below reads it
                failures.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + WAIT_SECONDS_MAX
        # The statement may not have started when the first cancel arrives: ask until it stops.
        while worker.is_alive() and time.monotonic() < deadline:
            conn.cancel()
            worker.join(0.2)
        assert not worker.is_alive(), "cancel did not stop the statement"
        assert len(failures) == 1 and isinstance(failures[0], dbapi.OperationalError), failures
        assert conn.execute("SELECT 5").fetchone() == (5,), "the connection lives after a cancel"
        conn.close()
    finally:
        server.stop()


def test_a_dead_server_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    server = start_server(tmp_path, unix=True)
    conn = quiver.connect(server.unix, autocommit=True)
    assert conn.execute("SELECT 1").fetchone() == (1,)
    server.process.kill()
    server.stop()
    with pytest.raises(dbapi.OperationalError, match="lost"):
        conn.execute("SELECT 2")
    assert conn.closed
    with pytest.raises(dbapi.InterfaceError, match="closed"):
        conn.cursor()
    with pytest.raises(dbapi.OperationalError, match="cannot connect"):
        quiver.connect(server.unix)


def test_a_closed_connection_and_cursor_refuse_work(tmp_path: Path) -> None:
    server = start_server(tmp_path, unix=True)
    try:
        conn = quiver.connect(server.unix)
        cursor = conn.cursor()
        cursor.close()
        with pytest.raises(dbapi.InterfaceError):
            cursor.execute("SELECT 1")
        result = conn.cursor().execute("SELECT * FROM range(1000000)")
        conn.close()
        conn.close()
        with pytest.raises(dbapi.InterfaceError):
            result.fetchall()
        with pytest.raises(dbapi.InterfaceError):
            conn.execute("SELECT 1")
    finally:
        server.stop()


def test_sixteen_clients_inserting_and_querying_at_once_count_exactly(tmp_path: Path) -> None:
    server = start_server(tmp_path, unix=True)
    clients, batches, rows = 16, 10, 1000
    try:
        with quiver.connect(server.unix, autocommit=True) as setup:
            setup.execute("CREATE TABLE shared (client INTEGER, n INTEGER)")
        failures: list[BaseException] = []

        def work(client: int) -> None:
            try:
                with quiver.connect(server.unix, autocommit=True) as conn:
                    for _ in range(batches):
                        batch = pa.table({"client": [client] * rows, "n": list(range(rows))})
                        conn.insert_arrow("shared", batch)
                        seen = conn.execute("SELECT count(*) FROM shared WHERE client = ?", [client]).fetchone()
                        assert seen is not None and seen[0] % rows == 0, seen
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(client,)) for client in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_SECONDS_MAX * 4)
        assert not any(thread.is_alive() for thread in threads), "a client hung"
        assert failures == []
        with quiver.connect(server.unix) as conn:
            counts = conn.execute("SELECT client, count(*) FROM shared GROUP BY client ORDER BY client").fetchall()
        assert counts == [(client, batches * rows) for client in range(clients)]
    finally:
        server.stop()
