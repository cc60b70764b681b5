"""`bench/results/gateway.{md,svg}` from the suite's JSON: the machine, the targets, the loads,
one table per scenario with every peer side by side, and a chart of req/s at the top concurrency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import charts

PEER_ORDER = ["quiver gateway", "nginx", "roapi", "datasette"]
SCENARIOS = [
    ("local_table", "local_table: a customer drawn per request (every request queries the snapshot)"),
    ("cache_hit", "cache_hit: the same request again (the gateway answers from its response cache)"),
    ("revalidate_304", "revalidate_304: the same request with If-None-Match → 304, no body"),
    ("arrow_format", "arrow_format: local_table as an Arrow IPC stream"),
]
LOAD_FIELDS = [
    ("cold_load_ms", "cold load (ms)"),
    ("warm_load_ms", "warm load (ms)"),
    ("example_cold_load_ms", "examples/gateway cold (ms)"),
    ("example_warm_load_ms", "examples/gateway warm (ms)"),
    ("rss_mb", "RSS (MB)"),
    ("cache_disk_bytes", "state on disk (MB)"),
]


def peer_key(name: str) -> int:
    return PEER_ORDER.index(name) if name in PEER_ORDER else len(PEER_ORDER)


def machine_block(saved: dict[str, Any]) -> list[str]:
    info = saved["info"]
    lines = [
        f"**machine:** {info['cpu']} · {info['nproc']} cores · {info['memory_gb']:.1f} GB · Linux {info['kernel']} · "
        f"Python {info['python']} · commit {info['commit']} · {info['date']} · suite wall time {info['wall_s']:.0f} s",
        "",
        f"**run:** {info['rows']:,} rows; wrk {info['wrk']} with keep-alive connections at concurrency "
        f"{'/'.join(str(c) for c in info['concurrency'])}, {info['duration_s']} s per run, the median of "
        f"{info['passes']} passes; the load generator shares the machine with the service measured "
        f"(load average {info.get('load_average_at_start', 0):.1f} at the start).",
        "",
        ceiling_line(saved["records"]),
        "",
        "| peer | versions | status |",
        "|---|---|---|",
    ]
    for name in sorted(saved["peers"], key=peer_key):
        peer = saved["peers"][name]
        versions = ", ".join(f"{k} {v}" for k, v in peer.get("versions", {}).items()) or "—"
        lines.append(f"| {name} | {versions} | {peer['status']} |")
    return lines


def ceiling_line(records: list[dict[str, Any]]) -> str:
    """What wrk itself can drive here: nginx's best req/s over every scenario and concurrency."""
    nginx = [r for r in records if r["peer"] == "nginx"]
    if not nginx:
        return "**load generator's ceiling:** not measured (nginx did not run)."
    best = max(nginx, key=lambda r: r["req_per_s"])
    return (
        f"**load generator's ceiling:** wrk drove nginx to {best['req_per_s']:,.0f} req/s "
        f"({best['scenario']}, c={best['connections']}) on this machine: a service below that is measured, not wrk."
    )


def targets_block(targets: list[dict[str, Any]]) -> list[str]:
    lines = ["## Targets (from this run)", "", "| target | measured | met? |", "|---|---|---|"]
    for t in targets:
        measured = "—" if t["measured"] is None else f"{t['measured']:.2f}×"
        met = "**met**" if t["met"] else "missed"
        lines.append(f"| {t['target']} | {measured} ({t['detail']}) | {met} |")
    return lines


