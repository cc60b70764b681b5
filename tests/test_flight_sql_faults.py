"""The Flight SQL front door under faults and limits, driven by ADBC: a client killed mid-ingest, the stop
while a result streams, max_connections, a result message over the message limit, an abandoned call, a
reader that stalls.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pytest

from flight_sql_support import connect, count, flight_sql_server, readings, refusal
from server_support import WAIT_SECONDS, ServerProcess, wait_until


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    yield from flight_sql_server(extension)


INGEST_UNTIL_KILLED = """
import sys, time
import pyarrow as pa
import adbc_driver_flightsql.dbapi as flightsql

uri, token = sys.argv[1], sys.argv[2]
schema = pa.schema([("id", pa.int64()), ("value", pa.float64())])
def batches():
    for number in range(1_000_000):
        if number == 4:
            print("SENT", flush=True)  # three batches went out before the fourth was asked for
        if number >= 4:
            time.sleep(600)
        ids = pa.array(range(number * 10_000, (number + 1) * 10_000), pa.int64())
        yield pa.record_batch([ids, pa.compute.multiply(ids, 0.5)], schema=schema)

db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {token}"}
with flightsql.connect(uri, db_kwargs=db_kwargs, autocommit=True) as conn, conn.cursor() as cur:
    cur.adbc_ingest("killed", pa.RecordBatchReader.from_batches(schema, batches()), mode="append")
"""


def test_a_client_killed_mid_ingest_leaves_no_rows(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE killed (id BIGINT, value DOUBLE)")
        client = subprocess.Popen(
            [sys.executable, "-c", INGEST_UNTIL_KILLED, server.flight_sql, server.token],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert client.stdout is not None and client.stdout.readline().strip() == "SENT"
        finally:
            client.kill()
            client.wait(timeout=WAIT_SECONDS)

        # The killed ingest's rows never show; once it has rolled back, an append goes through.
        def appended() -> bool:
            try:
                return cur.adbc_ingest("killed", readings(0, 1), mode="append") == 1
            except adbc_driver_manager.Error:
                return False

        wait_until(appended, "an append after the killed ingest")
        assert count(cur, "killed") == 1


# The cursor's finalizer closes it once more after the server is gone, which ADBC reports as unraisable.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_stop_while_a_result_streams(extension: Path) -> None:
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {process.token}"}
    conn = flightsql.connect(process.flight_sql, db_kwargs=db_kwargs)
    cur = conn.cursor()
    try:
        cur.execute("SELECT range AS n FROM range(10000000000)")
        reader = cur.fetch_record_batch()
        assert reader.read_next_batch().num_rows > 0
        process.process.terminate()
        with pytest.raises(Exception):  # noqa: B017 - the driver's error class depends on where the stream breaks
            while True:
                reader.read_next_batch()
        assert process.stop() == 0
    finally:
        process.kill()
        # Closing a client whose server is gone fails too; that is not what this test checks.
        for closeable in (cur, conn):
            with contextlib.suppress(adbc_driver_manager.Error, RuntimeError):
                closeable.close()


def test_sessions_are_bounded_by_max_connections(extension: Path) -> None:
    process = ServerProcess(
        "--listen", "grpc://127.0.0.1:0", "--max-connections", "1", env={"QUIVER_EXTENSION": str(extension)}
    )
    try:
        with connect(process) as holder, holder.cursor() as cur:
            cur.execute("SELECT 1")  # the open transaction holds the one session
            assert cur.fetchone() == (1,)
            message = refusal(process.flight_sql, {"adbc.flight.sql.authorization_header": f"Bearer {process.token}"})
            assert "max_connections" in message
            holder.rollback()
        with connect(process, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT 2")
            assert cur.fetchone() == (2,)
        # A client that closes inside a transaction that ran a statement (ADBC does not end it):
        # the transaction ends with the client's connection, and its session is free again.
        with connect(process) as closer, closer.cursor() as cur:
            cur.execute("SELECT 3")
            assert cur.fetchone() == (3,)

        def served() -> bool:
            try:
                with connect(process, autocommit=True) as conn, conn.cursor() as cur:
                    cur.execute("SELECT 4")
                    return cur.fetchone() == (4,)
            except adbc_driver_manager.Error as error:
                assert "max_connections" in str(error)
                return False

        wait_until(served, "the closed client's session to end")
    finally:
        assert process.stop() == 0


def test_a_result_message_over_the_message_limit_ends_its_stream_by_name(extension: Path) -> None:
    # A result batch of 2^17 rows of two BIGINT columns is a 2 MiB message, over a 1 MiB limit: the
    # stream ends with the limit named (its headers already went out), and the server serves on.
    limit = 1 << 20
    process = ServerProcess(
        "--listen",
        "grpc://127.0.0.1:0",
        "--max-message-bytes",
        str(limit),
        env={"QUIVER_EXTENSION": str(extension)},
    )
    try:
        with connect(process, autocommit=True) as conn, conn.cursor() as cur:
            with pytest.raises(adbc_driver_manager.Error) as refused:
                cur.execute("SELECT range AS n, range * 2 AS twice FROM range(300000)")
                cur.fetch_arrow_table()
            assert f"exceeds the limit of {limit} bytes" in str(refused.value)
            cur.execute("SELECT range AS n FROM range(1000)")
            assert cur.fetch_arrow_table().num_rows == 1000
    finally:
        assert process.stop() == 0


def test_a_call_the_client_abandons_stops_its_statement(extension: Path) -> None:
    process = ServerProcess(
        "--listen", "grpc://127.0.0.1:0", "--max-connections", "1", env={"QUIVER_EXTENSION": str(extension)}
    )
    try:
        # The client gives up after a second; without the interrupt this statement would hold the
        # one session for many minutes.
        timeout = {"adbc.flight.sql.rpc.timeout_seconds.query": "1"}
        with (
            connect(process, autocommit=True, conn_kwargs=timeout) as conn,
            conn.cursor() as cur,
            pytest.raises(adbc_driver_manager.Error),
        ):
            cur.execute("CREATE TABLE never AS SELECT count(*) AS n FROM range(1000000000000)")

        def served() -> bool:
            try:
                with connect(process, autocommit=True) as conn, conn.cursor() as cur:
                    cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'never'")
                    return cur.fetchone() == (0,)
            except adbc_driver_manager.Error as error:
                assert "max_connections" in str(error)
                return False

        wait_until(served, "the abandoned statement to stop")
    finally:
        assert process.stop() == 0


def test_a_slow_reader_holds_the_server_to_bounded_memory(extension: Path) -> None:
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    try:
        before = process.rss_bytes()
        with connect(process, autocommit=True) as conn, conn.cursor() as cur:
            # 16 GB of result; the client reads a few batches and then waits.
            cur.execute("SELECT range AS a, range * 2 AS b FROM range(1000000000)")
            reader = cur.fetch_record_batch()
            for _ in range(20):
                reader.read_next_batch()
            time.sleep(1)  # time for a producer that did not wait for the reader to run ahead
            grown = process.rss_bytes() - before
            assert grown < 512 << 20, f"the server grew by {grown >> 20} MiB for a stalled reader"
    finally:
        assert process.stop() == 0
