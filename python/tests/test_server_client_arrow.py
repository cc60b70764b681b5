"""Arrow in and out of a quiver server: lazy results in bounded memory, all-or-nothing inserts, shm."""

from __future__ import annotations

import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import quiver
from quiver import client as dbapi

from .server_client_support import REPO, RunningServer, client_env, start_server

ROWS_LARGE = 3_000_000
CHILD_SECONDS_MAX = 120


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("server"), unix=True)
    yield running
    running.stop()


@pytest.fixture
def conn(server: RunningServer) -> Iterator[dbapi.Connection]:
    connection = quiver.connect(server.unix, autocommit=True)
    yield connection
    connection.close()


def name() -> str:
    return "t_" + secrets.token_hex(6)


def measurements(rows: int, start: int = 0) -> pa.Table:
    """Rows shaped like the benchmark's: id, sensor_id, value, timestamp."""
    ids = pa.array(range(start, start + rows), pa.int32())
    return pa.table(
        {
            "id": ids,
            "sensor_id": pc.cast(pc.bit_wise_and(ids, 15), pa.int32()),
            "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
            "timestamp": pc.cast(ids, pa.int64()),
        }
    )


def test_fetch_arrow_table_over_millions_of_rows(conn: dbapi.Connection) -> None:
    table = conn.execute(f"SELECT range AS x, range * 2 AS y FROM range({ROWS_LARGE})").fetch_arrow_table()
    assert table.num_rows == ROWS_LARGE
    assert table.schema.names == ["x", "y"]
    assert pc.sum(table["x"]).as_py() == ROWS_LARGE * (ROWS_LARGE - 1) // 2


def test_fetch_record_batch_reads_lazily(conn: dbapi.Connection) -> None:
    cursor = conn.execute(f"SELECT range AS x FROM range({ROWS_LARGE})")
    reader = cursor.fetch_record_batch()
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema.names == ["x"]
    first = reader.read_next_batch()
    assert 0 < first.num_rows < ROWS_LARGE, "the first read holds one batch, not the result"
    total = first.num_rows + sum(batch.num_rows for batch in reader)
    assert total == ROWS_LARGE


def test_fetchone_then_arrow_continue_where_rows_stopped(conn: dbapi.Connection) -> None:
    cursor = conn.execute("SELECT range AS x FROM range(10)")
    assert cursor.fetchmany(3) == [(0,), (1,), (2,)]
    assert cursor.fetch_arrow_table()["x"].to_pylist() == list(range(3, 10))


