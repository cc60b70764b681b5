"""A worker's aggregate functions under DuckDB: GROUP BY, DISTINCT, FILTER, ORDER BY inside the call,
window use, NULLs, empty input and many groups, each checked against DuckDB's built-in equivalent;
a body that raises is a typed DuckDB error and the connection goes on.

The workers: quiver's own examples (sum_int, avg_double, concat_agg: the Rust `quiver-allinone` over
stdio and `launch:`, the Python `quiver.vgi.allinone`, the Java `AllInOne`) and one built with
vgi-python 0.47.0 from vgi's own aggregate fixtures (tests/vgi_oracle/aggregate_worker.py), over
stdio and `launch:`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, children, connect, zombies

VGI_WORKER = ROOT / "tests" / "vgi_oracle" / "aggregate_worker.py"

#: 20,000 rows in 1,000 groups, a NULL in every 7th x and s, one group (g = 999) of NULLs only.
DATA = """
CREATE TABLE t AS
SELECT i AS k, i % 1000 AS g,
       CASE WHEN i % 7 = 0 OR i % 1000 = 999 THEN NULL ELSE (i * 37) % 1001 - 500 END AS x,
       CASE WHEN i % 7 = 0 OR i % 1000 = 999 THEN NULL ELSE 'v' || (i % 13) END AS s
FROM range(20000) r(i)
"""


def mismatches(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple]:
    """The rows of `query` (pairs of columns: ours, DuckDB's) where a pair differs."""
    rows = con.execute(query).fetchall()
    assert rows, f"no rows from {query}"
    width = len(rows[0])
    return [row for row in rows if any(row[i] != row[i + 1] for i in range(1, width, 2))]


JAVA_WORKER = ROOT / "java" / "bin" / "quiver-allinone-java"
JAVA_JAR = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"


@pytest.fixture(params=["rust", "rust-launch", "python", "java"])
def con(request, extension: Path, allinone: Path) -> duckdb.DuckDBPyConnection:
    location = {
        "rust": str(allinone),
        "rust-launch": f"launch:{allinone}",
        "python": f"{sys.executable} -m quiver.vgi.allinone",
        "java": f"launch:{JAVA_WORKER}",
    }[request.param]
    if request.param == "java" and not JAVA_JAR.is_file():
        pytest.fail(f"the Java worker is not built ({JAVA_JAR} missing); run java/build.sh or ./quiver test")
    connection = connect(extension, threads="2")
    connection.execute(f"ATTACH '{location}' AS w (TYPE quiver)")
    connection.execute(DATA)
    yield connection
    connection.execute("DETACH w")
    connection.close()
    assert not zombies()


def test_listed_as_aggregates(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT function_name, function_type FROM duckdb_functions() WHERE database_name = 'w' "
        "AND function_type = 'aggregate' ORDER BY 1"
    ).fetchall()
    assert rows == [("avg_double", "aggregate"), ("concat_agg", "aggregate"), ("sum_int", "aggregate")]


def test_group_by_matches_duckdb(con: duckdb.DuckDBPyConnection) -> None:
    assert (
        mismatches(
            con,
            "SELECT g, w.sum_int(x), sum(x)::BIGINT, w.avg_double(x), avg(x) FROM t GROUP BY g",
        )
        == []
    )
    # The all-NULL group finalizes to NULL, like sum() and avg().
    assert con.execute("SELECT w.sum_int(x), w.avg_double(x) FROM t WHERE g = 999").fetchone() == (None, None)


def test_without_group_by_and_empty_input(con: duckdb.DuckDBPyConnection) -> None:
    assert (
        con.execute("SELECT w.sum_int(x), sum(x)::BIGINT FROM t").fetchone()
        == con.execute("SELECT sum(x)::BIGINT, sum(x)::BIGINT FROM t").fetchone()
    )
    assert con.execute("SELECT w.sum_int(x), w.avg_double(x), w.concat_agg(s, ',') FROM t WHERE k < 0").fetchone() == (
        None,
        None,
        None,
    )
    assert con.execute("SELECT g, w.sum_int(x) FROM t WHERE k < 0 GROUP BY g").fetchall() == []


def test_distinct_and_filter(con: duckdb.DuckDBPyConnection) -> None:
    assert (
        mismatches(
            con,
            "SELECT g % 10 AS h, w.sum_int(DISTINCT x), sum(DISTINCT x)::BIGINT, "
            "w.sum_int(x) FILTER (WHERE x % 2 = 0), (sum(x) FILTER (WHERE x % 2 = 0))::BIGINT, "
            "w.avg_double(DISTINCT x) FILTER (WHERE k > 100), avg(DISTINCT x) FILTER (WHERE k > 100) "
            "FROM t GROUP BY h",
        )
        == []
    )


def test_ordered_aggregate(con: duckdb.DuckDBPyConnection) -> None:
    assert (
        mismatches(
            con,
            "SELECT g, w.concat_agg(s, '|' ORDER BY k DESC), string_agg(s, '|' ORDER BY k DESC) FROM t GROUP BY g",
        )
        == []
    )
    assert con.execute("SELECT w.concat_agg(s, '-' ORDER BY s) FROM (VALUES ('b'), (NULL), ('a')) v(s)").fetchone() == (
        "a-b",
    )


def test_window_use(con: duckdb.DuckDBPyConnection) -> None:
    # DuckDB binds `w.f(x) OVER (...)` with `w` as a schema: window calls name the catalog's schema.
    assert (
        mismatches(
            con,
            "SELECT k, w.main.sum_int(x) OVER (PARTITION BY g % 20), (sum(x) OVER (PARTITION BY g % 20))::BIGINT "
            "FROM t WHERE k < 4000",
        )
        == []
    )
    assert (
        mismatches(
            con,
            "SELECT k, w.main.sum_int(x) OVER frame, (sum(x) OVER frame)::BIGINT FROM t WHERE k < 600 "
            "WINDOW frame AS (PARTITION BY g % 5 ORDER BY k ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)",
        )
        == []
    )


def test_many_groups(con: duckdb.DuckDBPyConnection) -> None:
    assert (
        mismatches(
            con,
            "SELECT i // 3 AS grp, w.sum_int(i), sum(i)::BIGINT FROM range(150000) r(i) GROUP BY grp",
        )
        == []
    )
    assert con.execute(
        "SELECT count(*) FROM (SELECT i // 3 AS grp, w.sum_int(i) FROM range(150000) r(i) GROUP BY grp)"
    ).fetchone() == (50_000,)


def test_a_body_that_raises_is_a_typed_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.InvalidInputException, match="sum_int\\(\\): BIGINT overflow"):
        con.execute("SELECT w.sum_int(x) FROM (VALUES (9223372036854775807), (1)) v(x)").fetchall()
    # The connection goes on, and so does the worker.
    assert con.execute("SELECT w.sum_int(x) FROM (VALUES (1), (2)) v(x)").fetchone() == (3,)
    assert (
        con.execute("SELECT g, w.sum_int(x) FROM t WHERE g = 1 GROUP BY g").fetchone()
        == con.execute("SELECT g, sum(x)::BIGINT FROM t WHERE g = 1 GROUP BY g").fetchone()
    )


