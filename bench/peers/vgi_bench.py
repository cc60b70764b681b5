"""`./quiver bench vgi`: VGI's benchmark page (scan, echo, upper_case) on this machine.

The allinone worker's functions under DuckDB 2.0.0 through quiver's extension, shared memory off
(inline pipe) and on, beside the in-process ceiling measured in the same run:

    scan        SELECT sum(n) FROM w.numbers(N)                                  vs quiver_numbers(N)
    round trip  SELECT count(*) FROM w.echo((SELECT * FROM w.numbers(M)))        vs an in-process passthrough
    scalar      SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range(K) t(i)  vs DuckDB's upper()
    aggregate   per-group w.sum_int(n), w.avg_double(n) over w.numbers(K/2)      vs sum(), avg() over quiver_numbers

VGI's own benchmark workloads (vgi_workloads.py) run in the same suite:

    scalar_multiply    SELECT sum(w.multiply(n, 2)) FROM bench_input     vs Python Arrow UDF, sum(n * 2)
    scalar_upper_case  SELECT count(w.upper_case(s)) FROM bench_input    vs Python Arrow UDF, sum(strlen(upper(s)))

over a 10M-row TEMP table, Rust, Python and Java workers, inline and shm, threads 1 and 2.

Usage (with /work/main/.venv/bin/python):
    python bench/peers/vgi_bench.py run [--warmup W] [--measured R] [--quick] [--out DIR]
                                        [--workloads all|page|vgi] [--vgi-rows N]
    python bench/peers/vgi_bench.py report [DIR]       # rewrite vgi.{json targets,md,svg} from vgi.json
    python bench/peers/vgi_bench.py debug ...          # internal: one shm run each, VGI_RPC_SHM_DEBUG=1

Each figure is median [min–max] over MEASURED runs after WARMUP runs (LOAD/ATTACH discarded),
SET threads = 2. A page workload's variants (inline, shm, its in-process ceilings) run in turn, one
run of each per repetition, each on a connection of its own. Shared memory is switched on by
VGI_RPC_SHM_SIZE_BYTES in this process's environment before ATTACH (the extension reads it
there). A separate debug pass re-runs each workload once over shm with VGI_RPC_SHM_DEBUG=1 and
keeps both sides' timeline lines for the md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import vgi_workloads
from vgi_report import JAVA_SCALE, PYTHON_SCALE, fmt_s, write_md, write_svg

ROOT = Path(__file__).resolve().parents[2]
# The bench flavour of the extension: the product plus the in-process ceiling quiver_numbers(n)
# (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh, which ./quiver bench vgi runs first).
EXTENSION = Path(
    os.environ.get("QUIVER_EXTENSION", ROOT / "target" / "extension" / "bench" / "quiver.duckdb_extension")
)
WORKER = ROOT / "target" / "release" / "quiver-allinone"
# The Python SDK's allinone (quiver.vgi.allinone), attached the same way; run at 1/10 of the sizes.
PYTHON_WORKER = f"{sys.executable} -m quiver.vgi.allinone"
# The Java SDK's AllInOne (java/bin/quiver-allinone-java) on a JDK 22+, so shared memory goes through
# java.lang.foreign; run at 1/10 of the sizes like the Python worker.
JAVA_WORKER = ROOT / "java" / "bin" / "quiver-allinone-java"
JAVA_JDK = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
SHM_BYTES = 256 << 20
THREADS = 2

# Sizes: each run a few seconds on the slowest variant of the workload (2 vCPU EPYC VM).
SCAN_ROWS = 2_000_000_000  # 16 GB of BIGINT, one direction
ECHO_ROWS = 200_000_000  # 1.6 GB per transfer, three transfers
SCALAR_ROWS = 50_000_000  # 50M strings, both directions
# The aggregate workload runs over SCALAR_ROWS // 2 numbers (derived, so every caller's (n, m, k) covers it).
AGGREGATE_GROUPS = 100

TARGETS = {
    "scan_vs_ceiling": 0.8,
    "scan_shm_vs_inline": 2.5,
    "echo_vs_ceiling": 0.4,
    "scalar_vs_upper": 0.8,
    "shm_vs_inline_lowest": 1.0,
}
#: The workloads whose shm and inline rows `shm_vs_inline_lowest` compares (the Rust worker's).
PAGE_WORKLOADS = ("scan", "echo", "scalar", "aggregate")


def log(msg: str) -> None:
    print(f"[vgi-bench] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Workloads


def workloads(n: int, m: int, k: int) -> list[dict[str, Any]]:
    """Each workload: the worker query, its in-process ceiling(s), row count and a bytes rule."""
    return [
        {
            "workload": "scan",
            "title": f"Scan — sum(n) FROM numbers({n:,})",
            "rows": n,
            "worker_sql": f"SELECT sum(n) FROM w.numbers({n})",
            "ceilings": [
                (
                    "in-process",
                    f"SELECT sum(n) FROM quiver_numbers({n})",
                    f"quiver_numbers({n:,}): the same BIGINTs made in Rust inside DuckDB (parallel, Arrow scan), no worker",
                ),
                (
                    "in-process range()",
                    f"SELECT sum(range) FROM range({n})",
                    f"DuckDB's own range({n:,}) (single-threaded in 2.0), for reference",
                ),
            ],
            # one direction, 8 bytes per row
            "bytes": lambda result: 8 * n,
        },
        {
            "workload": "echo",
            "title": f"Round trip — count(*) FROM echo(numbers({m:,}))",
            "rows": m,
            "worker_sql": f"SELECT count(*) FROM w.echo((SELECT * FROM w.numbers({m})))",
            "ceilings": [
                (
                    "in-process",
                    f"SELECT count(n) FROM (SELECT * FROM quiver_numbers({m}))",
                    f"count(n) FROM (SELECT * FROM quiver_numbers({m:,})): the same plan shape in process — "
                    "generator → passthrough subquery → count over the materialized column "
                    "(count(*) would let DuckDB skip the column; range() would not even produce it)",
                ),
            ],
            # numbers → engine, engine → echo, echo → engine: three transfers of 8 bytes per row
            "bytes": lambda result: 3 * 8 * m,
        },
        {
            "workload": "scalar",
            "title": f"Scalar — sum(length(upper_case(i::VARCHAR))) over {k:,} rows",
            "rows": k,
            "worker_sql": f"SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range({k}) t(i)",
            "ceilings": [
                (
                    "in-process",
                    f"SELECT sum(length(upper(i::VARCHAR))) FROM range({k}) t(i)",
                    "DuckDB's built-in upper() on the same strings",
                ),
            ],
            # strings out and back: UTF-8 bytes + 4-byte offsets, each direction
            "bytes": lambda result: 2 * (int(result) + 4 * k),
        },
        aggregate_workload(k // 2),
    ]


def aggregate_workload(a: int) -> dict[str, Any]:
    """Per-group sum and mean of numbers(a) by the worker's aggregates, beside DuckDB's own."""

    def grouped(source: str, total: str, mean: str) -> str:
        return (
            f"SELECT sum(s), sum(a) FROM (SELECT n % {AGGREGATE_GROUPS} AS g, {total}(n) AS s, {mean}(n::DOUBLE) AS a "
            f"FROM {source}({a}) GROUP BY g)"
        )

    return {
        "workload": "aggregate",
        "title": f"Aggregate — sum_int(n), avg_double(n) per {AGGREGATE_GROUPS} groups over numbers({a:,})",
        "rows": a,
        "worker_sql": grouped("w.numbers", "w.sum_int", "w.avg_double"),
        "ceilings": [
            (
                "in-process",
                grouped("quiver_numbers", "sum", "avg"),
                f"DuckDB's built-in sum() and avg() over quiver_numbers({a:,}), grouped the same way",
            ),
        ],
        # numbers → engine (8 B/row), then each aggregate's values and group ids → worker (2 × 16 B/row)
        "bytes": lambda result: 40 * a,
    }


def connect(shm: bool, attach: bool, worker: str | None = None):
    import duckdb

    if shm:
        os.environ["VGI_RPC_SHM_SIZE_BYTES"] = str(SHM_BYTES)
    else:
        os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{EXTENSION}'")
    con.execute(f"SET threads = {THREADS}")
    if attach:
        con.execute(f"ATTACH 'launch:{worker or WORKER}' AS w (TYPE quiver)")
    return con


def measure(con, sql: str, warmup: int, measured: int) -> tuple[list[float], Any]:
    """Warm repetitions of one query: its times and its result."""
    return measure_in_turn([(con, sql)], warmup, measured)[0]


def measure_in_turn(runs: list[tuple[Any, str]], warmup: int, measured: int) -> list[tuple[list[float], Any]]:
    """`measure` for several (connection, sql) at once, one run of each in turn per repetition."""
    results: list[Any] = [None] * len(runs)
    times: list[list[float]] = [[] for _ in runs]
    for repetition in range(warmup + measured):
        for i, (con, sql) in enumerate(runs):
            start = time.perf_counter()
            results[i] = con.execute(sql).fetchone()[0]
            if repetition >= warmup:
                times[i].append(time.perf_counter() - start)
    return list(zip(times, results, strict=True))


def record(
    w: dict[str, Any], variant: str, sql: str, times: list[float], result: Any, note: str = ""
) -> dict[str, Any]:
    median = statistics.median(times)
    rows = w["rows"]
    nbytes = w["bytes"](result)
    return {
        "workload": w["workload"],
        "variant": variant,
        "sql": sql,
        "note": note,
        "median_s": median,
        "min_s": min(times),
        "max_s": max(times),
        "times_s": times,
        "rows": rows,
        "bytes": nbytes,
        "rows_per_s": rows / median,
        "mb_per_s": nbytes / median / 1e6,
        "result": str(result),
    }


# ---------------------------------------------------------------------------------------------
# Debug pass: VGI_RPC_SHM_DEBUG=1 in a child process, whose stderr carries the worker's lines too


def debug_child(n: int, m: int, k: int) -> None:
    os.environ["VGI_RPC_SHM_DEBUG"] = "1"
    for w in workloads(n, m, k):
        con = connect(True, attach=False)
        print(f"=== {w['workload']}", file=sys.stderr, flush=True)
        con.execute(f"ATTACH 'launch:{WORKER}' AS w (TYPE quiver)")
        start = time.perf_counter()
        con.execute(w["worker_sql"]).fetchone()
        print(f"=== wall {time.perf_counter() - start:.3f}", file=sys.stderr, flush=True)
        con.execute("DETACH w")
        con.close()
        time.sleep(1.5)  # the worker's last lines travel through the engine's stderr drain


def debug_pass(n: int, m: int, k: int) -> dict[str, Any]:
    env = dict(os.environ, VGI_RPC_SHM_DEBUG="1")
    proc = subprocess.run(
        [sys.executable, __file__, "debug", "--n", str(n), "--m", str(m), "--k", str(k)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out: dict[str, Any] = {}
    current = None
    for line in proc.stderr.splitlines():
        if line.startswith("=== wall "):
            out[current]["wall_s"] = float(line.split()[-1])
        elif line.startswith("=== "):
            current = line[4:].strip()
            out[current] = {"sizes": {"scan": n, "echo": m, "scalar": k}, "lines": [], "resolved": 0}
        elif current and "resolved inbound" in line:
            out[current]["resolved"] += 1
        elif current and ("conn closed" in line or "timeline" in line):
            # Socket paths differ per run; keep the words.
            out[current]["lines"].append(re.sub(r"/tmp/\S+/worker\.sock", "<sock>", line))
    if proc.returncode != 0:
        out["error"] = proc.stderr[-2000:]
    return out


def machine_info(started: float) -> dict[str, Any]:
    import duckdb

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def git(*a):
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain")
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": time.perf_counter() - started,
    }


def derive(recs: list[dict[str, Any]]) -> None:
    """Ratios: throughput ÷ the in-process ceiling, and shm ÷ inline."""
    by = {(r["workload"], r["variant"]): r for r in recs}
    for r in recs:
        ceiling = by.get((r["workload"], "in-process"))
        inline = by.get((r["workload"], "inline"))
        r["baseline"] = "in-process" if r["variant"] != "in-process" else None
        r["vs_in_process"] = ceiling["median_s"] / r["median_s"] if ceiling else None
        r["shm_over_inline"] = inline["median_s"] / r["median_s"] if (inline and r["variant"] == "shm") else None


def run(args: argparse.Namespace) -> None:
    """Runs the chosen parts; a part not run keeps its figures from DIR/vgi.json, if there."""
    out = Path(args.out)
    previous = out / "vgi.json"
    saved: dict[str, Any] = json.loads(previous.read_text()) if previous.exists() and args.workloads != "all" else {}
    for path in (EXTENSION, WORKER):
        if not path.exists():
            sys.exit(
                f"vgi-bench: {path} is missing (run ./quiver setup, then QUIVER_BENCH_FUNCTIONS=1 extension/build.sh)"
            )
    if args.workloads in ("all", "page"):
        saved.update(run_page(args))
    if args.workloads in ("all", "vgi"):
        saved["vgi_benchmarks"] = run_vgi_benchmarks(args)
    saved["targets"] = all_targets(saved)
    out.mkdir(parents=True, exist_ok=True)
    (out / "vgi.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_md(out / "vgi.md", saved)
    if saved.get("records"):
        write_svg(out / "vgi.svg", saved["records"])
    log(f"results in {out}/vgi.{{md,json,svg}}")


def run_page(args: argparse.Namespace) -> dict[str, Any]:
    """Scan, echo, scalar and aggregate: the Rust worker, then the Python and Java workers."""
    started = time.perf_counter()
    scale = 10 if args.quick else 1
    n, m, k = SCAN_ROWS // scale, ECHO_ROWS // scale, SCALAR_ROWS // scale
    ws = workloads(n, m, k)
    # The worker over the pipe, over shm, and the in-process ceilings, each on a connection of its
    # own, take turns run by run: a drift of the machine (another tenant, the clock) falls on every
    # variant of a workload alike instead of on whichever ran during it.
    cons = {
        "inline": connect(False, attach=True),
        "shm": connect(True, attach=True),
        "ceiling": connect(False, attach=False),
    }
    recs: list[dict[str, Any]] = []
    for w in ws:
        runs = [(variant, cons[variant], w["worker_sql"], "") for variant in ("inline", "shm")]
        runs += [(variant, cons["ceiling"], sql, note) for variant, sql, note in w["ceilings"]]
        measured = measure_in_turn([(con, sql) for _, con, sql, _ in runs], args.warmup, args.measured)
        for (variant, _, sql, note), (times, result) in zip(runs, measured, strict=True):
            recs.append(record(w, variant, sql, times, result, note))
            log(f"{w['workload']:<7} {variant:<10} {fmt_s(recs[-1])}  {recs[-1]['rows_per_s'] / 1e6:,.1f} Mrows/s")
    for variant, con in cons.items():
        if variant != "ceiling":
            con.execute("DETACH w")
        con.close()
    python_recs = python_worker_runs(n // PYTHON_SCALE, m // PYTHON_SCALE, k // PYTHON_SCALE, args)
    java_recs = java_worker_runs(n // JAVA_SCALE, m // JAVA_SCALE, k // JAVA_SCALE, args)
    os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    log("debug pass (VGI_RPC_SHM_DEBUG=1, shm, one run each at 1/4 size)")
    debug = debug_pass(n // 4, m // 4, k // 4)
    derive(recs)
    info = machine_info(started)
    info.update(
        warmup=args.warmup,
        measured=args.measured,
        threads=THREADS,
        shm_bytes=SHM_BYTES,
        sizes={"scan": n, "echo": m, "scalar": k},
        in_turn=True,
        quick=args.quick,
    )
    log(f"scan, echo, scalar, aggregate done in {info['wall_s']:.0f} s")
    return {
        "info": info,
        "records": recs,
        "debug": debug,
        "python_worker": python_recs,
        "java_worker": java_recs,
    }


def run_vgi_benchmarks(args: argparse.Namespace) -> dict[str, Any]:
    """VGI's scalar_multiply and scalar_upper_case, each worker inline and over shm, threads 1 and 2."""
    started = time.perf_counter()
    rows = args.vgi_rows // (10 if args.quick else 1)
    if rows < 1:
        sys.exit("vgi-bench: --vgi-rows leaves no rows (it is divided by 10 under --quick)")
    workers = [("rust", str(WORKER), {}), ("python", PYTHON_WORKER, {})]
    if java_ready():
        workers.append(("java", str(JAVA_WORKER), {"QUIVER_JAVA": JAVA_JDK}))
    else:
        log(f"java worker rows skipped: java/target not built or no JDK 22+ at {JAVA_JDK}")
    log(f"VGI's workloads over {rows:,} rows: {', '.join(w[0] for w in workers)} workers")
    recs = vgi_workloads.run(rows, args.warmup, args.measured, connect, measure, workers)
    info = machine_info(started)
    info.update(
        warmup=args.warmup,
        measured=args.measured,
        threads=list(vgi_workloads.THREAD_COUNTS),
        shm_bytes=SHM_BYTES,
        rows=rows,
        payload_bytes=vgi_workloads.PAYLOAD_BYTES,
        quick=args.quick,
    )
    log(f"VGI's workloads done in {info['wall_s']:.0f} s")
    return {"info": info, "records": recs}