def loads_block(peers: dict[str, Any]) -> list[str]:
    lines = [
        "## Loads and footprint",
        "",
        "Process start → ready (the gateway: `/ready` 200 on its admin port; the others: their first 200). "
        "Cold: an empty state directory; warm: the state the cold start left. RSS after the runs, the gateway "
        "with the quiver server it spawned.",
        "",
        "| peer | " + " | ".join(title for _, title in LOAD_FIELDS) + " |",
        "|---|" + "---|" * len(LOAD_FIELDS),
    ]
    for name in sorted(peers, key=peer_key):
        loads = peers[name].get("loads", {})
        if not loads:
            continue
        cells = []
        for key, _ in LOAD_FIELDS:
            value = loads.get(key)
            if value is None:
                cells.append("—")
            elif key == "cache_disk_bytes":
                cells.append(f"{value / 1e6:,.1f}")
            else:
                cells.append(f"{value:,.0f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def scenario_block(records: list[dict[str, Any]], scenario: str, title: str) -> list[str]:
    recs = sorted(
        (r for r in records if r["scenario"] == scenario), key=lambda r: (r["connections"], peer_key(r["peer"]))
    )
    if not recs:
        return []
    lines = [
        f"## {title}",
        "",
        "| c | peer | req/s | p50 ms | p95 ms | p99 ms | max ms | MB/s | errors | × nginx req/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        ceiling = next(
            (x for x in recs if x["peer"] == "nginx" and x["connections"] == r["connections"]),
            None,
        )
        ratio = f"{r['req_per_s'] / ceiling['req_per_s']:.2f}×" if ceiling and ceiling["req_per_s"] else "—"
        lines.append(
            f"| {r['connections']} | {r['peer']} | {r['req_per_s']:,.0f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['max_ms']:.1f} | {r['mb_per_s']:,.1f} | {r['errors']} | {ratio} |"
        )
    return lines


def write_md(path: Path, saved: dict[str, Any]) -> None:
    records = saved["records"]
    lines = ["# `./quiver bench gateway`", ""]
    lines += machine_block(saved)
    lines += [
        "",
        "Seed 004's benchmark (offloader's): one `orders` table, the orders of one tenant's customer (five "
        "columns, ordered, at most 100 rows) through each service's own HTTP API; the gateway with an API key. "
        "nginx serves the gateway's response bytes as static files: the ceiling of this machine and of wrk. "
        "The claim is the ratio; absolute numbers are this machine's. MB = 10⁶ bytes.",
        "",
    ]
    lines += targets_block(saved["targets"])
    lines += ["", "![req/s at concurrency 50 per scenario and peer (log scale)](gateway.svg)", ""]
    lines += loads_block(saved["peers"])
    lines += [""]
    for scenario, title in SCENARIOS:
        block = scenario_block(records, scenario, title)
        if block:
            lines += [*block, ""]
    errors = [e for peer in saved["peers"].values() for e in peer.get("errors", [])]
    if errors:
        lines += ["## Failures", ""]
        lines += [f"- {e['peer']}: {e['message']}" for e in errors]
        lines += [""]
    notes = [(name, n) for name, peer in saved["peers"].items() for n in peer.get("notes", [])]
    if notes:
        lines += ["## Notes", ""]
        lines += [f"- **{name}**: {n}" for name, n in notes]
    path.write_text("\n".join(lines).rstrip() + "\n")


def chart_bars(records: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    top = max((r["connections"] for r in records), default=0)
    bars = []
    for scenario, _ in SCENARIOS:
        for peer in PEER_ORDER:
            for r in records:
                if (r["scenario"], r["peer"], r["connections"]) == (scenario, peer, top):
                    bars.append((scenario, peer, r["req_per_s"]))
    return bars


def fmt_rate(rate: float) -> str:
    return f"{rate / 1e3:,.1f} K" if rate >= 1e3 else f"{rate:,.0f}"


def write_svg(path: Path, records: list[dict[str, Any]]) -> None:
    charts.write_log_bars(
        path,
        chart_bars(records),
        title="req/s at concurrency 50 (log scale, from 10)",
        lo=10.0,
        fmt=fmt_rate,
        colors={"quiver gateway": "#2b7bb9", "nginx": "#7a7a7a", "roapi": "#e08a2c", "datasette": "#c0504d"},
        default_color="#999",
        label_width=230,
        group_count=len(SCENARIOS),
    )
