"""VGI's own benchmark workloads (Query-farm/vgi-benchmarks: `scalar_multiply`, `scalar_upper_case`),
run the way that suite runs them, beside what a DuckDB user would use instead of a worker.

Each workload is a setup statement (a TEMP table of ROWS rows) and one query with the worker's
scalar in it, run against the Rust, Python and Java example workers, each over `launch:` with
shared memory off (inline pipe) and on, at `SET threads = 1` and `2`; in the same run, DuckDB's
in-process Python Arrow UDF doing the same work (`create_function(..., type='arrow')`) and native
SQL. Every query's answer is checked against the known one.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from typing import Any

ROWS = 10_000_000
PAYLOAD_BYTES = 256
THREAD_COUNTS = (1, 2)
# The targets: each a same-run ratio at 2 threads, the worker at its best transport.
TARGETS = {
    "multiply_rust_worker_vs_python_arrow_udf": 1.5,
    "multiply_python_worker_vs_python_arrow_udf": 1.0,
    "upper_case_256_rust_worker_vs_duckdb_upper": 0.8,
}
# VGI's published figures (Query-farm/vgi-benchmarks, Apple M3, 10M rows): context, not a claim.
# (workload, worker, transport, threads) -> rows/s
PUBLISHED = {
    ("scalar_multiply", "rust", "launch: + shm", 1): 39.0e6,
    ("scalar_multiply", "rust", "launch: + shm", 4): 80.9e6,
    ("scalar_multiply", "java", "launch: + shm", 1): 53.6e6,
    ("scalar_multiply", "java", "launch: + shm", 4): 156.9e6,
    ("scalar_upper_case", "rust", "launch: + shm", 1): 2.74e6,
    ("scalar_upper_case", "java", "launch: + shm", 4): 13.5e6,
}


def log(msg: str) -> None:
    print(f"[vgi-bench] {msg}", file=sys.stderr, flush=True)


def py_multiply(value, factor):
    """The in-process Arrow UDF: the checked multiply, so it means what the workers' multiply means."""
    import pyarrow.compute as pc

    return pc.multiply_checked(value, factor)


def py_upper(s):
    """The in-process Arrow UDF: Arrow's Unicode upper case over the whole chunk."""
    import pyarrow.compute as pc

    return pc.utf8_upper(s)


def workloads(rows: int) -> list[dict[str, Any]]:
    """VGI's two cases, with their setup, the worker query and the two in-process baselines."""
    from duckdb.sqltypes import BIGINT, VARCHAR

    return [
        {
            "workload": "scalar_multiply",
            "title": f"scalar_multiply — sum(w.multiply(n, 2)) over {rows:,} BIGINTs",
            "setup": f"CREATE OR REPLACE TEMP TABLE bench_input AS SELECT i::BIGINT AS n FROM range({rows}) t(i)",
            "worker_sql": "SELECT sum(w.multiply(n, 2)) FROM bench_input",
            "native_sql": "SELECT sum(n * 2) FROM bench_input",
            "native_expected": rows * (rows - 1),
            "udf_sql": "SELECT sum(py_multiply(n, 2)) FROM bench_input",
            "udf": ("py_multiply", py_multiply, [BIGINT, BIGINT], BIGINT),
            "expected": rows * (rows - 1),
            # VGI's payload: 2 × 8 B in (value, factor), 8 B out
            "bytes_per_row": 24,
        },
        {
            "workload": "scalar_upper_case",
            "title": f"scalar_upper_case — count(w.upper_case(s)) over {rows:,} strings of {PAYLOAD_BYTES} B",
            "setup": (
                f"CREATE OR REPLACE TEMP TABLE bench_input AS SELECT repeat('a', {PAYLOAD_BYTES}) AS s "
                f"FROM range({rows}) t(i)"
            ),
            "worker_sql": "SELECT count(w.upper_case(s)) FROM bench_input",
            # Not count(upper(s)): DuckDB answers that from the column's statistics (no NULLs) without
            # calling upper() at all. strlen() reads the result's stored length, so upper() is the work.
            "native_sql": "SELECT sum(strlen(upper(s))) FROM bench_input",
            "native_expected": rows * PAYLOAD_BYTES,
            "udf_sql": "SELECT count(py_upper(s)) FROM bench_input",
            "udf": ("py_upper", py_upper, [VARCHAR], VARCHAR),
            "expected": rows,
            # VGI's payload: a 4-byte offset + the string, in and out
            "bytes_per_row": 2 * (4 + PAYLOAD_BYTES),
        },
    ]


