"""Split scans and buffered table functions under quiver's DuckDB extension, with vgi-python
0.47.0's own fixtures as the worker (tests/vgi_oracle/split_buffer_worker.py, in the vgi venv).

Split scans: the engine plans (`table_function_plan`, following cursors page by page), and the
scan's threads redeem the splits on their own connections (a process each for stdio, a session
each for `launch:`). Every result is checked row for row against what the query must return.
Buffered calls: the worker sees the whole input (sinks, a combine, finalize streams) before it
answers. Faults in either are typed DuckDB errors naming the worker, and the connection goes on.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, children, connect, zombies

WORKER = ROOT / "tests" / "vgi_oracle" / "split_buffer_worker.py"


@pytest.fixture(scope="module")
def vgi_python() -> Path:
    python = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))
    if not python.exists():
        pytest.fail(f"no vgi-python venv at {python}: run ./quiver test (setup.sh builds .venv-vgi)")
    return python


def attach(extension: Path, vgi_python: Path, launch: bool, threads: int) -> duckdb.DuckDBPyConnection:
    connection = connect(extension, threads=str(threads))
    prefix = "launch:" if launch else ""
    connection.execute(f"ATTACH '{prefix}{vgi_python} {WORKER}' AS sp (TYPE quiver)")
    return connection


@pytest.fixture(params=[("stdio", 1), ("stdio", 4), ("launch", 4)], ids=lambda p: f"{p[0]}-threads{p[1]}")
def con(request, extension: Path, vgi_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VGI_WORKER_SQLITE_PATH", str(tmp_path / "vgi-worker.sqlite"))
    transport, threads = request.param
    connection = attach(extension, vgi_python, transport == "launch", threads)
    yield connection
    connection.execute("DETACH sp")
    connection.close()
    assert not children() and not zombies()


def column(con: duckdb.DuckDBPyConnection, query: str) -> list:
    return [row[0] for row in con.execute(query).fetchall()]


def test_the_catalog_lists_split_and_buffered_functions_as_callable(con: duckdb.DuckDBPyConnection) -> None:
    kinds = dict(
        con.execute(
            "SELECT function_name, function_type FROM duckdb_functions() WHERE database_name = 'sp' "
            "AND function_name IN ('split_sequence', 'global_buffered')"
        ).fetchall()
    )
    assert kinds == {"split_sequence": "table", "global_buffered": "table"}


@pytest.mark.parametrize(("n", "splits"), [(10_000, 7), (1, 1), (2_500, 300)])
def test_a_split_scan_returns_every_row_once(con: duckdb.DuckDBPyConnection, n: int, splits: int) -> None:
    assert column(con, f"SELECT n FROM sp.split_sequence(n := {n}, splits := {splits}) ORDER BY n") == list(range(n))


def test_many_splits_more_than_threads(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT count(*), sum(n), count(DISTINCT n) FROM sp.split_many(n := 20000, splits := 500)"
    ).fetchone()
    assert rows == (20_000, sum(range(20_000)), 20_000)


def test_a_plan_of_no_splits_is_an_empty_result(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT count(*) FROM sp.split_zero(n := 100)").fetchone() == (0,)
    assert con.execute("SELECT * FROM sp.split_zero(n := 100)").fetchall() == []


def test_empty_splits_do_not_end_the_scan(con: duckdb.DuckDBPyConnection) -> None:
    assert column(con, "SELECT n FROM sp.split_empty_ranges(n := 3000, splits := 6) ORDER BY n") == list(range(3000))


def test_a_plan_in_several_pages_is_followed_to_its_end(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT n FROM sp.paged_sequence(n := 5000, splits := 10, per_page := 3) ORDER BY n"
    assert column(con, query) == list(range(5000))


def test_filters_and_aggregates_over_a_split_scan(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT n FROM sp.split_sequence(n := 10000, splits := 9) WHERE n % 7 = 3 AND n < 5000 ORDER BY n"
    assert column(con, query) == [n for n in range(5000) if n % 7 == 3]
    assert con.execute("SELECT max(n), min(n) FROM sp.split_sequence(n := 777, splits := 5)").fetchone() == (776, 0)


def test_a_plan_past_the_page_bound_is_refused_by_name(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIVER_VGI_PLAN_PAGES_MAX", "5")
    with pytest.raises(duckdb.IOException) as failure:
        con.execute("SELECT * FROM sp.endless_plan(n := 10)").fetchall()
    assert "planned more than 5 plan pages" in str(failure.value)
    assert "worker 'sp'" in str(failure.value)
    assert column(con, "SELECT n FROM sp.split_sequence(n := 5, splits := 2) ORDER BY n") == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("in_init", ["false", "true"])
def test_a_failing_split_is_a_typed_error_and_the_connection_goes_on(
    con: duckdb.DuckDBPyConnection, in_init: str
) -> None:
    with pytest.raises(duckdb.InvalidInputException) as failure:
        con.execute(
            f"SELECT * FROM sp.split_fail_at(n := 4000, splits := 4, fail_at := 2, fail_in_init := {in_init})"
        ).fetchall()
    assert not isinstance(failure.value, duckdb.InternalException)
    assert "split 2" in str(failure.value) and "worker 'sp'" in str(failure.value), str(failure.value)
    assert column(con, "SELECT n FROM sp.split_sequence(n := 100, splits := 3) ORDER BY n") == list(range(100))


def test_a_buffered_function_sees_its_whole_input(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT i FROM sp.global_buffered((SELECT i FROM range(50000) t(i))) ORDER BY i"
    assert column(con, query) == list(range(50_000))
    total = "SELECT * FROM sp.sum_all_columns_simple_distributed((SELECT i, i * 2 AS j FROM range(100000) t(i)))"
    assert con.execute(total).fetchall() == [(sum(range(100_000)), 2 * sum(range(100_000)))]


def test_a_buffered_function_of_an_empty_input(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT count(*) FROM sp.global_buffered((SELECT 1 AS x WHERE false))").fetchone() == (0,)


BUFFERED_FAULTS = [
    ("raise_process", duckdb.InvalidInputException, "buffered_fault refuses its input"),
    ("raise_combine", duckdb.InvalidInputException, "buffered_fault cannot combine"),
    ("raise_finalize", duckdb.InvalidInputException, "buffered_fault cannot finish"),
    # vgi-python casts what finalize emits to the bound schema itself: its failure is the worker's.
    ("wrong_type", duckdb.InvalidInputException, "Failed to parse string: 'not a number'"),
    ("die", duckdb.IOException, "closed the connection during the buffered call of buffered_fault()"),
]


@pytest.mark.parametrize(("mode", "error", "words"), BUFFERED_FAULTS, ids=[f[0] for f in BUFFERED_FAULTS])
def test_a_buffered_fault_is_a_typed_error_and_the_connection_goes_on(
    con: duckdb.DuckDBPyConnection, mode: str, error: type, words: str
) -> None:
    with pytest.raises(error) as failure:
        con.execute(f"SELECT * FROM sp.buffered_fault((SELECT * FROM range(10)), mode := '{mode}')").fetchall()
    assert not isinstance(failure.value, duckdb.InternalException)
    assert words in str(failure.value), str(failure.value)
    assert "worker 'sp'" in str(failure.value), str(failure.value)
    assert con.execute("SELECT * FROM sp.buffered_fault((SELECT 1), mode := 'ok')").fetchall() == [(1,)]
    assert column(con, "SELECT i FROM sp.global_buffered((SELECT i FROM range(3) t(i))) ORDER BY i") == [0, 1, 2]
