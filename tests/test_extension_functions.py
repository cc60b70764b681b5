"""A worker's scalar and table-in-out functions under DuckDB: `w.upper_case(x)` and
`w.echo((SELECT ...))`, with NULLs, Unicode, many chunks, several threads, and the same transaction.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, shm_segments, zombies


@pytest.fixture(params=["stdio", "launch"])
def con(request, extension: Path, allinone: Path) -> duckdb.DuckDBPyConnection:
    connection = connect(extension, threads="2")
    prefix = "launch:" if request.param == "launch" else ""
    connection.execute(f"ATTACH '{prefix}{allinone}' AS w (TYPE quiver)")
    yield connection
    connection.close()


def test_scalar_upper_case(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT w.upper_case('hello'), w.upper_case(NULL)").fetchone() == ("HELLO", None)
    rows = con.execute(
        "SELECT w.upper_case(s) FROM (VALUES ('abc'), (NULL), ('straße'), (''), ('ǆemal ☃')) t(s)"
    ).fetchall()
    assert rows == [("ABC",), (None,), ("STRASSE",), ("",), ("ǅEMAL ☃".upper(),)]
    # Many chunks over several threads, checked against DuckDB's own upper().
    mismatches = con.execute(
        "SELECT count(*) FROM (SELECT i::VARCHAR || 'x' AS s FROM range(300000) t(i)) "
        "WHERE w.upper_case(s) IS DISTINCT FROM upper(s)"
    ).fetchone()
    assert mismatches == (0,)
    assert con.execute("SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range(1000000) t(i)").fetchone() == (
        5_888_890,
    )


def test_scalar_in_expressions_and_filters(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE words AS SELECT * FROM (VALUES ('a', 1), ('b', 2), (NULL, 3)) t(s, k)")
    assert con.execute("SELECT k FROM words WHERE w.upper_case(s) = 'B'").fetchall() == [(2,)]
    assert con.execute("SELECT w.upper_case(w.upper_case(s) || s) FROM words ORDER BY k").fetchall() == [
        ("AA",),
        ("BB",),
        (None,),
    ]


def test_table_in_out_echo(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT * FROM w.echo((SELECT 1 AS x, 'a' AS s UNION ALL SELECT 2, NULL))").fetchall() == [
        (1, "a"),
        (2, None),
    ]
    assert con.execute(
        "SELECT count(*), sum(x), count(DISTINCT s) FROM w.echo((SELECT range AS x, (range % 10)::VARCHAR AS s "
        "FROM range(1000000)))"
    ).fetchone() == (1_000_000, 499_999_500_000, 10)
    assert con.execute("SELECT count(*) FROM w.echo((SELECT * FROM range(0)))").fetchone() == (0,)
    # Chained: a table function's output through a table-in-out function.
    assert con.execute("SELECT sum(n) FROM w.echo((SELECT n FROM w.numbers(100000)))").fetchone() == (4_999_950_000,)


def test_table_in_out_sees_the_same_transaction(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("BEGIN")
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(5)")
    con.execute("INSERT INTO t VALUES (100)")
    assert con.execute("SELECT sum(x) FROM w.echo((SELECT x FROM t))").fetchone() == (110,)
    con.execute("ROLLBACK")


def test_shm_round_trip_through_echo(extension: Path, allinone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = shm_segments()
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    con = connect(extension)
    con.execute(f"ATTACH 'launch:{allinone}' AS w (TYPE quiver)")
    assert con.execute("SELECT count(*), sum(x) FROM w.echo((SELECT range AS x FROM range(2000000)))").fetchone() == (
        2_000_000,
        1_999_999_000_000,
    )
    assert con.execute(
        "SELECT count(*) FROM range(100000) t(i) WHERE w.upper_case(i::VARCHAR) = i::VARCHAR"
    ).fetchone() == (100_000,)
    con.execute("DETACH w")
    assert shm_segments() - before == set()
    assert not children() and not zombies()
