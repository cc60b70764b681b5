"""The md section of VGI's own workloads (vgi_workloads.py) in ``./quiver bench vgi``'s vgi.md."""

from __future__ import annotations

from typing import Any

from vgi_workloads import PUBLISHED, TARGETS, target_pairs

# What each variant is, in the order the tables list them.
ROW_ORDER = [
    "duckdb native SQL",
    "duckdb Python Arrow UDF",
    "rust worker inline",
    "rust worker shm",
    "python worker inline",
    "python worker shm",
    "java worker inline",
    "java worker shm",
]
TARGET_WORDS = {
    "multiply_rust_worker_vs_python_arrow_udf": "scalar_multiply: Rust worker ≥ {t}× DuckDB's in-process Python Arrow UDF",
    "multiply_python_worker_vs_python_arrow_udf": "scalar_multiply: Python worker ≥ {t}× DuckDB's in-process Python Arrow UDF",
    "upper_case_256_rust_worker_vs_duckdb_upper": "scalar_upper_case (256 B): Rust worker ≥ {t}× DuckDB's native upper()",
}
# Arrow batches at or above this size travel through the shared segment (vgi-rpc's POSIX default,
# crates/quiver-shm/src/config.rs); below it they stay on the pipe even with shm on.
SHM_THRESHOLD = 128 << 10
CHUNK_ROWS = 2048


