"""quiver's own example workers under quiver's DuckDB extension: the split-planned scan
`split_numbers(n, splits := k)` (planned, then each split redeemed on whichever connection a scan
thread holds: a process each over stdio, a session each over `launch:`) and the buffered table
function `row_count(TABLE)` (one row: the rows of the whole input, whatever the threads).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, zombies

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release"))
WORKERS = {
    "python": f"{sys.executable} -m quiver.vgi.allinone",
    # The Rust SDK's split example (cargo build --release -p quiver-vgi --example split_numbers).
    "rust": str(BIN / "examples" / "split_numbers"),
    # The Java SDK's split example (java/build.sh).
    "java": str(ROOT / "java" / "bin" / "quiver-split-numbers-java"),
}
JAR = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"
# The SDKs whose example worker has the buffered table function row_count.
BUFFERED = ["python", "rust", "java"]


def cases(sdks: list[str]) -> list[tuple[str, str, int]]:
    return [(sdk, prefix, threads) for sdk in sdks for prefix in ("", "launch:") for threads in (1, 4)]


def case_id(case: tuple[str, str, int]) -> str:
    return f"{case[0]}-{case[1] or 'stdio:'}threads{case[2]}"


def attach(case: tuple[str, str, int], extension: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    sdk, prefix, threads = case
    if sdk == "rust" and not Path(WORKERS["rust"]).exists():
        pytest.fail(f"{WORKERS['rust']} is not built: cargo build --release -p quiver-vgi --example split_numbers")
    if sdk == "java" and not JAR.is_file():
        pytest.fail(f"the Java worker is not built ({JAR} missing); run java/build.sh")
    connection = connect(extension, threads=str(threads))
    connection.execute(f"ATTACH '{prefix}{WORKERS[sdk]}' AS a (TYPE quiver)")
    yield connection
    connection.execute("DETACH a")
    connection.close()
    assert not children() and not zombies()


@pytest.fixture(params=cases(list(WORKERS)), ids=case_id)
def con(request, extension: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    yield from attach(request.param, extension)


@pytest.fixture(params=cases(BUFFERED), ids=case_id)
def buffered(request, extension: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    yield from attach(request.param, extension)


@pytest.mark.parametrize(("n", "splits"), [(100_000, 37), (10, 10), (5, 1), (2_500, 1_500)])
def test_split_numbers_returns_every_row_once(con: duckdb.DuckDBPyConnection, n: int, splits: int) -> None:
    rows = con.execute(f"SELECT n FROM a.split_numbers({n}, splits := {splits}) ORDER BY n").fetchall()
    assert [r[0] for r in rows] == list(range(n))


def test_split_numbers_under_filters_and_projection(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT count(*), sum(n) FROM a.split_numbers(50000, splits := 9) WHERE n % 3 = 0 AND n >= 1000"
    wanted = [n for n in range(1000, 50_000) if n % 3 == 0]
    assert con.execute(query).fetchone() == (len(wanted), sum(wanted))
    assert con.execute("SELECT count(*) FROM a.split_numbers(1234, splits := 5)").fetchone() == (1234,)


def test_row_count_sees_the_whole_input(buffered: duckdb.DuckDBPyConnection) -> None:
    con = buffered
    assert con.execute("SELECT rows FROM a.row_count((SELECT * FROM range(250000)))").fetchall() == [(250_000,)]
    assert con.execute("SELECT rows FROM a.row_count((SELECT * FROM range(0)))").fetchall() == [(0,)]
    joined = "SELECT rows FROM a.row_count((SELECT n FROM a.split_numbers(77777, splits := 13)))"
    assert con.execute(joined).fetchall() == [(77_777,)]