def page_targets(saved: dict[str, Any]) -> list[dict[str, Any]]:
    """The scan/echo/scalar targets as records, from the page's figures (the md's Targets table)."""
    by = {(r["workload"], r["variant"]): r for r in saved.get("records") or []}
    if not by:
        return []

    def best(workload: str) -> float:
        return max(by[(workload, "shm")]["vs_in_process"], by[(workload, "inline")]["vs_in_process"])

    measured = {
        "scan_vs_ceiling": by[("scan", "shm")]["vs_in_process"],
        "scan_shm_vs_inline": by[("scan", "shm")]["shm_over_inline"],
        "echo_vs_ceiling": best("echo"),
        "scalar_vs_upper": best("scalar"),
        "shm_vs_inline_lowest": min(
            by[(w, "shm")]["rows_per_s"] / by[(w, "inline")]["rows_per_s"] for w in PAGE_WORKLOADS
        ),
    }
    return [
        {"target": name, "measured": round(value, 3), "threshold": TARGETS[name], "met": value >= TARGETS[name]}
        for name, value in measured.items()
    ]


def all_targets(saved: dict[str, Any]) -> list[dict[str, Any]]:
    vgi = saved.get("vgi_benchmarks") or {}
    return page_targets(saved) + vgi_workloads.targets(vgi.get("records") or [])