def fmt_t(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def mrows(x: float) -> str:
    return f"{x / 1e6:,.2f}"


def section(saved: dict[str, Any]) -> list[str]:
    part = saved.get("vgi_benchmarks")
    if not part:
        return []
    info, recs = part["info"], part["records"]
    L = [
        "",
        "## VGI's own workloads: `scalar_multiply` and `scalar_upper_case`",
        "",
        f"*This part ran at {info['date']}, commit {info['commit']}, nproc {info['nproc']}, {info['cpu']}, "
        f"in {info['wall_s']:.0f} s.*",
        "",
        "The two cases of VGI's own benchmark (Query-farm/vgi-benchmarks, `cases/scalar_multiply.json` and "
        "`cases/scalar_upper_case.json`), run as that suite runs them: the setup statement makes a TEMP table of "
        f"{info['rows']:,} rows, then the query calls the worker's scalar on every row. Each of quiver's three example "
        "workers (Rust `target/release/quiver-allinone`, Python `python -m quiver.vgi.allinone`, Java "
        "`java/bin/quiver-allinone-java` on Temurin 25) is attached with `ATTACH 'launch:<command>' AS w (TYPE quiver)`, "
        "first with shared memory off (**inline**: every batch on the worker's pipe), then on (**shm**: "
        f"`VGI_RPC_SHM_SIZE_BYTES` = {info['shm_bytes'] >> 20} MiB in the DuckDB process before ATTACH), and the same "
        f"query runs at `SET threads = {info['threads'][0]}` then `{info['threads'][1]}` on that connection. In the same "
        "run, two rows show what a DuckDB user would use instead of a worker: DuckDB's native SQL and DuckDB's "
        "in-process Python Arrow UDF. Every figure is **median [min–max] over "
        f"{info['measured']} measured runs after {info['warmup']} warm-up**; LOAD, ATTACH and the setup are not timed; "
        "each run's answer is checked (sum = rows × (rows − 1), count = rows, strlen sum = rows × 256). "
        "**rows/s per thread** = rows/s ÷ the "
        "`threads` setting.",
        "",
    ]
    L += targets_table(recs)
    for workload in ("scalar_multiply", "scalar_upper_case"):
        L += workload_table(workload, recs)
    L += rows_explained(recs)
    L += published_table(recs)
    return L


def targets_table(recs: list[dict[str, Any]]) -> list[str]:
    L = [
        "### Targets (same run, 2 threads, each worker at its faster transport)",
        "",
        "| target | measured | met? |",
        "|---|---|---|",
    ]
    for name, (worker, base) in target_pairs(recs).items():
        words = TARGET_WORDS[name].format(t=TARGETS[name])
        if not (worker and base):
            L.append(f"| {words} (`{name}`) | not run | — |")
            continue
        ratio = worker["rows_per_s"] / base["rows_per_s"]
        words += f" (`{name}`)"
        L.append(
            f"| {words} | {ratio:.2f}× ({mrows(worker['rows_per_s'])} vs {mrows(base['rows_per_s'])} M rows/s; "
            f"best transport: **{worker['transport']}**) | {'**met**' if ratio >= TARGETS[name] else 'missed'} |"
        )
    return [*L, ""]


def workload_table(workload: str, recs: list[dict[str, Any]]) -> list[str]:
    rows = [r for r in recs if r["workload"] == workload]
    if not rows:
        return []
    by = {(r["variant"], r["threads"]): r for r in rows}
    first = rows[0]
    L = [
        f"### {workload}",
        "",
        f"Setup: `{first['setup']}`",
        "",
        f"Worker query: `{next((r['sql'] for r in rows if r['worker']), '—')}`",
        "",
        "| row | threads | median [min–max] | M rows/s | M rows/s per thread | MB/s | ÷ Python Arrow UDF | ÷ native SQL |",
        "|---|---|---|---|---|---|---|---|",
    ]
    threads = sorted({r["threads"] for r in rows})
    for variant in ROW_ORDER:
        for t in threads:
            r = by.get((variant, t))
            if not r:
                continue
            udf = by.get(("duckdb Python Arrow UDF", t))
            native = by.get(("duckdb native SQL", t))
            L.append(
                f"| {variant} | {t} | {fmt_t(r['median_s'])} [{fmt_t(r['min_s'])}–{fmt_t(r['max_s'])}] "
                f"| {mrows(r['rows_per_s'])} | {mrows(r['rows_per_s_per_thread'])} | {r['mb_per_s']:,.0f} "
                f"| {ratio(r, udf)} | {ratio(r, native)} |"
            )
    per_row = first["bytes"] // first["rows"]
    L += [
        "",
        f"MB/s counts VGI's payload for the case: {per_row} B per row in and out together "
        + (
            "(value and factor in, 8 B each; the product out, 8 B)."
            if workload == "scalar_multiply"
            else "(a 4-byte offset and the 256-byte string, each way)."
        ),
        "",
    ]
    return L


def ratio(r: dict[str, Any], base: dict[str, Any] | None) -> str:
    return f"{r['rows_per_s'] / base['rows_per_s']:.2f}×" if base else "—"


def rows_explained(recs: list[dict[str, Any]]) -> list[str]:
    sql = {(r["workload"], r["variant"]): r["sql"] for r in recs}
    multiply_in = CHUNK_ROWS * 16
    upper_in = CHUNK_ROWS * (4 + 256)
    return [
        "### What each row is",
        "",
        f"- **duckdb native SQL**: `{sql.get(('scalar_multiply', 'duckdb native SQL'), '')}` and "
        f"`{sql.get(('scalar_upper_case', 'duckdb native SQL'), '')}`: DuckDB's own `*` and `upper()`, no UDF and no "
        "worker — the work itself, in process, in parallel. The native upper-case row sums `strlen(upper(s))` instead "
        "of `count(upper(s))` because DuckDB answers `count(upper(s))` from the column's statistics (no NULLs) without "
        "calling `upper()` at all; `strlen` reads each result's stored length, so `upper()` on every row is the work.",
        "- **duckdb Python Arrow UDF**: what a DuckDB user writes instead of a worker — "
        "`con.create_function('py_multiply', py_multiply, [BIGINT, BIGINT], BIGINT, type='arrow')` where "
        "`py_multiply(value, factor)` returns `pyarrow.compute.multiply_checked(value, factor)` (the checked multiply, "
        "so it means what the workers' `multiply` and DuckDB's `*` mean: an error on overflow), and "
        "`con.create_function('py_upper', py_upper, [VARCHAR], VARCHAR, type='arrow')` where `py_upper(s)` returns "
        "`pyarrow.compute.utf8_upper(s)`; called as `py_multiply(n, 2)` / `py_upper(s)` in the same query shape as "
        "the worker's. DuckDB hands each chunk to Python as Arrow arrays inside its own process (no copy to another "
        "process, but each call takes Python's GIL).",
        "- **<sdk> worker inline**: the worker's `multiply` / `upper_case` over `launch:` (one worker process, one "
        f"connection per DuckDB thread). DuckDB calls a scalar once per chunk of ≤{CHUNK_ROWS:,} rows, so each chunk is "
        "one request/reply on the pipe.",
        f"- **<sdk> worker shm**: the same with the shared segment on. A batch of {SHM_THRESHOLD >> 10} KiB or more "
        f"travels through the segment, a smaller one stays on the pipe: a `scalar_multiply` chunk is "
        f"{multiply_in >> 10} KiB in, {multiply_in >> 11} KiB out, so shm moves none of its data (a gap between its "
        f"inline and shm rows is not data movement); a `scalar_upper_case` chunk is {upper_in >> 10} KiB each way, so "
        "it crosses in the segment.",
        "",
    ]


def published_table(recs: list[dict[str, Any]]) -> list[str]:
    L = [
        "### Beside VGI's published figures — other machine, context not claim",
        "",
        "VGI publishes these for its own workers (Query-farm/vgi-benchmarks, Apple M3, 10M rows, `launch:` with shm, "
        "threads 1 and 4). They ran on another machine with other cores, memory and OS, against VGI's own engine "
        "extension and workers, so they are **context, not a claim** and no target is set against them. quiver's "
        "figure is this run's faster transport for that worker at the nearest thread count it ran.",
        "",
        "| workload | worker | VGI: threads | VGI: M rows/s | VGI: M rows/s per thread | here: threads "
        "| here: M rows/s | here: M rows/s per thread (transport) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (workload, worker, _, threads), rate in PUBLISHED.items():
        mine = [r for r in recs if (r["workload"], r["worker"]) == (workload, worker)]
        here_t = min({r["threads"] for r in mine}, key=lambda t: abs(t - threads), default=None)
        best = max((r for r in mine if r["threads"] == here_t), key=lambda r: r["rows_per_s"], default=None)
        here = (
            f"{here_t} | {mrows(best['rows_per_s'])} | {mrows(best['rows_per_s_per_thread'])} ({best['transport']})"
            if best
            else "— | — | —"
        )
        L.append(f"| {workload} | {worker} | {threads} | {mrows(rate)} | {mrows(rate / threads)} | {here} |")
    return [*L, ""]
