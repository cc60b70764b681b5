"""`bench/results/server.{md,svg}` from the suite's JSON: the machine, the targets, the in-process
ceiling each query's ratios use, one table per workload with every peer side by side, and a chart of
the best single-connection throughput per peer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import charts
import targets

PEER_ORDER = ["quiver", "quiver node", "quiver flight sql", "duckdb in-process", "hyper", "quack", "postgresql"]
WORKLOADS = [
    ("insert.bulk", "Bulk insert", "MB/s at 24 B/row."),
    ("query.full_scan", "Full scan → Arrow", "MB/s at 24 B/row."),
    ("query.filtered", "Filtered scan (`sensor_id = 5`, id and value) → Arrow", "MB/s at 12 B/row of the result."),
    (
        "query.aggregation",
        "Aggregation (`GROUP BY sensor_id`, 10 rows back)",
        "rows/s counts the 10 result rows: read the time.",
    ),
]
CHART_WORKLOADS = ["insert.bulk", "query.full_scan", "query.filtered"]


def fmt_s(s: float) -> str:
    return f"{s * 1e3:,.1f} ms" if s < 1 else f"{s:,.2f} s"


def fmt_rate(r: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if r >= div:
            return f"{r / div:,.2f} {unit}"
    return f"{r:,.0f}"


def order_key(r: dict[str, Any]) -> tuple:
    peer = PEER_ORDER.index(r["peer"]) if r["peer"] in PEER_ORDER else len(PEER_ORDER)
    return (peer, r["connections"], r["variant"], r["transport"], r["api"])


def machine_block(saved: dict[str, Any]) -> list[str]:
    info = saved["info"]
    lines = [
        f"**machine:** {info['cpu']} · {info['nproc']} cores · {info['memory_gb']:.1f} GB · Linux {info['kernel']} · "
        f"Python {info['python']} · commit {info['commit']} · {info['date']} · suite wall time {info['wall_s']:.0f} s",
        "",
        f"**run:** {info['rows']:,} rows per workload, N = {info['workers']} connections for the parallel variants, "
        f"median [min–max] over {info['measured']} measured runs after {info['warmup']} warm-up run(s); "
        "a fresh empty table for every insert run; every result checked against the rows' checksum "
        "(quiver_arrow_drain's, whose batches never reach Python, by its row count).",
        "",
        "| peer | versions | status |",
        "|---|---|---|",
    ]
    for name in PEER_ORDER:
        peer = saved["peers"].get(name)
        if peer is None:
            continue
        versions = ", ".join(f"{k} {v}" for k, v in peer.get("versions", {}).items()) or "—"
        lines.append(f"| {name} | {versions} | {peer['status']} |")
    return lines


def targets_block(targets: list[dict[str, Any]]) -> list[str]:
    lines = ["## Targets (ratios from this run)", "", "| target | measured | met? |", "|---|---|---|"]
    for t in targets:
        measured = "—" if t["measured"] is None else f"{t['measured']:.2f}×"
        met = "**met**" if t["met"] else "missed"
        lines.append(f"| {t['target']} | {measured} ({t['detail']}) | {met} |")
    return lines


def ceiling_block(records: list[dict[str, Any]]) -> list[str]:
    """Which in-process Arrow path is the ceiling of each query workload in this run, and the others."""
    lines = [
        "## The in-process ceiling",
        "",
        "In-process DuckDB reads each query's Arrow result several ways (bench/peers/server/duckdb_inprocess.py): "
        "Python's `to_arrow_table()`, which builds the whole pyarrow table; `to_arrow_reader()` and the Arrow C "
        "stream, read batch by batch and let go; and `quiver_arrow_drain(q, b)` from the bench flavour of quiver's "
        "extension, which runs q through the server's own session operations (DuckDB's parallel Arrow result "
        "stream, one batch per cursor step, as the server reads it for a client) and releases each batch in "
        "process. A server cannot outrun the way DuckDB produces its result, so the ceiling of a workload is the "
        "fastest of these paths in the same run, and every `× ceiling` figure and the scan target are fractions "
        "of it; the other paths stay as rows below so the choice can be checked.",
        "",
        "| workload | in-process path | rows/s | × ceiling |",
        "|---|---|---|---|",
    ]
    for workload, title, _ in WORKLOADS[1:]:
        top = targets.ceiling(records, workload)
        mine = [
            r
            for r in records
            if r["peer"] == targets.IN_PROCESS and r["workload"] == workload and r["connections"] == 1
        ]
        for r in sorted(mine, key=lambda r: -r["rows_per_s"]):
            mark = " **(ceiling)**" if r is top else ""
            lines.append(
                f"| {title} | {r['api']}{mark} | {fmt_rate(r['rows_per_s'])} | {r['rows_per_s'] / top['rows_per_s']:.2f}× |"
            )
    return lines if len(lines) > 6 else []


def workload_block(records: list[dict[str, Any]], workload: str, title: str, reading: str) -> list[str]:
    recs = sorted((r for r in records if r["workload"] == workload), key=order_key)
    if not recs:
        return []
    table_rows = recs[0]["table_rows"]
    lines = [
        f"## {title}",
        "",
        f"Table of {table_rows:,} rows; {reading}",
        "",
        "| peer | variant | API | flavor | transport | database | rows | median [min–max] | rows/s | MB/s | × ceiling |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        ratio = "—" if r.get("vs_in_process") is None else f"{r['vs_in_process']:.2f}×"
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(
            f"| {r['peer']} | {r['variant']} | {r['api']}{note} | {r['flavor']} | {r['transport']} | {r['database']} | "
            f"{r['rows']:,} | {fmt_s(r['median_s'])} [{fmt_s(r['min_s'])}–{fmt_s(r['max_s'])}] | "
            f"{fmt_rate(r['rows_per_s'])} | {r['mb_per_s']:,.1f} | {ratio} |"
        )
    return lines


def write_md(path: Path, saved: dict[str, Any]) -> None:
    records = saved["records"]
    lines = ["# `./quiver bench server`", ""]
    lines += machine_block(saved)
    lines += [""]
    if not saved["quiver"]["present"]:
        lines += [f"**quiver's rows are absent from this run:** {saved['quiver']['reason']}", ""]
    lines += [
        "Seed 002's suite: `measurements(id INT NOT NULL, sensor_id INT, value DOUBLE, timestamp BIGINT)`, the "
        "seed's rows (bench/peers/server/rows.py), each peer through its own public client in its own process. "
        "The claim is the ratio; absolute numbers are this machine's. MB = 10⁶ bytes.",
        "",
    ]
    lines += targets_block(saved["targets"])
    ceiling = ceiling_block(records)
    if ceiling:
        lines += ["", *ceiling]
    lines += ["", "![best single-connection rows/s per peer (log scale)](server.svg)", ""]
    for workload, title, reading in WORKLOADS:
        block = workload_block(records, workload, title, reading)
        if block:
            lines += [*block, ""]
    errors = [e for peer in saved["peers"].values() for e in peer.get("errors", [])]
    if errors:
        lines += ["## Failures", ""]
        lines += [f"- {e['peer']}: {e.get('workload', '')} {e.get('api', '')}: {e['message']}" for e in errors]
        lines += [""]
    lines += ["## Notes", ""]
    for name, peer in saved["peers"].items():
        lines += [f"- **{name}**: {n}" for n in peer.get("notes", [])]
    path.write_text("\n".join(lines).rstrip() + "\n")


def chart_bars(records: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """(workload, peer, rows/s): each peer's fastest single-connection record per charted workload."""
    bars = []
    for workload in CHART_WORKLOADS:
        for peer in PEER_ORDER:
            mine = [r for r in records if r["workload"] == workload and r["peer"] == peer and r["connections"] == 1]
            if mine:
                bars.append((workload, peer, max(r["rows_per_s"] for r in mine)))
    return bars


def write_svg(path: Path, records: list[dict[str, Any]]) -> None:
    lo = 1e5
    charts.write_log_bars(
        path,
        chart_bars(records),
        title=f"best single-connection rows/s per peer (log scale, from {fmt_rate(lo)})",
        lo=lo,
        fmt=fmt_rate,
        colors={
            "quiver": "#2b7bb9",
            "quiver node": "#3f9e5a",
            "quiver flight sql": "#6aa7d6",
            "duckdb in-process": "#7a7a7a",
        },
        default_color="#e08a2c",
        label_width=260,
        group_count=len(CHART_WORKLOADS),
    )
