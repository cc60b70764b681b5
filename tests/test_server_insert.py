"""The server's insert pipeline: a call's batches are acknowledged once queued and appended by one
INSERT statement on DuckDB's threads (crates/quiver-server/src/insert.rs, insert_queue.rs). These
tests hold it to the guarantees of a call: the stream's order, all or nothing when a batch in the
middle fails, nothing left by a client killed with batches in flight, a session that serves on.
Every wait is a bounded poll.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from quiver.rpc.client import RpcError
from server_support import (
    COMMIT,
    ROOT,
    WAIT_SECONDS,
    ServerProcess,
    query_table,
    schema_message,
    wait_until,
)

BATCH_ROWS = 50_000
BATCHES = 24


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    socket = tmp_path_factory.mktemp("server") / "q.sock"
    process = ServerProcess(
        "--listen", "tcp://127.0.0.1:0", "--listen", f"unix://{socket}", env={"QUIVER_EXTENSION": str(extension)}
    )
    yield process
    assert process.stop() == 0


def ids(start: int, rows: int, *, null_at: int | None = None) -> pa.RecordBatch:
    values = [None if i == null_at else i for i in range(start, start + rows)]
    return pa.record_batch({"id": pa.array(values, pa.int32()), "v": pa.array([1.0] * rows)})


def count(client, table: str) -> int:
    return query_table(client, f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()


def insert_all(client, table: str, batches: list[pa.RecordBatch], mode: str) -> int:
    rows = 0
    with client.stream("insert", table, None, None, schema_message(batches[0].schema), mode) as call:
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            rows = call.exchange(batch, COMMIT if last else None).batch.column(0)[0].as_py()
    return rows


def test_many_batches_keep_their_order_and_scan_back(server: ServerProcess) -> None:
    client = server.client(unix=True)
    batches = [ids(b * BATCH_ROWS, BATCH_ROWS) for b in range(BATCHES)]
    # "create": the table is new in the call's transaction, then filled by the parallel INSERT.
    assert insert_all(client, "ordered", batches, "create") == BATCHES * BATCH_ROWS
    scanned = query_table(client, "SELECT id FROM ordered").column("id").to_pylist()
    assert scanned == list(range(BATCHES * BATCH_ROWS))
    client.close()


def test_a_failing_middle_batch_is_reported_and_the_whole_call_rolled_back(server: ServerProcess) -> None:
    client = server.client(unix=True)
    client.call("execute", "CREATE TABLE strict (id INTEGER NOT NULL, v DOUBLE)")
    batches = [ids(b * BATCH_ROWS, BATCH_ROWS) for b in range(BATCHES)]
    middle = BATCHES // 2
    batches[middle] = ids(middle * BATCH_ROWS, BATCH_ROWS, null_at=middle * BATCH_ROWS + 7)
    # The statement's error reaches the client at a later acknowledgement or at the commit.
    with pytest.raises(RpcError) as error:
        insert_all(client, "strict", batches, "append")
    assert "NOT NULL" in error.value.error_message, error.value.error_message
    assert count(client, "strict") == 0
    # The session serves on, and the table takes a clean call.
    assert insert_all(client, "strict", [ids(0, 10)], "append") == 10
    assert count(client, "strict") == 10
    client.close()


def test_a_call_ended_without_its_commit_marker_appends_nothing(server: ServerProcess) -> None:
    client = server.client(unix=True)
    client.call("execute", "CREATE TABLE abandoned (id INTEGER, v DOUBLE)")
    with client.stream("insert", "abandoned", None, None, schema_message(ids(0, 1).schema), "append") as call:
        for b in range(BATCHES):
            assert call.exchange(ids(b * BATCH_ROWS, BATCH_ROWS)).batch.column(0)[0].as_py() == (b + 1) * BATCH_ROWS
    assert count(client, "abandoned") == 0
    assert insert_all(client, "abandoned", [ids(0, 5)], "append") == 5
    client.close()


KILLED_WITH_BATCHES_IN_FLIGHT = """
import sys
import pyarrow as pa
sys.path.insert(0, {tests!r})
from server_support import QuiverServer, schema_message
from quiver.rpc.client import Client
from quiver.transport.socket import connect_tcp
client = Client(QuiverServer, connect_tcp("127.0.0.1", {port}))
client.call("connect", token={token!r})
batch = pa.record_batch({{"id": pa.array(range({rows}), pa.int32())}})
call = client.stream("insert", "inflight", None, None, schema_message(batch.schema), "append")
for _ in range({batches}):
    call.exchange(batch)
print("SENT", flush=True)
sys.stdin.read()
"""


def test_a_client_killed_with_batches_in_flight_leaves_no_rows(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE inflight (id INTEGER)")
    script = KILLED_WITH_BATCHES_IN_FLIGHT.format(
        tests=str(ROOT / "tests"), port=server.port, token=server.token, rows=BATCH_ROWS, batches=BATCHES
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    inserter = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment
    )
    assert inserter.stdout is not None and inserter.stdout.readline().strip() == "SENT"
    inserter.kill()
    inserter.wait(WAIT_SECONDS)
    # The killed call's statement ends (its queue abandoned) and the table takes the next call.
    assert insert_all(client, "inflight", [pa.record_batch({"id": pa.array([1, 2, 3], pa.int32())})], "append") == 3
    wait_until(lambda: count(client, "inflight") == 3, "only the surviving call's rows")
    client.close()