def record(
    w: dict[str, Any], rows: int, variant: str, threads: int, sql: str, times: list[float], result: Any, **kind: Any
) -> dict[str, Any]:
    expected = w["native_expected"] if sql == w["native_sql"] else w["expected"]
    if result != expected:
        sys.exit(f"vgi-bench: {variant} answered {result!r} to {sql!r}, expected {expected!r}")
    median = statistics.median(times)
    r = {
        "workload": w["workload"],
        "variant": variant,
        "worker": None,
        "transport": None,
        **kind,
        "threads": threads,
        "setup": w["setup"],
        "sql": sql,
        "median_s": median,
        "min_s": min(times),
        "max_s": max(times),
        "times_s": times,
        "rows": rows,
        "bytes": w["bytes_per_row"] * rows,
        "rows_per_s": rows / median,
        "rows_per_s_per_thread": rows / median / threads,
        "mb_per_s": w["bytes_per_row"] * rows / median / 1e6,
        "result": str(result),
    }
    log(
        f"{w['workload']:<17} {variant:<26} t={threads} {median * 1e3:,.0f} ms "
        f"[{min(times) * 1e3:,.0f}–{max(times) * 1e3:,.0f}]  {r['rows_per_s'] / 1e6:,.2f} Mrows/s"
    )
    return r


def run(
    rows: int,
    warmup: int,
    measured: int,
    connect: Callable[..., Any],
    measure: Callable[..., tuple[list[float], Any]],
    workers: list[tuple[str, str, dict[str, str]]],
) -> list[dict[str, Any]]:
    """Every workload: the baselines, then each worker over inline and shm, at each thread count.

    ``connect(shm, attach, worker)`` opens DuckDB with the extension loaded (and the worker
    attached as ``w``); ``measure(con, sql, warmup, measured)`` times warm repetitions (the suite's
    own); ``workers`` is (name, location, extra environment) for each SDK's worker.
    """
    import os

    recs: list[dict[str, Any]] = []
    for w in workloads(rows):
        con = connect(False, attach=False)
        con.execute(w["setup"])
        name, fn, params, returns = w["udf"]
        con.create_function(name, fn, params, returns, type="arrow")
        for threads in THREAD_COUNTS:
            con.execute(f"SET threads = {threads}")
            for variant, sql in (("duckdb native SQL", w["native_sql"]), ("duckdb Python Arrow UDF", w["udf_sql"])):
                times, result = measure(con, sql, warmup, measured)
                recs.append(record(w, rows, variant, threads, sql, times, result, baseline=variant))
        con.close()
        for worker, location, env in workers:
            saved_env = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                for transport in ("inline", "shm"):
                    con = connect(transport == "shm", attach=True, worker=location)
                    con.execute(w["setup"])
                    for threads in THREAD_COUNTS:
                        con.execute(f"SET threads = {threads}")
                        times, result = measure(con, w["worker_sql"], warmup, measured)
                        recs.append(
                            record(
                                w,
                                rows,
                                f"{worker} worker {transport}",
                                threads,
                                w["worker_sql"],
                                times,
                                result,
                                worker=worker,
                                transport=transport,
                            )
                        )
                    con.execute("DETACH w")
                    con.close()
            finally:
                for k, v in saved_env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
    os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    return recs


def best_worker(recs: list[dict[str, Any]], workload: str, worker: str, threads: int = 2) -> dict[str, Any] | None:
    """The worker's faster transport at ``threads``."""
    rows = [r for r in recs if (r["workload"], r["worker"], r["threads"]) == (workload, worker, threads)]
    return max(rows, key=lambda r: r["rows_per_s"], default=None)


def baseline(recs: list[dict[str, Any]], workload: str, variant: str, threads: int = 2) -> dict[str, Any] | None:
    rows = [r for r in recs if (r["workload"], r.get("baseline"), r["threads"]) == (workload, variant, threads)]
    return rows[0] if rows else None


def target_pairs(recs: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Each target's (worker record, baseline record), both at 2 threads."""
    return {
        "multiply_rust_worker_vs_python_arrow_udf": (
            best_worker(recs, "scalar_multiply", "rust"),
            baseline(recs, "scalar_multiply", "duckdb Python Arrow UDF"),
        ),
        "multiply_python_worker_vs_python_arrow_udf": (
            best_worker(recs, "scalar_multiply", "python"),
            baseline(recs, "scalar_multiply", "duckdb Python Arrow UDF"),
        ),
        "upper_case_256_rust_worker_vs_duckdb_upper": (
            best_worker(recs, "scalar_upper_case", "rust"),
            baseline(recs, "scalar_upper_case", "duckdb native SQL"),
        ),
    }


def targets(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The suite's target records for these workloads (those whose rows ran)."""
    out = []
    for name, (worker, base) in target_pairs(recs).items():
        if worker and base:
            value = worker["rows_per_s"] / base["rows_per_s"]
            out.append(
                {"target": name, "measured": round(value, 3), "threshold": TARGETS[name], "met": value >= TARGETS[name]}
            )
    return out