@pytest.fixture(scope="module")
def vgi_python() -> Path:
    python = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))
    if not python.exists():
        pytest.fail(f"no vgi-python venv at {python}: run ./quiver test (setup.sh builds .venv-vgi)")
    return python


@pytest.fixture(params=["stdio", "launch"])
def vgi_con(request, extension: Path, vgi_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VGI_WORKER_SQLITE_PATH", str(tmp_path / "vgi-worker.sqlite"))
    connection = connect(extension, threads="2")
    prefix = "launch:" if request.param == "launch" else ""
    connection.execute(f"ATTACH '{prefix}{vgi_python} {VGI_WORKER}' AS v (TYPE quiver)")
    connection.execute(DATA)
    yield connection
    connection.execute("DETACH v")
    connection.close()
    assert not children() and not zombies()


def test_vgi_python_fixtures_under_quiver(vgi_con: duckdb.DuckDBPyConnection) -> None:
    assert (
        mismatches(
            vgi_con,
            "SELECT g % 50 AS h, v.vgi_sum(x), sum(x)::BIGINT, v.vgi_avg(x), avg(x), "
            "v.vgi_count(), count(*), v.vgi_sum(x) FILTER (WHERE k % 3 = 0), "
            "(sum(x) FILTER (WHERE k % 3 = 0))::BIGINT, v.vgi_listagg(s ORDER BY k), string_agg(s, ',' ORDER BY k) "
            "FROM t WHERE k < 5000 GROUP BY h",
        )
        == []
    )
    assert vgi_con.execute("SELECT v.vgi_sum(x), v.vgi_count() FROM t WHERE k < 0").fetchone() == (None, 0)
    assert (
        mismatches(
            vgi_con,
            "SELECT k, v.main.vgi_sum(x) OVER (PARTITION BY g % 4), (sum(x) OVER (PARTITION BY g % 4))::BIGINT "
            "FROM t WHERE k < 400",
        )
        == []
    )


def test_vgi_python_body_that_raises(vgi_con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.InvalidInputException, match="picky_sum refuses negative values"):
        vgi_con.execute("SELECT v.picky_sum(x) FROM (VALUES (1), (-1)) t(x)").fetchall()
    assert vgi_con.execute("SELECT v.picky_sum(x) FROM (VALUES (1), (41)) t(x)").fetchone() == (42,)
