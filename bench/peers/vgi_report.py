"""The report of ``./quiver bench vgi``: vgi.md (tables, targets, where the time goes, from the
shared-memory debug pass, then VGI's own workloads) and vgi.svg, from the saved records.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import vgi_workloads_report

# The Python and Java SDKs' workers run at 1/SCALE of the Rust worker's sizes (the run reads these too).
PYTHON_SCALE = 10
JAVA_SCALE = 10
JAVA_TARGETS = {"scan_shm_vs_rust_shm": 0.5, "scan_shm_vs_inline": 2.5}


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
                "in_place": int(placed[1]) if (placed := re.search(r"(\d+) in place", line)) else 0,
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
    """vgi.md: the parts the results hold (scan/echo/scalar/aggregate, VGI's own workloads)."""
    info = saved.get("info") or saved["vgi_benchmarks"]["info"]
    L: list[str] = []
    L.append("# `./quiver bench vgi`")
    L.append("")
    L.append(
        f"**machine:** nproc {info['nproc']}, {info['cpu']}, Linux {info['kernel']} · Python {info['python']} · "
        f"duckdb {info['duckdb']} · commit {info['commit']} · {info['date']} · suite wall time {info['wall_s']:.0f} s"
    )
    L.append("")
    if saved.get("records"):
        L.extend(page_md(saved))
    L.extend(vgi_workloads_report.section(saved))
    path.write_text("\n".join(L) + "\n")


def page_md(saved: dict[str, Any]) -> list[str]:
    """Scan, echo, scalar and aggregate: the Rust worker's tables, the debug pass, Python and Java."""
    info, recs = saved["info"], saved["records"]
    by = {(r["workload"], r["variant"]): r for r in recs}
    sz = info["sizes"]
    L: list[str] = []
    L.append(
        "VGI's benchmark page, on this machine: the `allinone` worker's functions under DuckDB through quiver's "
        f"extension (`ATTACH 'launch:target/release/quiver-allinone' AS w (TYPE quiver)`), `SET threads = {info['threads']}`, "
        "shared memory off (inline pipe) and on (`VGI_RPC_SHM_SIZE_BYTES` = "
        f"{info['shm_bytes'] >> 20} MiB in the DuckDB process before ATTACH), and **in the same run** the in-process "
        "ceiling: the same query against a function that lives inside DuckDB. "
        + (
            "A workload's variants take turns, one run of each per repetition, each on a connection of its own. "
            if info.get("in_turn")
            else ""
        )
        + f"Every figure is **median [min–max] over "
        f"{info['measured']} measured runs after {info['warmup']} warm-up** (LOAD/ATTACH discarded). "
        "`numbers` batches are 4M rows (32 MB), as in the seed. Read the **ratios**; absolute numbers are this 2-vCPU VM's."
    )
    L.append("")
    # Targets
    scan_shm, scan_c = by[("scan", "shm")], by[("scan", "in-process")]
    echo_shm, echo_in, echo_c = by[("echo", "shm")], by[("echo", "inline")], by[("echo", "in-process")]
    sc_shm, sc_in = by[("scalar", "shm")], by[("scalar", "inline")]
    best_sc = max(sc_shm, sc_in, key=lambda r: r["rows_per_s"])
    L.append("## Targets")
    L.append("")
    L.append("| target | measured | met? |")
    L.append("|---|---|---|")
    # A results file from before the target records held a dict of thresholds: no rows from it.
    records = saved["targets"] if isinstance(saved["targets"], list) else []
    measured = {t["target"]: t for t in records}
    words = {
        "scan_vs_ceiling": (
            "scan over shm ≥ {t}× the in-process ceiling",
            f"{fmt_rows(scan_shm['rows_per_s'])}rows/s vs {fmt_rows(scan_c['rows_per_s'])}rows/s",
        ),
        "scan_shm_vs_inline": ("scan over shm ≥ {t}× inline", ""),
        "echo_vs_ceiling": (
            "echo round trip ≥ {t}× the in-process passthrough (the better transport)",
            f"shm {fmt_x(echo_shm['vs_in_process'])}, inline {fmt_x(echo_in['vs_in_process'])}; "
            f"in process {fmt_rows(echo_c['rows_per_s'])}rows/s",
        ),
        "scalar_vs_upper": (
            "upper_case ≥ {t}× DuckDB's upper() on the same strings (the better transport)",
            f"{best_sc['variant']} {best_sc['rows_per_s'] / 1e6:.1f} Mrows/s vs "
            f"{by[('scalar', 'in-process')]['rows_per_s'] / 1e6:.1f}",
        ),
        "shm_vs_inline_lowest": (
            "shared memory never slower than inline: the lowest shm ÷ inline over the workloads ≥ {t}",
            "",
        ),
    }
    for name, (text, detail) in words.items():
        if name in measured:
            record = measured[name]
            suffix = f" ({detail})" if detail else ""
            L.append(
                f"| {text.format(t=record['threshold'])} | {fmt_x(record['measured'])}{suffix} | {met(record['met'])} |"
            )
    L.append("")
    L.append("![throughput per workload: inline vs shm vs in-process (log scale)](vgi.svg)")
    L.append("")
    # Per-workload tables in the seed's shape
    for w in ("scan", "echo", "scalar", "aggregate"):
        wr = [r for r in recs if r["workload"] == w]
        ws = {r["variant"]: r for r in wr}
        if "inline" not in ws:
            continue
        title = {
            "scan": f"Scan — {sz['scan']:,} rows ({ws['inline']['bytes'] / 1e9:.0f} GB), one direction",
            "echo": f"Round trip — {sz['echo']:,} rows ({ws['inline']['bytes'] / 1e9:.1f} GB over three transfers)",
            "scalar": f"Scalar — upper_case over {sz['scalar']:,} strings ({ws['inline']['bytes'] / 1e9:.2f} GB both directions)",
            "aggregate": f"Aggregate — sum_int and avg_double per group over {ws['inline']['rows']:,} numbers",
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
        "engine → echo, echo → engine); scalar the strings' UTF-8 bytes + 4-byte offsets, out and back; aggregate "
        "8 B/row from numbers() plus 16 B/row (value and group id) to each of the two aggregates. "
        "In-process columns use the same byte count (the data the worker path moves), so MB/s is comparable across a row."
    )
    L.append("")
    L.extend(where_time_goes(saved))
    L.extend(python_worker_section(saved))
    L.extend(java_worker_section(saved))
    return L


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
        L.extend(analysis(w, by, d, worker, engine, echo_threshold(saved)))
        L.append("")
    return L


def echo_threshold(saved: dict[str, Any]) -> float:
    """The echo target's threshold as the run recorded it."""
    records = saved["targets"] if isinstance(saved["targets"], list) else []
    return next((t["threshold"] for t in records if t["target"] == "echo_vs_ceiling"), float("nan"))


def analysis(w: str, by: dict, d: dict, worker: list, engine: list, echo_target: float) -> list[str]:
    """Plain-words reading of the figures (computed from this run's numbers)."""
    out = []
    if w == "scan":
        shm, inl, c = by[("scan", "shm")], by[("scan", "inline")], by[("scan", "in-process")]
        busy = sum(x["busy"] for x in worker)
        emit = sum(x["emit"] for x in worker)
        proc = sum(x["process"] for x in worker)
        wall = d.get("wall_s", 0) * 1e3
        placed = sum(x["in_place"] for x in worker)
        sent = sum(x["out_shm"] for x in worker)
        out.append(
            f"Reading: over shm the scan runs at {shm['mb_per_s']:,.0f} MB/s against {c['mb_per_s']:,.0f} MB/s in process. "
            f"The worker spends {proc:.0f} ms generating its batches straight into the segment and {emit:.0f} ms framing "
            f"and handing them over ({placed} of its {sent} shm batches built in place, no copy) for {wall:.0f} ms of query "
            "wall time on 2 vCPUs that the worker and DuckDB share: every byte is written once by the worker and read once "
            "by DuckDB's Arrow scan and sum, from memory (a 32 MB batch outgrows the caches), where the in-process function "
            "writes each value into a cache-sized vector and sums it there. "
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
            f"generator's vector to the count by reference — so the {echo_target}× target asks the worker path to beat a "
            "zero-copy, zero-transport plan by a factor no three-transfer path can reach on this VM (it would mean ≥ "
            f"{echo_target * c['mb_per_s'] / 1e3:,.0f} GB/s of column data across processes; memcpy here is 10–16 GB/s, "
            "see rpc.md). "
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

    by = {(r["workload"], r["variant"]): r for r in recs}
    groups = [
        ("scan", "scan: sum(numbers)"),
        ("echo", "round trip: echo(numbers)"),
        ("scalar", "scalar: upper_case"),
        ("aggregate", "aggregate: sum_int, avg_double"),
    ]
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
