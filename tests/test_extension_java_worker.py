"""The Java SDK's AllInOne worker (java/bin/quiver-allinone-java) attached by the DuckDB extension:
the same three functions as the Rust example, over stdio and launch:, shared memory off (JDK 17)
and on (Temurin 25, where the worker maps the segment through java.lang.foreign).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import quiver
from extension_support import zombies

ROOT = Path(__file__).resolve().parent.parent
JAVA_WORKER = str(ROOT / "java" / "bin" / "quiver-allinone-java")
JDK22 = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")


@pytest.fixture()
def built(extension: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (ROOT / "java" / "target" / "quiver-java-0.1.0.jar").is_file():
        pytest.fail("the Java worker is not built; run java/build.sh or ./quiver test")
    monkeypatch.setenv("QUIVER_EXTENSION", str(extension))
    return extension


@pytest.mark.parametrize("location", [JAVA_WORKER, f"launch:{JAVA_WORKER}"])
@pytest.mark.parametrize("shm", [False, True])
def test_java_allinone_under_duckdb(built: Path, location: str, shm: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if shm:
        if not Path(JDK22).is_file():
            pytest.fail(f"no JDK 22+ at {JDK22} (QUIVER_JAVA_ALT) for the shared-memory run")
        monkeypatch.setenv("QUIVER_JAVA", JDK22)
        monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    else:
        monkeypatch.delenv("QUIVER_JAVA", raising=False)
        monkeypatch.delenv("VGI_RPC_SHM_SIZE_BYTES", raising=False)
    con = quiver.connect(workers={"j": location})
    functions = con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE database_name = 'j' ORDER BY 1"
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
    assert con.execute(f"SELECT sum(n), count(*) FROM j.numbers({n})").fetchone() == (n * (n - 1) // 2, n)
    assert con.execute("SELECT count(*) FROM j.numbers(100000) WHERE n < 10 OR n IN (500, 7)").fetchone() == (11,)
    echoed = con.execute("SELECT sum(n), count(*) FROM j.echo((SELECT * FROM j.numbers(500000)))").fetchone()
    assert echoed == (500_000 * 499_999 // 2, 500_000)
    assert con.execute("SELECT j.upper_case('héllo wörld'), j.upper_case(NULL)").fetchone() == ("HÉLLO WÖRLD", None)
    total = con.execute("SELECT sum(length(j.upper_case(i::VARCHAR))) FROM range(100000) t(i)").fetchone()
    assert total == (488_890,)
    con.execute("DETACH j")
    con.close()
    assert not zombies()
