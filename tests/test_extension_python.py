"""The Python host helper: `con = quiver.connect()` opens DuckDB with the extension loaded, and
`python -m quiver.sql "<query>"` (what ./quiver sql runs) runs SQL from a shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import quiver
from extension_support import ROOT, children, zombies


@pytest.fixture()
def built(extension: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUIVER_EXTENSION", str(extension))
    return extension


def test_connect_loads_quiver_and_attaches_workers(built: Path, allinone: Path, tmp_path: Path) -> None:
    con = quiver.connect(workers={"w": f"launch:{allinone}"})
    assert isinstance(con, duckdb.DuckDBPyConnection)
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (499_500,)
    assert con.execute("SELECT * FROM quiver_version()").fetchone() == ("0.1.0",)
    con.close()
    assert not zombies()
    # A database file, and a worker attached later in SQL.
    con = quiver.connect(str(tmp_path / "db.duckdb"))
    con.execute(f"ATTACH '{allinone}' AS v (TYPE quiver)")
    con.execute("CREATE TABLE t AS SELECT n FROM v.numbers(10)")
    con.close()
    assert duckdb.connect(str(tmp_path / "db.duckdb")).execute("SELECT sum(n) FROM t").fetchone() == (45,)


def test_connect_still_opens_rpc_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """A protocol class first selects the RPC form (quiver.rpc.connect), as before."""
    calls = []
    monkeypatch.setattr(quiver, "_rpc_connect", lambda *a, **k: calls.append((a, k)) or "client")
    assert quiver.connect(object, "connection", shm_size=1) == "client"
    assert calls == [((object, "connection"), {"shm_size": 1})]


def test_bad_worker_fails_connect_cleanly(built: Path) -> None:
    before = children()
    with pytest.raises(duckdb.Error, match="cannot start"):
        quiver.connect(workers={"w": "/nonexistent/worker"})
    assert children() == before


def run_sql(*args: str, extension: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quiver.sql", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "QUIVER_EXTENSION": str(extension)},
    )


def test_sql_from_the_shell(extension: Path, allinone: Path) -> None:
    done = run_sql("SELECT sum(n) AS total FROM w.numbers(1000000)", extension=extension)
    assert done.returncode == 0, done.stderr
    assert "499999500000" in done.stdout and "total" in done.stdout
    done = run_sql("SELECT w2.upper_case('abc') AS u", "--attach", f"w2={allinone}", extension=extension)
    assert done.returncode == 0, done.stderr
    assert "ABC" in done.stdout
    done = run_sql("SELECT * FROM nowhere", extension=extension)
    assert done.returncode == 1 and "nowhere" in done.stderr
