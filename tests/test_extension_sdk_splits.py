"""quiver's own example workers under quiver's DuckDB extension: the split-planned scan
`split_numbers(n, splits := k)` (planned, then each split redeemed on whichever connection a scan
thread holds: a process each over stdio, a session each over `launch:`) and the buffered table
function `row_count(TABLE)` (one row: the rows of the whole input, whatever the threads).
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, zombies

WORKERS = {"python": f"{sys.executable} -m quiver.vgi.allinone"}


@pytest.fixture(
    params=[(sdk, prefix, threads) for sdk in WORKERS for prefix in ("", "launch:") for threads in (1, 4)],
    ids=lambda p: f"{p[0]}-{p[1] or 'stdio:'}threads{p[2]}",
)
def con(request, extension: Path):
    sdk, prefix, threads = request.param
    connection = connect(extension, threads=str(threads))
    connection.execute(f"ATTACH '{prefix}{WORKERS[sdk]}' AS a (TYPE quiver)")
    yield connection
    connection.execute("DETACH a")
    connection.close()
    assert not children() and not zombies()


@pytest.mark.parametrize(("n", "splits"), [(100_000, 37), (10, 10), (5, 1), (2_500, 1_500)])
def test_split_numbers_returns_every_row_once(con: duckdb.DuckDBPyConnection, n: int, splits: int) -> None:
    rows = con.execute(f"SELECT n FROM a.split_numbers({n}, splits := {splits}) ORDER BY n").fetchall()
    assert [r[0] for r in rows] == list(range(n))


def test_split_numbers_under_filters_and_projection(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT count(*), sum(n) FROM a.split_numbers(50000, splits := 9) WHERE n % 3 = 0 AND n >= 1000"
    wanted = [n for n in range(1000, 50_000) if n % 3 == 0]
    assert con.execute(query).fetchone() == (len(wanted), sum(wanted))
    assert con.execute("SELECT count(*) FROM a.split_numbers(1234, splits := 5)").fetchone() == (1234,)


def test_row_count_sees_the_whole_input(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT rows FROM a.row_count((SELECT * FROM range(250000)))").fetchall() == [(250_000,)]
    assert con.execute("SELECT rows FROM a.row_count((SELECT * FROM range(0)))").fetchall() == [(0,)]
    joined = "SELECT rows FROM a.row_count((SELECT n FROM a.split_numbers(77777, splits := 13)))"
    assert con.execute(joined).fetchall() == [(77_777,)]
