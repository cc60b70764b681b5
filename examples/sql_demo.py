"""`./quiver demo`: SQL in the embedded DuckDB (PyPI) calling functions that live in a worker process.

Attaches the `allinone` worker with `launch:` (one shared worker over a Unix socket), runs VGI's
three benchmark queries (scan, echo, upper_case) with shared memory off and then on, and prints
results and rows/s. Sizes are kept small enough for seconds, not minutes; `./quiver bench vgi` runs
the measured version.
"""

from __future__ import annotations

import os
import time

import quiver
from quiver.sql import example_worker

SCAN_ROWS = 200_000_000
ECHO_ROWS = 20_000_000
SCALAR_ROWS = 2_000_000
SHM_SEGMENT_BYTES = 256 << 20

QUERIES = [
    ("scan      numbers (table)", f"SELECT sum(n) FROM w.numbers({SCAN_ROWS})", SCAN_ROWS),
    (
        "round trip echo (table-in-out)",
        f"SELECT count(*) FROM w.echo((SELECT * FROM w.numbers({ECHO_ROWS})))",
        ECHO_ROWS,
    ),
    (
        "scalar    upper_case",
        f"SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range({SCALAR_ROWS}) t(i)",
        SCALAR_ROWS,
    ),
]


def run(shm: bool) -> None:
    if shm:
        os.environ["VGI_RPC_SHM_SIZE_BYTES"] = str(SHM_SEGMENT_BYTES)
    else:
        os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    con = quiver.connect(workers={"w": f"launch:{example_worker()}"})
    con.execute("SET threads = 2")
    print(f"\n== shared memory {'on (' + str(SHM_SEGMENT_BYTES >> 20) + ' MiB segment)' if shm else 'off (pipe)'}")
    for label, sql, rows in QUERIES:
        started = time.perf_counter()
        (value,) = con.execute(sql).fetchone()
        seconds = time.perf_counter() - started
        print(f"   {label:32s} = {value:>22,}   {seconds * 1e3:8.1f} ms   {rows / seconds / 1e6:8.1f} Mrows/s")
    con.execute("DETACH w")
    con.close()


def main() -> None:
    print("quiver demo: DuckDB 2.0.0 (PyPI) + quiver's extension + the allinone worker (Rust), attached with")
    print(f"   ATTACH 'launch:{example_worker()}' AS w (TYPE quiver)")
    con = quiver.connect(workers={"w": f"launch:{example_worker()}"})
    functions = con.execute(
        "SELECT function_name, function_type, parameters FROM duckdb_functions() "
        "WHERE database_name = 'w' ORDER BY function_name"
    ).fetchall()
    for name, kind, parameters in functions:
        print(f"   w.{name:12s} {kind:8s} {parameters}")
    print("   " + repr(con.execute("SELECT w.upper_case('straße ǆ ☃')").fetchone()[0]))
    con.close()
    for shm in (False, True):
        run(shm)
    print("\nEvery row above crossed a process boundary as Arrow IPC over the vgi-rpc wire.")


if __name__ == "__main__":
    main()
