"""The quiver server's Flight SQL listener through flightsql-dbapi (PyPI), a DB-API driver over
pyarrow.flight: parameters sent as dense unions (the driver packs every value into one), primary
keys and the XDBC type table, and `CancelFlightInfo` stopping a running statement.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from flightsql import FlightSQLClient, TableRef, connect
from flightsql.dbapi import ParameterRecordBuilder

from server_support import WAIT_SECONDS, ServerProcess, wait_until

#: A statement that runs until it is cancelled (a trillion rows to count).
ENDLESS = "SELECT count(*) AS n FROM range(1000000000000)"


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    yield process
    assert process.stop() == 0


@pytest.fixture
def client(server: ServerProcess) -> Iterator[FlightSQLClient]:
    assert server.flight_sql is not None
    host, port = server.flight_sql.removeprefix("grpc://").rsplit(":", 1)
    sql_client = FlightSQLClient(host=host, port=int(port), insecure=True, token=server.token)
    yield sql_client
    sql_client.close()


def test_parameters_sent_as_dense_unions(client: FlightSQLClient) -> None:
    assert pa.types.is_union(ParameterRecordBuilder((1,)).build_record().schema.field(0).type)
    cur = connect(client).cursor()
    cur.execute("CREATE TABLE union_params (id BIGINT, name VARCHAR, score DOUBLE, ok BOOLEAN, raw BLOB)")
    cur.executemany(
        "INSERT INTO union_params VALUES (?, ?, ?, ?, ?)",
        [(i, f"n{i}", i * 0.5, i % 2 == 0, bytes([i])) for i in range(5)],
    )
    cur.execute("SELECT name, score, ok, raw FROM union_params WHERE id = ? AND name <> ?", (3, "x"))
    assert cur.fetchall() == [["n3", 1.5, False, b"\x03"]]
    cur.execute("SELECT count(*) FROM union_params WHERE score >= ? AND ok = ?", (1.0, True))
    assert cur.fetchall() == [[2]]


def test_primary_keys_and_the_type_table(client: FlightSQLClient) -> None:
    cur = connect(client).cursor()
    cur.execute("CREATE TABLE keyed (region VARCHAR, id INTEGER, note VARCHAR, PRIMARY KEY (region, id))")
    info = client.get_primary_keys(TableRef(table="keyed"))
    keys = client.do_get(info.endpoints[0].ticket).read_all().to_pylist()
    assert [(k["table_name"], k["column_name"], k["key_sequence"], k["key_name"]) for k in keys] == [
        ("keyed", "region", 1, "keyed_region_id_pkey"),
        ("keyed", "id", 2, "keyed_region_id_pkey"),
    ]
    assert {k["catalog_name"] for k in keys} == {"memory"} and {k["db_schema_name"] for k in keys} == {"main"}
    info = client.get_primary_keys(TableRef(table="no_such_table"))
    assert client.do_get(info.endpoints[0].ticket).read_all().num_rows == 0

    info = client.get_xdbc_type_info(None)
    types = client.do_get(info.endpoints[0].ticket).read_all().to_pylist()
    by_name = {t["type_name"]: t for t in types}
    assert {"BOOLEAN", "INTEGER", "BIGINT", "DOUBLE", "DECIMAL", "VARCHAR", "DATE", "TIMESTAMP"} <= set(by_name)
    assert by_name["INTEGER"]["data_type"] == 4 and by_name["VARCHAR"]["data_type"] == 12
    assert by_name["UBIGINT"]["unsigned_attribute"] is True
    integer = 4
    info = client.get_xdbc_type_info(integer)
    narrowed = client.do_get(info.endpoints[0].ticket).read_all().to_pylist()
    assert sorted(t["type_name"] for t in narrowed) == ["INTEGER", "UINTEGER"]


def _cancel_request(info: flight.FlightInfo) -> bytes:
    """A CancelFlightInfoRequest's bytes: field 1, the FlightInfo message (pyarrow has no call for it)."""
    body = info.serialize()
    length = bytearray()
    size = len(body)
    while True:
        byte, size = size & 0x7F, size >> 7
        length.append(byte | (0x80 if size else 0))
        if not size:
            break
    return b"\x0a" + bytes(length) + body


@pytest.fixture
def interrupts() -> Iterator[list[int]]:
    """SIGINTs, recorded instead of raised: pyarrow answers a read that ended CANCELLED by simulating
    one (error.pxi's SignalStopHandler), which would stop the test run.
    """
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    yield seen
    signal.signal(signal.SIGINT, previous)


def test_cancel_flight_info_stops_a_running_statement(client: FlightSQLClient, interrupts: list[int]) -> None:
    info = client.execute(ENDLESS)
    outcome: dict[str, Any] = {}

    def read() -> None:
        try:
            outcome["table"] = client.do_get(info.endpoints[0].ticket).read_all()
        except flight.FlightError as error:
            outcome["error"] = error

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    action = flight.Action("CancelFlightInfo", _cancel_request(info))
    options = flight.FlightCallOptions(headers=client.headers)  # the driver's credentials
    answers: list[bytes] = []

    def cancelled() -> bool:
        # Not found until the server has started the read; cancelled once it has.
        try:
            answers.extend(result.body.to_pybytes() for result in client.client.do_action(action, options))
            return True
        except pa.ArrowKeyError as error:  # gRPC's NOT_FOUND, as pyarrow raises it
            assert "no statement reads this FlightInfo" in str(error), error
            return False

    wait_until(cancelled, "the statement to be cancellable")
    assert answers == [b"\x08\x01"]  # CancelFlightInfoResult { status: CANCELLED }
    reader.join(WAIT_SECONDS)
    assert not reader.is_alive(), "the cancelled statement still runs"
    assert isinstance(outcome.get("error"), flight.FlightCancelledError), outcome
    # The server serves on.
    cur = connect(client).cursor()
    cur.execute("SELECT 1 AS one")
    assert cur.fetchall() == [[1]]
