"""A reply the client refuses ends the call at once: a clear error, never a wait.

The connection lives on (unix and TCP). DuckDB's HUGEINT beyond 38 digits is the real case: its default Arrow form,
decimal128(38, 0), cannot hold it, and pyarrow's validation refuses the batch. The value itself comes
back with DuckDB's lossless Arrow form.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import quiver
from quiver import client as dbapi

from .server_client_support import RunningServer, start_server

HUGEINT_MAX = 2**127 - 1
TOKEN = "refused-token"
#: Bound on a call that must return: generous, the machine is shared and loaded.
CALL_SECONDS_MAX = 60.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("server"), unix=True, tcp=True, token=TOKEN)
    yield running
    running.stop()


@pytest.fixture(params=["unix", "tcp"])
def conn(request: pytest.FixtureRequest, server: RunningServer) -> Iterator[dbapi.Connection]:
    address = server.unix if request.param == "unix" else server.tcp
    connection = quiver.connect(address, token=TOKEN, autocommit=True)
    yield connection
    connection.close()


def outcome(call: Callable[[], Any], connection: dbapi.Connection) -> Any:
    """What ``call`` returned or raised, run on a thread; a call still waiting at the bound fails the test."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(_capture(call)), daemon=True)
    thread.start()
    thread.join(CALL_SECONDS_MAX)
    if thread.is_alive():
        connection.close()  # releases the thread's wait
        pytest.fail(f"the call did not return within {CALL_SECONDS_MAX} s")
    return result[0]


def _capture(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        return exc


def test_a_refused_batch_is_a_data_error_and_the_connection_lives(conn: dbapi.Connection) -> None:
    sql = f"SELECT {HUGEINT_MAX}::HUGEINT AS h"
    error = outcome(lambda: conn.execute(sql).fetchall(), conn)
    assert isinstance(error, dbapi.DataError), error
    assert error.error_type == "InvalidReply"
    assert "precision" in str(error)
    assert conn.execute("SELECT 41 + 1").fetchall() == [(42,)]


def test_a_refused_batch_mid_stream_ends_the_result(conn: dbapi.Connection) -> None:
    # The bad value is in the third batch of one row each: the first two are read, then the refusal.
    sql = f"SELECT CASE WHEN range = 2 THEN {HUGEINT_MAX}::HUGEINT ELSE range END AS h FROM range(5)"
    conn.batch_rows = 1
    cursor = conn.execute(sql)
    assert cursor.fetchmany(2) == [(0,), (1,)]
    error = outcome(cursor.fetchall, conn)
    assert isinstance(error, dbapi.DataError), error
    assert conn.execute("SELECT 'still here'").fetchall() == [("still here",)]


def test_lossless_arrow_brings_the_value_back(conn: dbapi.Connection) -> None:
    conn.execute("SET arrow_lossless_conversion = true")
    row = conn.execute(
        f"SELECT {HUGEINT_MAX}::HUGEINT, -{HUGEINT_MAX}::HUGEINT - 1, {2**128 - 1}::UHUGEINT, "
        "'12:34:56.789+05:30'::TIMETZ"
    ).fetchone()
    offset = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    assert row == (HUGEINT_MAX, -(2**127), 2**128 - 1, datetime.time(12, 34, 56, 789000, tzinfo=offset))


def test_a_date_beyond_python_is_a_data_error_and_arrow_carries_it(conn: dbapi.Connection) -> None:
    sql = "SELECT '5881580-07-10'::DATE AS d"
    with pytest.raises(dbapi.DataError, match="no Python form") as caught:
        conn.execute(sql).fetchall()
    assert caught.value.error_type == "ValueOutOfRange"
    table = conn.execute(sql).fetch_arrow_table()
    assert table.column("d").type == pa.date32() and table.column("d").null_count == 0
