"""The allinone worker's functions under DuckDB, shared memory off and on, beside the in-process ceiling.

The ceiling is quiver_numbers: the same rows made in Rust inside DuckDB, no worker, no transport.

Usage: .venv/bin/python extension/bench_workers.py [ROWS] [RUNS]
Each case: median [min–max] seconds over RUNS measured runs after one warm-up (ATTACH discarded).
The worker is attached with launch: (one process, a connection per DuckDB thread); shared memory
is switched on by VGI_RPC_SHM_SIZE_BYTES (256 MiB) at ATTACH. A quick look, not ./quiver bench.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
# The bench flavour (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh): it has the ceiling, quiver_numbers.
EXTENSION = ROOT / "target" / "extension" / "bench" / "quiver.duckdb_extension"
WORKER = ROOT / "target" / "release" / "quiver-allinone"
SHM_BYTES = 256 << 20


def measure(con: duckdb.DuckDBPyConnection, sql: str, runs: int) -> list[float]:
    con.execute(sql).fetchall()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    return times


def report(name: str, rows: int, times: list[float]) -> None:
    median = statistics.median(times)
    print(f"  {name:<34} {median:.3f} s [{min(times):.3f}–{max(times):.3f}]  {rows / median / 1e6:,.0f} Mrows/s")


def session(shm: bool) -> duckdb.DuckDBPyConnection:
    if shm:
        os.environ["VGI_RPC_SHM_SIZE_BYTES"] = str(SHM_BYTES)
    else:
        os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{EXTENSION}'")
    con.execute(f"ATTACH 'launch:{WORKER}' AS w (TYPE quiver)")
    return con


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    strings = rows // 20
    probe = duckdb.connect()
    threads = probe.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"{threads} DuckDB threads, {runs} runs after 1 warm-up")
    ceiling = session(False)
    print(f"sum(n) over {rows:,} rows")
    report(
        "in-process ceiling (quiver_numbers)",
        rows,
        measure(ceiling, f"SELECT sum(n) FROM quiver_numbers({rows})", runs),
    )
    ceiling.close()
    for shm in (False, True):
        con = session(shm)
        label = "shm" if shm else "inline"
        report(f"w.numbers, {label}", rows, measure(con, f"SELECT sum(n) FROM w.numbers({rows})", runs))
        echo_rows = rows // 10
        report(
            f"w.echo(range), {label} ({echo_rows:,} rows)",
            echo_rows,
            measure(con, f"SELECT count(*) FROM w.echo((SELECT range FROM range({echo_rows})))", runs),
        )
        report(
            f"w.upper_case, {label} ({strings:,} rows)",
            strings,
            measure(con, f"SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range({strings}) t(i)", runs),
        )
        con.close()


if __name__ == "__main__":
    main()
