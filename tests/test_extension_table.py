"""A worker's table function under DuckDB: `SELECT sum(n) FROM w.numbers(N)` and friends — exact
results, the scan spread over DuckDB's threads (secondary inits), filters pushed to the worker
(and still applied by DuckDB), cardinality, early stops, and shared memory off and on.

The worker runs with --debug and QUIVER_WORKER_STDERR=1 echoes its log to our stderr, which is how
these tests see what reached it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, shm_segments, zombies

N = 3_000_000


def attach(con: duckdb.DuckDBPyConnection, location: str) -> None:
    con.execute(f"ATTACH '{location}' AS w (TYPE quiver)")


def worker_log(capfd, pattern: str, count: int, timeout_s: float = 5.0) -> str:
    """Our stderr (where the worker's log is echoed) until `pattern` occurs `count` times: the
    worker writes its log asynchronously, after it answered.
    """
    text = ""
    deadline = time.monotonic() + timeout_s
    while True:
        text += capfd.readouterr().err
        if len(re.findall(pattern, text)) >= count or time.monotonic() > deadline:
            return text


def emitted_rows(capfd, streams: int) -> int:
    return sum(map(int, re.findall(r"emitted (\d+) row", worker_log(capfd, r"emitted \d+ row", streams))))


@pytest.fixture()
def logged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIVER_WORKER_STDERR", "1")


@pytest.mark.parametrize("mode", ["stdio", "launch"])
def test_sum_is_exact_across_threads(extension: Path, allinone: Path, mode: str, logged: None, capfd) -> None:
    con = connect(extension, threads="4")
    prefix = "launch:" if mode == "launch" else ""
    attach(con, f"{prefix}{allinone} --debug --max-workers 3")
    query = f"SELECT sum(n), count(*), min(n), max(n) FROM w.numbers({N}, batch_rows := 100000)"
    for _ in range(2):
        assert con.execute(query).fetchone() == (N * (N - 1) // 2, N, 0, N - 1)
    log = worker_log(capfd, r"emitted \d+ row", 6)
    # Up to the worker's max_workers streams: the primary and two secondaries per scan.
    assert log.count("primary phase") == 2
    assert log.count("secondary init") == 4
    if mode == "stdio":
        assert len(children()) == 3, "the stdio processes of the first scan serve the second"
    con.execute("DETACH w")
    assert not children() and not zombies()


def test_filters_reach_the_worker_and_duckdb_keeps_them(extension: Path, allinone: Path, logged: None, capfd) -> None:
    con = connect(extension, threads="1")
    attach(con, f"{allinone} --debug")
    cases = {
        "n < 10": 10,
        "n >= 999990 OR n IN (5, 500)": 12,
        "n BETWEEN 100 AND 109 AND n <> 105": 9,
        "NOT (n > 5)": 6,
        "n IS NULL": 0,
    }
    for where, expected in cases.items():
        capfd.readouterr()
        assert con.execute(f"SELECT count(*) FROM w.numbers(1000000) WHERE {where}").fetchone() == (expected,), where
        assert emitted_rows(capfd, 1) == expected, where
    # A filter the worker cannot be sent (arithmetic on the column) is applied by DuckDB alone.
    capfd.readouterr()
    assert con.execute("SELECT count(*) FROM w.numbers(1000) WHERE n % 7 = 0").fetchone() == (143,)
    assert emitted_rows(capfd, 1) == 1000
    plan = con.execute("EXPLAIN SELECT count(*) FROM w.numbers(1000) WHERE n < 10").fetchone()[1]
    assert "n < 10" in plan, "DuckDB keeps its own filter above the scan"


def test_cardinality_projection_and_early_stops(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    attach(con, str(allinone))
    plan = con.execute("EXPLAIN SELECT * FROM w.numbers(12345)").fetchone()[1]
    assert "~12,345 rows" in plan, "the worker's cardinality reaches the planner"
    assert con.execute("SELECT count(*) FROM w.numbers(1000000)").fetchone() == (1_000_000,)
    assert con.execute("SELECT n FROM w.numbers(10) ORDER BY n DESC LIMIT 3").fetchall() == [(9,), (8,), (7,)]
    # LIMIT stops the scan early: the stream is cancelled and the connection reused.
    for _ in range(5):
        assert len(con.execute("SELECT n FROM w.numbers(100000000) LIMIT 5").fetchall()) == 5
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (499_500,)
    assert len(children()) <= 2
    assert con.execute("SELECT count(*) FROM w.numbers(0)").fetchone() == (0,)
    assert con.execute("DESCRIBE SELECT * FROM w.numbers(3)").fetchone()[:2] == ("n", "BIGINT")


@pytest.mark.parametrize("mode", ["stdio", "launch"])
def test_shared_memory_carries_the_batches(
    extension: Path, allinone: Path, mode: str, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    before = shm_segments()
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    monkeypatch.setenv("VGI_RPC_SHM_DEBUG", "1")
    con = connect(extension, threads="2")
    prefix = "launch:" if mode == "launch" else ""
    attach(con, f"{prefix}{allinone}")
    n = 20_000_000
    assert con.execute(f"SELECT sum(n) FROM w.numbers({n}, batch_rows := 1000000)").fetchone() == (n * (n - 1) // 2,)
    # The engine maps its segments, whose names it removed once the worker had attached.
    own = f"psm_{os.getpid()}_"  # names carry the owner pid; other processes may share /dev/shm
    assert f"/dev/shm/{own}" in Path("/proc/self/maps").read_text(), "the engine created its segments"
    named = {path.name for path in Path("/dev/shm").glob(own + "*")}
    assert named - before == set(), "their names are gone while the connections live"
    con.execute("DETACH w")
    log = capfd.readouterr().err
    assert "(zero-copy)" in log, "batches are read in place from the segment"
    assert re.search(r"outbound shm=[1-9]\d*/", log), "the worker wrote batches into the segment"
    assert {name for name in shm_segments() - before if name.startswith(own)} == set(), "none is left after DETACH"


def test_shared_memory_disable_switch(extension: Path, allinone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = shm_segments()
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    monkeypatch.setenv("VGI_RPC_SHM_DISABLE", "1")
    con = connect(extension)
    attach(con, str(allinone))
    assert con.execute("SELECT sum(n) FROM w.numbers(1000000)").fetchone() == (499_999_500_000,)
    assert shm_segments() - before == set()
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", "64MiB")
    with pytest.raises(duckdb.Error, match="VGI_RPC_SHM_SIZE_BYTES"):
        con.execute(f"ATTACH '{allinone}' AS bad (TYPE quiver)")
