"""The Python SDK's allinone worker (quiver.vgi.allinone) attached by the DuckDB extension: the same
functions as the Rust example, over stdio and launch:, shared memory off and on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import quiver
from extension_support import zombies

PYTHON_WORKER = f"{sys.executable} -m quiver.vgi.allinone"


@pytest.fixture()
def built(extension: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUIVER_EXTENSION", str(extension))
    return extension


@pytest.mark.parametrize("location", [PYTHON_WORKER, f"launch:{PYTHON_WORKER}"])
@pytest.mark.parametrize("shm", [False, True])
def test_python_allinone_under_duckdb(built: Path, location: str, shm: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if shm:
        monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    else:
        monkeypatch.delenv("VGI_RPC_SHM_SIZE_BYTES", raising=False)
    con = quiver.connect(workers={"p": location})
    functions = con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE database_name = 'p' ORDER BY 1"
    ).fetchall()
    assert functions == [
        ("avg_double",),
        ("concat_agg",),
        ("echo",),
        ("multiply",),
        ("numbers",),
        ("row_count",),
        ("split_numbers",),
        ("sum_int",),
        ("upper_case",),
    ]
    n = 3_000_000
    assert con.execute(f"SELECT sum(n), count(*) FROM p.numbers({n})").fetchone() == (n * (n - 1) // 2, n)
    assert con.execute("SELECT count(*) FROM p.numbers(100000) WHERE n < 10 OR n IN (500, 7)").fetchone() == (11,)
    echoed = con.execute("SELECT sum(n), count(*) FROM p.echo((SELECT * FROM p.numbers(500000)))").fetchone()
    assert echoed == (500_000 * 499_999 // 2, 500_000)
    assert con.execute("SELECT p.upper_case('héllo wörld'), p.upper_case(NULL)").fetchone() == ("HÉLLO WÖRLD", None)
    total = con.execute("SELECT sum(length(p.upper_case(i::VARCHAR))) FROM range(100000) t(i)").fetchone()
    assert total == (488_890,)
    con.execute("DETACH p")
    con.close()
    assert not zombies()
