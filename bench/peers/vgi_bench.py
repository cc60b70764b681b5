"""`./quiver bench vgi`: VGI's benchmark page (scan, echo, upper_case) on this machine.

The allinone worker's functions under DuckDB 2.0.0 through quiver's extension, shared memory off
(inline pipe) then on, beside the in-process ceiling measured in the same run:

    scan        SELECT sum(n) FROM w.numbers(N)                                  vs quiver_numbers(N)
    round trip  SELECT count(*) FROM w.echo((SELECT * FROM w.numbers(M)))        vs an in-process passthrough
    scalar      SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range(K) t(i)  vs DuckDB's upper()

Usage (with /work/main/.venv/bin/python):
    python bench/peers/vgi_bench.py run [--warmup W] [--measured R] [--quick] [--out DIR]
    python bench/peers/vgi_bench.py report [DIR]       # rewrite vgi.{md,svg} from vgi.json
    python bench/peers/vgi_bench.py debug ...          # internal: one shm run each, VGI_RPC_SHM_DEBUG=1

Each figure is median [min–max] over MEASURED runs after WARMUP runs (LOAD/ATTACH discarded),
SET threads = 2. Shared memory is switched on by VGI_RPC_SHM_SIZE_BYTES in this process's
environment before ATTACH (the extension reads it there). A separate debug pass re-runs each
workload once over shm with VGI_RPC_SHM_DEBUG=1 and keeps both sides' timeline lines for the md.
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

ROOT = Path(__file__).resolve().parents[2]
# The bench flavour of the extension: the product plus the in-process ceiling quiver_numbers(n)
# (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh, which ./quiver bench vgi runs first).
EXTENSION = Path(
    os.environ.get("QUIVER_EXTENSION", ROOT / "target" / "extension" / "bench" / "quiver.duckdb_extension")
)
WORKER = ROOT / "target" / "release" / "quiver-allinone"
# The Python SDK's allinone (quiver.vgi.allinone), attached the same way; run at 1/10 of the sizes.
PYTHON_WORKER = f"{sys.executable} -m quiver.vgi.allinone"
PYTHON_SCALE = 10
# The Java SDK's AllInOne (java/bin/quiver-allinone-java) on a JDK 22+, so shared memory goes through
# java.lang.foreign; run at 1/10 of the sizes like the Python worker.
JAVA_WORKER = ROOT / "java" / "bin" / "quiver-allinone-java"
JAVA_JDK = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
JAVA_SCALE = 10
JAVA_TARGETS = {"scan_shm_vs_rust_shm": 0.5, "scan_shm_vs_inline": 2.5}
SHM_BYTES = 256 << 20
THREADS = 2

# Sizes: each run a few seconds on the slowest variant of the workload (2 vCPU EPYC VM).
SCAN_ROWS = 2_000_000_000  # 16 GB of BIGINT, one direction
ECHO_ROWS = 200_000_000  # 1.6 GB per transfer, three transfers
SCALAR_ROWS = 50_000_000  # 50M strings, both directions

TARGETS = {
    "scan_vs_ceiling": 0.5,
    "scan_shm_vs_inline": 2.5,
    "echo_vs_ceiling": 0.3,
    "scalar_mrows": 20.0,
}


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
    ]


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
    result = None
    for _ in range(warmup):
        result = con.execute(sql).fetchone()[0]
    times = []
    for _ in range(measured):
        start = time.perf_counter()
        result = con.execute(sql).fetchone()[0]
        times.append(time.perf_counter() - start)
    return times, result


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


def parse_timeline(lines: list[str]) -> list[dict[str, Any]]:
    """One entry per connection: who reports, batch counts, busy split, waiting."""
    conns = []
    pending: dict[str, Any] | None = None
    for line in lines:
        if "conn closed" in line:
            m = re.search(r"outbound shm=(\d+)/(\d+).*inbound shm=(\d+)/(\d+)", line)
            pending = {
                "side": "engine" if "conn closed worker '" in line else "worker",
                "out_shm": int(m[1]),
                "out": int(m[2]),
                "in_shm": int(m[3]),
                "in": int(m[4]),
            }
        elif "timeline" in line and pending is not None:
            m = re.search(
                r"-busy=([\d.]+) ms \(resolve=([\d.]+) process=([\d.]+) emit=([\d.]+)\), waiting=([\d.]+) ms", line
            )
            pending.update(
                busy=float(m[1]), resolve=float(m[2]), process=float(m[3]), emit=float(m[4]), waiting=float(m[5])
            )
            conns.append(pending)
            pending = None
    return conns


# ---------------------------------------------------------------------------------------------
# Run


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
    started = time.perf_counter()
    scale = 10 if args.quick else 1
    n, m, k = SCAN_ROWS // scale, ECHO_ROWS // scale, SCALAR_ROWS // scale
    for path in (EXTENSION, WORKER):
        if not path.exists():
            sys.exit(
                f"vgi-bench: {path} is missing (run ./quiver setup, then QUIVER_BENCH_FUNCTIONS=1 extension/build.sh)"
            )
    ws = workloads(n, m, k)
    recs: list[dict[str, Any]] = []
    for shm in (False, True):
        variant = "shm" if shm else "inline"
        con = connect(shm, attach=True)
        for w in ws:
            times, result = measure(con, w["worker_sql"], args.warmup, args.measured)
            recs.append(record(w, variant, w["worker_sql"], times, result))
            log(f"{w['workload']:<7} {variant:<10} {fmt_s(recs[-1])}  {recs[-1]['rows_per_s'] / 1e6:,.1f} Mrows/s")
        con.execute("DETACH w")
        con.close()
    con = connect(False, attach=False)
    for w in ws:
        for variant, sql, note in w["ceilings"]:
            times, result = measure(con, sql, args.warmup, args.measured)
            recs.append(record(w, variant, sql, times, result, note))
            log(f"{w['workload']:<7} {variant:<10} {fmt_s(recs[-1])}  {recs[-1]['rows_per_s'] / 1e6:,.1f} Mrows/s")
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
        quick=args.quick,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved = {
        "info": info,
        "targets": TARGETS,
        "records": recs,
        "debug": debug,
        "python_worker": python_recs,
        "java_worker": java_recs,
    }
    (out / "vgi.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_md(out / "vgi.md", saved)
    write_svg(out / "vgi.svg", recs)
    log(f"done in {info['wall_s']:.0f} s; results in {out}/vgi.{{md,json,svg}}")


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
    if not (ROOT / "java" / "target" / "quiver-java-0.1.0.jar").exists() or not Path(JAVA_JDK).exists():
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


def java_worker_section(saved: dict[str, Any]) -> list[str]:
    """The md section for the Java worker's rows, beside the Rust worker's, with its targets."""
    recs = saved.get("java_worker") or []
    if not recs:
        return []
    rust = {(r["workload"], r["variant"]): r for r in saved["records"]}
    java = {(r["workload"], r["variant"]): r for r in recs}
    lines = [
        "",
        "## The Java worker (`java/bin/quiver-allinone-java`, Arrow Java on Temurin 25)",
        "",
        f"The same queries at 1/{JAVA_SCALE} of the sizes above, against the Java SDK's AllInOne attached with "
        "`ATTACH 'launch:java/bin/quiver-allinone-java' AS w (TYPE quiver)` (`QUIVER_JAVA` = Temurin 25, so the "
        "worker maps the segment through java.lang.foreign); the Rust worker's rows (full size) for comparison.",
        "",
        "| workload | variant | rows | median [min–max] | Mrows/s | MB/s | Rust worker Mrows/s (same variant) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        same = rust.get((r["workload"], r["variant"].split()[-1]))
        rust_rate = f"{same['rows_per_s'] / 1e6:,.1f}" if same else "—"
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r['rows']:,} | {fmt_s(r)} | {r['rows_per_s'] / 1e6:,.1f} "
            f"| {r['mb_per_s']:,.0f} | {rust_rate} |"
        )
    scan_shm, scan_in = java.get(("scan", "java shm")), java.get(("scan", "java inline"))
    rust_shm = rust.get(("scan", "shm"))
    if scan_shm and scan_in and rust_shm:
        vs_rust = scan_shm["rows_per_s"] / rust_shm["rows_per_s"]
        vs_inline = scan_shm["rows_per_s"] / scan_in["rows_per_s"]
        lines += [
            "",
            "| target | measured | met? |",
            "|---|---|---|",
            f"| Java scan over shm ≥ {JAVA_TARGETS['scan_shm_vs_rust_shm']}× the Rust worker's | {vs_rust:.2f}× | "
            f"{met(vs_rust >= JAVA_TARGETS['scan_shm_vs_rust_shm'])} |",
            f"| Java scan over shm ≥ {JAVA_TARGETS['scan_shm_vs_inline']}× its own inline | {vs_inline:.2f}× | "
            f"{met(vs_inline >= JAVA_TARGETS['scan_shm_vs_inline'])} |",
        ]
        for workload in ("scan", "echo"):
            shm, inline = java.get((workload, "java shm")), java.get((workload, "java inline"))
            if shm and inline:
                ratio = shm["rows_per_s"] / inline["rows_per_s"]
                lines.append(f"| Java {workload}: shm never slower than inline | {ratio:.2f}× | {met(ratio >= 1.0)} |")
    return lines


def python_worker_section(saved: dict[str, Any]) -> list[str]:
    """The md section for the Python worker's rows, beside the Rust worker's at full size."""
    recs = saved.get("python_worker") or []
    if not recs:
        return []
    rust = {(r["workload"], r["variant"]): r for r in saved["records"]}
    lines = [
        "",
        "## The Python worker (`quiver.vgi.allinone`, pure Python + pyarrow)",
        "",
        f"The same queries at 1/{PYTHON_SCALE} of the sizes above, against the Python SDK's allinone attached "
        f"with `ATTACH 'launch:python -m quiver.vgi.allinone' AS w (TYPE quiver)`; the Rust worker's rows "
        "(full size) for comparison.",
        "",
        "| workload | variant | rows | median [min–max] | Mrows/s | MB/s | Rust worker Mrows/s (same variant) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        same = rust.get((r["workload"], r["variant"].split()[-1]))
        rust_rate = f"{same['rows_per_s'] / 1e6:,.1f}" if same else "—"
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r['rows']:,} | {fmt_s(r)} | {r['rows_per_s'] / 1e6:,.1f} "
            f"| {r['mb_per_s']:,.0f} | {rust_rate} |"
        )
    return lines


# ---------------------------------------------------------------------------------------------
# Report


def fmt_t(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_s(r: dict[str, Any]) -> str:
    return f"{fmt_t(r['median_s'])} [{fmt_t(r['min_s'])}–{fmt_t(r['max_s'])}]"


def fmt_rows(x: float) -> str:
    return f"{x / 1e9:.2f} G" if x >= 1e9 else f"{x / 1e6:.1f} M"


def fmt_x(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def met(ok: bool) -> str:
    return "**met**" if ok else "missed"


def write_md(path: Path, saved: dict[str, Any]) -> None:
    info, recs = saved["info"], saved["records"]
    by = {(r["workload"], r["variant"]): r for r in recs}
    sz = info["sizes"]
    L: list[str] = []
    L.append("# `./quiver bench vgi`")
    L.append("")
    L.append(
        f"**machine:** nproc {info['nproc']}, {info['cpu']}, Linux {info['kernel']} · Python {info['python']} · "
        f"duckdb {info['duckdb']} · commit {info['commit']} · {info['date']} · suite wall time {info['wall_s']:.0f} s"
    )
    L.append("")
    L.append(
        "VGI's benchmark page, on this machine: the `allinone` worker's functions under DuckDB through quiver's "
        f"extension (`ATTACH 'launch:target/release/quiver-allinone' AS w (TYPE quiver)`), `SET threads = {info['threads']}`, "
        "shared memory off (inline pipe) then on (`VGI_RPC_SHM_SIZE_BYTES` = "
        f"{info['shm_bytes'] >> 20} MiB in the DuckDB process before ATTACH), and **in the same run** the in-process "
        f"ceiling: the same query against a function that lives inside DuckDB. Every figure is **median [min–max] over "
        f"{info['measured']} measured runs after {info['warmup']} warm-up** (LOAD/ATTACH discarded). "
        "`numbers` batches are 4M rows (32 MB), as in the seed. Read the **ratios**; absolute numbers are this 2-vCPU VM's."
    )
    L.append("")
    # Targets
    scan_shm, scan_c = by[("scan", "shm")], by[("scan", "in-process")]
    echo_shm, echo_in, echo_c = by[("echo", "shm")], by[("echo", "inline")], by[("echo", "in-process")]
    sc_shm, sc_in = by[("scalar", "shm")], by[("scalar", "inline")]
    best_sc = max(sc_shm, sc_in, key=lambda r: r["rows_per_s"])
    T = saved["targets"]
    L.append("## Targets")
    L.append("")
    L.append("| target | measured | met? |")
    L.append("|---|---|---|")
    L.append(
        f"| scan over shm ≥ {T['scan_vs_ceiling']}× the in-process ceiling | {fmt_x(scan_shm['vs_in_process'])} "
        f"({fmt_rows(scan_shm['rows_per_s'])}rows/s vs {fmt_rows(scan_c['rows_per_s'])}rows/s) | {met(scan_shm['vs_in_process'] >= T['scan_vs_ceiling'])} |"
    )
    L.append(
        f"| scan over shm ≥ {T['scan_shm_vs_inline']}× inline | {fmt_x(scan_shm['shm_over_inline'])} | "
        f"{met(scan_shm['shm_over_inline'] >= T['scan_shm_vs_inline'])} |"
    )
    L.append(
        f"| echo round trip (shm) ≥ {T['echo_vs_ceiling']}× the in-process passthrough | {fmt_x(echo_shm['vs_in_process'])} "
        f"({fmt_rows(echo_shm['rows_per_s'])}rows/s vs {fmt_rows(echo_c['rows_per_s'])}rows/s; inline {fmt_x(echo_in['vs_in_process'])}) | "
        f"{met(max(echo_shm['vs_in_process'], echo_in['vs_in_process']) >= T['echo_vs_ceiling'])} |"
    )
    L.append(
        f"| upper_case ≥ {T['scalar_mrows']:.0f} Mrows/s on {info['threads']} cores | {best_sc['rows_per_s'] / 1e6:.1f} Mrows/s "
        f"({best_sc['variant']}; {'inline' if best_sc is sc_shm else 'shm'} {min(sc_shm, sc_in, key=lambda r: r['rows_per_s'])['rows_per_s'] / 1e6:.1f}) | "
        f"{met(best_sc['rows_per_s'] / 1e6 >= T['scalar_mrows'])} |"
    )
    L.append("")
    L.append("![throughput per workload: inline vs shm vs in-process (log scale)](vgi.svg)")
    L.append("")
    # Per-workload tables in the seed's shape
    for w in ("scan", "echo", "scalar"):
        wr = [r for r in recs if r["workload"] == w]
        ws = {r["variant"]: r for r in wr}
        title = {
            "scan": f"Scan — {sz['scan']:,} rows ({ws['inline']['bytes'] / 1e9:.0f} GB), one direction",
            "echo": f"Round trip — {sz['echo']:,} rows ({ws['inline']['bytes'] / 1e9:.1f} GB over three transfers)",
            "scalar": f"Scalar — upper_case over {sz['scalar']:,} strings ({ws['inline']['bytes'] / 1e9:.2f} GB both directions)",
        }[w]
        L.append(f"## {title}")
        L.append("")
        L.append(f"`{ws['inline']['sql']}`")
        L.append("")
        variants = [v for v in ("inline", "shm", "in-process", "in-process range()") if v in ws]
        L.append(
            "| metric | " + " | ".join({"inline": "Inline", "shm": "Shared memory"}.get(v, v) for v in variants) + " |"
        )
        L.append("|---|" + "---|" * len(variants))
        L.append("| Median time | " + " | ".join(fmt_t(ws[v]["median_s"]) for v in variants) + " |")
        L.append(
            "| Range (min–max) | "
            + " | ".join(f"{fmt_t(ws[v]['min_s'])}–{fmt_t(ws[v]['max_s'])}" for v in variants)
            + " |"
        )
        L.append("| Throughput | " + " | ".join(f"{ws[v]['mb_per_s']:,.0f} MB/s" for v in variants) + " |")
        L.append("| Rows / second | " + " | ".join(f"{fmt_rows(ws[v]['rows_per_s'])}" for v in variants) + " |")
        L.append(
            "| Speedup (shm ÷ inline) | "
            + " | ".join(fmt_x(ws[v]["shm_over_inline"]) if v == "shm" else "—" for v in variants)
            + " |"
        )
        L.append("| ÷ in-process ceiling | " + " | ".join(fmt_x(ws[v]["vs_in_process"]) for v in variants) + " |")
        L.append("")
        for v in variants:
            if ws[v]["note"]:
                L.append(f"- **{v}**: `{ws[v]['sql']}` — {ws[v]['note']}.")
        L.append("")
    L.append(
        "MB/s counts column data moved: scan 8 B/row once; round trip 8 B/row × 3 transfers (numbers → engine, "
        "engine → echo, echo → engine); scalar the strings' UTF-8 bytes + 4-byte offsets, out and back. "
        "In-process columns use the same byte count (the data the worker path moves), so MB/s is comparable across a row."
    )
    L.append("")
    L.extend(where_time_goes(saved))
    L.extend(python_worker_section(saved))
    L.extend(java_worker_section(saved))
    path.write_text("\n".join(L) + "\n")


def where_time_goes(saved: dict[str, Any]) -> list[str]:
    recs, debug = saved["records"], saved["debug"]
    by = {(r["workload"], r["variant"]): r for r in recs}
    L = ["## Where the time goes (`VGI_RPC_SHM_DEBUG=1`)", ""]
    L.append(
        "A separate pass re-ran each workload once over shm at ¼ size with `VGI_RPC_SHM_DEBUG=1`; each side prints, per "
        "connection, its batch counts and a busy/waiting split when the connection closes (the worker's lines reach us "
        "through the engine's stderr echo). Lines whose side is `worker` are the worker's own time (process = the method "
        "body, emit = encoding into the segment or the pipe); `engine` lines are the extension's client side. Socket paths "
        "are shortened to `<sock>`. The per-batch `resolved inbound` lines are counted, not quoted."
    )
    L.append("")
    if "error" in debug:
        L.append("The debug pass failed:\n\n```\n" + debug["error"] + "\n```\n")
    for w in ("scan", "echo", "scalar"):
        d = debug.get(w)
        if not d:
            continue
        conns = parse_timeline(d["lines"])
        worker = [c for c in conns if c["side"] == "worker"]
        engine = [c for c in conns if c["side"] == "engine"]

        def wsum(key: str, worker: list[dict[str, Any]] = worker) -> float:
            return sum(c[key] for c in worker)

        L.append(
            f"### {w} (debug run: {d['sizes'][w]:,} rows, {d.get('wall_s', float('nan')) * 1e3:.0f} ms wall, "
            f"{d['resolved']} pointer batches resolved zero-copy)"
        )
        L.append("")
        L.append("```")
        L.extend(d["lines"])
        L.append("```")
        L.append("")
        L.append(
            f"Worker side, all {len(worker)} connections: busy {wsum('busy'):.1f} ms (process {wsum('process'):.1f}, "
            f"emit {wsum('emit'):.1f}, resolve {wsum('resolve'):.1f}), waiting on the engine {wsum('waiting'):.1f} ms; "
            f"engine side waiting on the worker {sum(c['waiting'] for c in engine):.1f} ms over {len(engine)} connections; "
            f"batches worker→engine {sum(c['out'] for c in worker)} ({sum(c['out_shm'] for c in worker)} via shm), "
            f"engine→worker {sum(c['in'] for c in worker)} ({sum(c['in_shm'] for c in worker)} via shm)."
        )
        L.append("")
        L.extend(analysis(w, by, d, worker, engine))
        L.append("")
    return L


def analysis(w: str, by: dict, d: dict, worker: list, engine: list) -> list[str]:
    """Plain-words reading of the figures (computed from this run's numbers)."""
    out = []
    if w == "scan":
        shm, inl, c = by[("scan", "shm")], by[("scan", "inline")], by[("scan", "in-process")]
        busy = sum(x["busy"] for x in worker)
        emit = sum(x["emit"] for x in worker)
        proc = sum(x["process"] for x in worker)
        wall = d.get("wall_s", 0) * 1e3
        out.append(
            f"Reading: over shm the scan runs at {shm['mb_per_s']:,.0f} MB/s against {c['mb_per_s']:,.0f} MB/s in process. "
            f"The worker spends {proc:.0f} ms generating and {emit:.0f} ms emitting (writing the 32 MB batches into the segment "
            f"— the one copy left on this path) for {wall:.0f} ms of query wall time on 2 vCPUs that the worker and DuckDB "
            "share: every byte is written once by the worker (generate), once more into the segment (emit), then read by "
            "DuckDB's Arrow scan and sum, where the in-process function writes each value once and sums it. "
            f"Inline, the pipe adds a kernel copy each way: {inl['mb_per_s']:,.0f} MB/s."
        )
    elif w == "echo":
        shm, inl, c = by[("echo", "shm")], by[("echo", "inline")], by[("echo", "in-process")]
        # the echo stream: the connection with shm data both ways
        echo_conn = max(worker, key=lambda x: min(x["in_shm"], x["out_shm"]), default=None)
        eng = max(engine, key=lambda x: min(x["in_shm"], x["out_shm"]), default=None)
        wall = d.get("wall_s", 0) * 1e3
        text = (
            f"Reading: the round trip runs at {fmt_rows(shm['rows_per_s'])}rows/s over shm ({fmt_rows(inl['rows_per_s'])}rows/s inline) "
            f"against {fmt_rows(c['rows_per_s'])}rows/s for the in-process passthrough, which moves no bytes at all — DuckDB hands the "
            "generator's vector to the count by reference — so the 0.3× target asks the worker path to beat a zero-copy, "
            "zero-transport plan by a factor no three-transfer path can reach on this VM (it would mean ≥ "
            f"{0.3 * c['mb_per_s'] / 1e3:,.0f} GB/s of column data across processes; memcpy here is 10–16 GB/s, see rpc.md). "
        )
        if echo_conn:
            text += (
                f"In the debug run ({wall:.0f} ms wall), the echo stream carried {echo_conn['in']} batches in and {echo_conn['out']} out "
                f"({echo_conn['in_shm']}/{echo_conn['out_shm']} via shm), and the worker was busy on it for only {echo_conn['busy']:.1f} ms "
                f"(waiting {echo_conn['waiting']:.1f} ms for the engine)"
            )
            if eng:
                text += f"; the engine side of that stream waited {eng['waiting']:.1f} ms on the worker while itself busy {eng['busy']:.1f} ms"
            text += (
                ". So neither the copy into the segment nor echo's own work is the cost: it is DuckDB's table-in-out operator "
                "(Arrow ↔ DataChunk conversion of every input and output batch) plus one cross-process turn per input batch, "
                "on 2 vCPUs shared with the numbers scan that feeds it. At full size shm is "
                f"{shm['shm_over_inline']:.2f}× inline: it removes the pipe copies of the 32 MB numbers batches, not those per-turn costs."
            )
        out.append(text)
    else:
        shm, inl, c = by[("scalar", "shm")], by[("scalar", "inline")], by[("scalar", "in-process")]
        batches = sum(x["out"] for x in worker)
        wall = d.get("wall_s", 0) * 1e3
        busy = sum(x["busy"] for x in worker)
        ewait = sum(x["waiting"] for x in engine)
        per = (ewait - busy) / batches * 1e3 if batches else float("nan")
        out.append(
            f"Reading: DuckDB calls a scalar once per DataChunk, so {d['sizes']['scalar']:,} rows became {batches:,} request/reply "
            f"turns of ≤2048 rows on {len(worker)} worker connection(s) (with threads = 2). Each batch is ~20–40 KB, below the shm "
            f"threshold, so shm moves none of them: the gap between the variants in this run ({fmt_rows(inl['rows_per_s'])}rows/s inline, "
            f"{fmt_rows(shm['rows_per_s'])}rows/s shm) is not data movement, and it was not isolated (this shared 2-vCPU VM is noisy; "
            f"a --quick run and earlier probes saw the two within ±10 % of each other). Of the {wall:.0f} ms debug run, the worker was busy {busy:.1f} ms "
            f"(upper-casing is cheap); the engine waited {ewait:.1f} ms on it, i.e. ~{per:.0f} µs of cross-process wake-up per "
            "turn (a cross-CPU wake-up: see rpc.md's raw pipe round trip); the rest is DuckDB's own work on the same strings (range, cast to VARCHAR, "
            f"Arrow conversion, length, sum) — the in-process query with upper() runs at {fmt_rows(c['rows_per_s'])}rows/s. "
            "Going well past 20 Mrows/s needs fewer turns (several DataChunks per request, or pipelined requests so the "
            "worker's turn overlaps DuckDB's), not a faster upper_case."
        )
    return out


# ---------------------------------------------------------------------------------------------
# SVG: grouped bars, log scale, Mrows/s


def write_svg(path: Path, recs: list[dict[str, Any]]) -> None:
    import math

    by = {(r["workload"], r["variant"]): r for r in recs}
    groups = [("scan", "scan: sum(numbers)"), ("echo", "round trip: echo(numbers)"), ("scalar", "scalar: upper_case")]
    variants = [
        ("inline", "inline (pipe)", "#9aa5b1"),
        ("shm", "shared memory", "#2b7bb9"),
        ("in-process", "in-process ceiling", "#e07b39"),
    ]
    width, height = 760, 420
    left, right, top, bottom = 70, 20, 50, 80
    plot_h = height - top - bottom
    vals = [by[(g, v)]["rows_per_s"] / 1e6 for g, _ in groups for v, _, _ in variants if (g, v) in by]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))

    def y(v):
        return top + plot_h * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
        "quiver VGI under DuckDB: throughput per workload (Mrows/s, log scale)</text>",
    ]
    dec = lo
    while dec <= hi:
        for mult in (1, 2, 5):
            v = dec * mult
            if v > hi:
                break
            yy = y(v)
            out.append(
                f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{"#ccc" if mult == 1 else "#eee"}"/>'
            )
            if mult == 1 or hi / lo <= 1000:
                out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" fill="#444">{v:g}</text>')
        dec *= 10
    out.append(
        f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" text-anchor="middle">Mrows/s</text>'
    )
    gw = (width - left - right) / len(groups)
    bw = gw / (len(variants) + 1.5)
    for gi, (g, label) in enumerate(groups):
        x0 = left + gi * gw + bw * 0.75
        for vi, (v, _, color) in enumerate(variants):
            r = by.get((g, v))
            if not r:
                continue
            val = r["rows_per_s"] / 1e6
            x = x0 + vi * bw
            yy = y(val)
            out.append(
                f'<rect x="{x:.1f}" y="{yy:.1f}" width="{bw * 0.9:.1f}" height="{top + plot_h - yy:.1f}" fill="{color}">'
                f"<title>{g} {v}: {val:,.1f} Mrows/s, {r['mb_per_s']:,.0f} MB/s, {fmt_s(r)}</title></rect>"
            )
            out.append(
                f'<text x="{x + bw * 0.45:.1f}" y="{yy - 4:.1f}" text-anchor="middle" font-size="11">{val:,.0f}</text>'
            )
        out.append(
            f'<text x="{left + gi * gw + gw / 2:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{label}</text>'
        )
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#333"/>')
    lx = left
    for _, name, color in variants:
        out.append(f'<rect x="{lx}" y="{height - 30}" width="14" height="14" fill="{color}"/>')
        out.append(f'<text x="{lx + 20}" y="{height - 18}">{name}</text>')
        lx += 190
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


# ---------------------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--measured", type=int, default=5)
    r.add_argument("--quick", action="store_true", help="sizes ÷ 10 (a smoke test, not a result)")
    r.add_argument("--out", default=str(ROOT / "bench" / "results"))
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
        write_md(out / "vgi.md", saved)
        write_svg(out / "vgi.svg", saved["records"])
    else:
        debug_child(args.n, args.m, args.k)


if __name__ == "__main__":
    main()
