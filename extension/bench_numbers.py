"""quiver_numbers(n) (Rust → Arrow C stream → DuckDB's Arrow scan) against DuckDB's own range(n).

Usage: .venv/bin/python extension/bench_numbers.py [ROWS] [RUNS]
Prints median [min–max] seconds and Mrows/s over RUNS measured runs after one warm-up, for
`SELECT sum(...)` over each source: the ratio is the claim, absolute numbers depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]


def measure(con: duckdb.DuckDBPyConnection, sql: str, runs: int) -> list[float]:
    con.execute(sql).fetchall()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    # The bench flavour (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh): the product lacks quiver_numbers.
    con.execute(f"LOAD '{ROOT / 'target' / 'extension' / 'bench' / 'quiver.duckdb_extension'}'")
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"sum over {rows:,} rows, {threads} DuckDB threads, {runs} runs after 1 warm-up")
    cases = {
        "quiver_numbers": f"SELECT sum(n) FROM quiver_numbers({rows})",
        "range (DuckDB)": f"SELECT sum(range) FROM range({rows})",
    }
    medians = {}
    for name, sql in cases.items():
        times = measure(con, sql, runs)
        medians[name] = statistics.median(times)
        print(
            f"  {name:<16} {medians[name]:.3f} s [{min(times):.3f}–{max(times):.3f}]"
            f"  {rows / medians[name] / 1e6:,.0f} Mrows/s"
        )
    print(f"  ratio quiver_numbers / range: {medians['range (DuckDB)'] / medians['quiver_numbers']:.2f}x the speed")


if __name__ == "__main__":
    main()