def test_a_lazy_reader_keeps_the_client_in_bounded_memory(server: RunningServer) -> None:
    """10M rows x 3 BIGINT (240 MB) read batch by batch: the child's peak RSS grows far less.

    Without shared memory, so every batch is copied into the child's own memory (zero-copy batches
    over the segment would not show in its RSS until touched); each batch is summed, so it is read.
    """
    script = textwrap.dedent(
        f"""
        import resource, quiver, pyarrow.compute as pc
        conn = quiver.connect({server.unix!r}, shm=False)
        conn.execute("SELECT 1").fetchall()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        reader = conn.execute("SELECT range AS a, range AS b, range AS c FROM range(10000000)").fetch_record_batch()
        rows = 0
        for batch in reader:
            assert pc.sum(batch.column(2)).as_py() >= 0
            rows += batch.num_rows
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(rows, (after - before) * 1024)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=client_env(),
        cwd=REPO,
        timeout=CHILD_SECONDS_MAX,
        check=True,
    )
    rows, growth_bytes = (int(word) for word in done.stdout.split())
    assert rows == 10_000_000
    assert growth_bytes < 120 << 20, f"peak RSS grew by {growth_bytes >> 20} MiB reading 240 MB lazily"


@pytest.mark.parametrize("shm", [True, False])
def test_large_results_and_inserts_with_shm_on_and_off(server: RunningServer, shm: bool) -> None:
    with quiver.connect(server.unix, autocommit=True, shm=shm) as conn:
        table = name()
        data = measurements(1_000_000)
        assert conn.insert_arrow(table, data, mode="create") == data.num_rows
        back = conn.execute(f"SELECT * FROM {table} ORDER BY id").fetch_arrow_table()
        assert back.equals(data)
        assert conn.uses_shm is shm
        route = conn._client.route if conn._client is not None else None
        if route is not None:
            assert route.stats.inbound_shm > 0 and route.stats.outbound_shm > 0, "batches took the segment"


def test_insert_modes(conn: dbapi.Connection) -> None:
    table = name()
    assert conn.insert_arrow(table, measurements(5), mode="create") == 5
    with pytest.raises(dbapi.DatabaseError):
        conn.insert_arrow(table, measurements(5), mode="create")
    assert conn.insert_arrow(table, measurements(3, start=5).to_batches()[0]) == 3
    reader = pa.RecordBatchReader.from_batches(measurements(1).schema, measurements(4, start=8).to_batches(2))
    assert conn.insert_arrow(table, reader, mode="create_append") == 4
    assert conn.execute(f"SELECT count(*), min(id), max(id) FROM {table}").fetchone() == (12, 0, 11)
    assert conn.insert_arrow(table, measurements(2), mode="replace") == 2
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (2,)
    assert conn.table_schema(table).names == ["id", "sensor_id", "value", "timestamp"]
    assert table in conn.tables()["table_name"].to_pylist()
    assert conn.insert_arrow(table, measurements(0)) == 0
    with pytest.raises(dbapi.ProgrammingError, match="upsert"):
        conn.insert_arrow(table, measurements(1), mode="upsert")
    too_wide = pa.table({f"c{i}": [i] for i in range(5000)})
    with pytest.raises(dbapi.ProgrammingError, match="limits"):
        conn.insert_arrow(name(), too_wide, mode="create")
    assert conn.execute("SELECT 1").fetchone() == (1,), "refused before anything was sent"


def test_insert_of_the_wrong_schema_is_refused_and_the_connection_lives(conn: dbapi.Connection) -> None:
    table = name()
    conn.insert_arrow(table, measurements(3), mode="create")
    wrong = pa.table({"id": pa.array([1], pa.int32()), "no_such_column": pa.array(["x"])})
    with pytest.raises(dbapi.DatabaseError) as caught:
        conn.insert_arrow(table, wrong)
    assert "no_such_column" in str(caught.value)
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (3,)


def test_an_insert_whose_source_fails_leaves_no_rows(conn: dbapi.Connection) -> None:
    table = name()
    conn.insert_arrow(table, measurements(0), mode="create")

    def failing() -> Iterator[pa.RecordBatch]:
        yield from measurements(1000).to_batches(100)
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        conn.insert_arrow(table, pa.RecordBatchReader.from_batches(measurements(0).schema, failing()))
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


def test_a_client_killed_mid_insert_leaves_no_rows(server: RunningServer, conn: dbapi.Connection) -> None:
    table = name()
    conn.insert_arrow(table, measurements(0), mode="create")
    script = textwrap.dedent(
        f"""
        import sys, time, pyarrow as pa, quiver
        sys.path.insert(0, {str(REPO / "python")!r})
        from tests.test_server_client_arrow import measurements
        def batches():
            yield from measurements(200_000).to_batches(50_000)
            print("SENT", flush=True)
            time.sleep(600)
            yield from measurements(1).to_batches()
        conn = quiver.connect({server.unix!r}, autocommit=True)
        conn.insert_arrow({table!r}, pa.RecordBatchReader.from_batches(measurements(0).schema, batches()))
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=client_env(), cwd=REPO
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "SENT", "the child sent its batches"
    finally:
        child.kill()
        child.wait(CHILD_SECONDS_MAX)
        if child.stdout is not None:
            child.stdout.close()
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
    assert conn.insert_arrow(table, measurements(7)) == 7, "the server serves others after the kill"