def java_ready() -> bool:
    return (ROOT / "java" / "target" / "quiver-java-0.1.0.jar").exists() and Path(JAVA_JDK).exists()


def python_worker_runs(n: int, m: int, k: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The same three queries against the Python SDK's allinone, shm off then on."""
    recs: list[dict[str, Any]] = []
    for shm in (False, True):
        variant = "python shm" if shm else "python inline"
        con = connect(shm, attach=True, worker=PYTHON_WORKER)
        for w in workloads(n, m, k):
            times, result = measure(con, w["worker_sql"], args.warmup, args.measured)
            recs.append(record(w, variant, w["worker_sql"], times, result))
            log(f"{w['workload']:<7} {variant:<14} {fmt_s(recs[-1])}  {recs[-1]['rows_per_s'] / 1e6:,.1f} Mrows/s")
        con.execute("DETACH w")
        con.close()
    return recs


def java_worker_runs(n: int, m: int, k: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The same three queries against the Java SDK's AllInOne on a JDK 22+, shm off then on."""
    if not java_ready():
        log(f"java worker rows skipped: java/target not built or no JDK 22+ at {JAVA_JDK}")
        return []
    os.environ["QUIVER_JAVA"] = JAVA_JDK
    recs: list[dict[str, Any]] = []
    try:
        for shm in (False, True):
            variant = "java shm" if shm else "java inline"
            con = connect(shm, attach=True, worker=str(JAVA_WORKER))
            for w in workloads(n, m, k):
                times, result = measure(con, w["worker_sql"], args.warmup, args.measured)
                recs.append(record(w, variant, w["worker_sql"], times, result))
                log(f"{w['workload']:<7} {variant:<14} {fmt_s(recs[-1])}  {recs[-1]['rows_per_s'] / 1e6:,.1f} Mrows/s")
            con.execute("DETACH w")
            con.close()
    finally:
        os.environ.pop("QUIVER_JAVA", None)
    return recs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--measured", type=int, default=5)
    r.add_argument("--quick", action="store_true", help="sizes ÷ 10 (a smoke test, not a result)")
    r.add_argument("--out", default=str(ROOT / "bench" / "results"))
    r.add_argument(
        "--workloads",
        choices=("all", "page", "vgi"),
        default="all",
        help="page: scan, echo, scalar, aggregate; vgi: VGI's own scalar_multiply and scalar_upper_case "
        "(a part not run keeps its figures from DIR/vgi.json)",
    )
    r.add_argument(
        "--vgi-rows", type=int, default=vgi_workloads.ROWS, help="rows of VGI's workloads' input table (default 10M)"
    )
    rep = sub.add_parser("report")
    rep.add_argument("dir", nargs="?", default=str(ROOT / "bench" / "results"))
    d = sub.add_parser("debug")
    d.add_argument("--n", type=int, required=True)
    d.add_argument("--m", type=int, required=True)
    d.add_argument("--k", type=int, required=True)
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
    elif args.cmd == "report":
        out = Path(args.dir)
        saved = json.loads((out / "vgi.json").read_text())
        # The targets follow this file's thresholds, recomputed from the saved records.
        saved["targets"] = all_targets(saved)
        (out / "vgi.json").write_text(json.dumps(saved, indent=2) + "\n")
        write_md(out / "vgi.md", saved)
        if saved.get("records"):
            write_svg(out / "vgi.svg", saved["records"])
    else:
        debug_child(args.n, args.m, args.k)


if __name__ == "__main__":
    main()
