"""A worker quiver did not write — tests/vgi_oracle/third_party_worker.py, built with vgi-python
0.47.0 — under our DuckDB extension: a scalar with a constant argument, a table function with
projection pushdown, and a table-in-out function that answers in parts (HAVE_MORE_OUTPUT) and has a
FINALIZE phase. Its interpreter is the vgi venv's (Python >= 3.13).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, children, connect, zombies

WORKER = ROOT / "tests" / "vgi_oracle" / "third_party_worker.py"


@pytest.fixture(scope="module")
def vgi_python() -> Path:
    python = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))
    if not python.exists():
        pytest.fail(f"no vgi-python venv at {python}: run ./quiver test (setup.sh builds .venv-vgi)")
    return python


@pytest.fixture(params=["stdio", "launch"])
def con(request, extension: Path, vgi_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VGI_WORKER_SQLITE_PATH", str(tmp_path / "vgi-worker.sqlite"))
    connection = connect(extension, threads="2")
    prefix = "launch:" if request.param == "launch" else ""
    connection.execute(f"ATTACH '{prefix}{vgi_python} {WORKER}' AS tp (TYPE quiver)")
    yield connection
    connection.execute("DETACH tp")
    assert not children() and not zombies()


def test_catalog(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT function_name, function_type, parameters, parameter_types FROM duckdb_functions() "
        "WHERE database_name = 'tp' ORDER BY function_name"
    ).fetchall()
    assert rows == [
        ("chunked", "table", ["data"], ["TABLE"]),
        ("repeat_text", "scalar", ["s", "times"], ["VARCHAR", "BIGINT"]),
        ("squares", "table", ["n"], ["BIGINT"]),
    ]


def test_scalar_with_a_constant_argument(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT tp.repeat_text(s, 3) FROM (VALUES ('ab'), (NULL), ('x')) t(s)").fetchall()
    assert rows == [("ababab",), (None,), ("xxx",)]
    assert con.execute(
        "SELECT count(*) FROM range(5000) t(i) WHERE tp.repeat_text(i::VARCHAR, 2) = i::VARCHAR || i::VARCHAR"
    ).fetchone() == (5000,)
    with pytest.raises(duckdb.Error):
        con.execute("SELECT tp.repeat_text(s, k) FROM (VALUES ('a', 1)) t(s, k)")  # not a constant


def test_table_function_with_projection(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT count(*), sum(i), sum(sq) FROM tp.squares(10000)").fetchone() == (
        10000,
        49_995_000,
        333_283_335_000,
    )
    assert con.execute("SELECT sum(sq) FROM tp.squares(100)").fetchone() == (328_350,)
    assert con.execute("SELECT sq, i FROM tp.squares(3) ORDER BY i").fetchall() == [(0, 0), (1, 1), (4, 2)]
    assert con.execute("SELECT count(*) FROM tp.squares(2500) WHERE sq > 1000000").fetchone() == (1499,)


def test_table_in_out_in_parts_then_finalize(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT x FROM tp.chunked((SELECT range AS x FROM range(7)))").fetchall()
    assert sorted(rows) == [(-7,), (0,), (1,), (2,), (3,), (4,), (5,), (6,)]
    total, count = con.execute(
        "SELECT sum(x), count(*) FROM tp.chunked((SELECT range AS x FROM range(100)))"
    ).fetchone()
    # Every row comes back, plus one trailer row per stream holding -rows seen on that stream.
    assert total == 4950 - 100 and count in (101, 102)
