"""The issue's targets for `./quiver bench gateway`, each a ratio (or a time) from the same run.

Every target keeps one record shape (as every suite's): target, comparison, threshold, measured,
met, detail; `measured` is None (and `met` false) when a side did not run.
"""

from __future__ import annotations

from typing import Any

GATEWAY = "quiver gateway"
TOP_CONCURRENCY = 50
COLD_LOAD_MS_MAX = 2000.0


def find(records: list[dict[str, Any]], peer: str, scenario: str, connections: int) -> dict[str, Any] | None:
    for record in records:
        if (record["peer"], record["scenario"], record["connections"]) == (peer, scenario, connections):
            return record
    return None


def target(name: str, comparison: str, threshold: float, measured: float | None, detail: str) -> dict[str, Any]:
    if measured is None:
        met = False
    elif comparison == "≥":
        met = measured >= threshold
    else:
        met = measured <= threshold
    return {
        "target": name,
        "comparison": comparison,
        "threshold": threshold,
        "measured": measured,
        "met": met,
        "detail": detail,
    }


def ratio_target(
    records: list[dict[str, Any]], name: str, scenario: str, peer: str, key: str, comparison: str, threshold: float
) -> dict[str, Any]:
    mine = find(records, GATEWAY, scenario, TOP_CONCURRENCY)
    theirs = find(records, peer, scenario, TOP_CONCURRENCY)
    if not mine or not theirs or not theirs[key]:
        return target(name, comparison, threshold, None, f"{GATEWAY} or {peer} did not run {scenario}")
    unit = "req/s" if key == "req_per_s" else "ms"
    detail = f"{mine[key]:,.2f} vs {theirs[key]:,.2f} {unit} at c={TOP_CONCURRENCY}"
    return target(name, comparison, threshold, mine[key] / theirs[key], detail)


def compute(records: list[dict[str, Any]], peers: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    found = [
        ratio_target(records, "cache_hit req/s at c=50 ≥ 0.5× nginx's", "cache_hit", "nginx", "req_per_s", "≥", 0.5),
        ratio_target(records, "cache_hit p99 at c=50 ≤ 2× nginx's", "cache_hit", "nginx", "p99_ms", "≤", 2.0),
        ratio_target(records, "local_table req/s at c=50 ≥ 5× ROAPI's", "local_table", "roapi", "req_per_s", "≥", 5.0),
        ratio_target(
            records, "local_table req/s at c=50 ≥ 5× Datasette's", "local_table", "datasette", "req_per_s", "≥", 5.0
        ),
    ]
    loads = peers.get(GATEWAY, {}).get("loads", {})
    cold = loads.get("example_cold_load_ms")
    # A time, kept in the ratio shape of the others: measured / 2 s, met at ≤ 1.
    found.append(
        target(
            "cold load of examples/gateway ≤ 2 s (process start → /ready 200)",
            "≤",
            1.0,
            None if cold is None else cold / COLD_LOAD_MS_MAX,
            "not measured" if cold is None else f"{cold:,.0f} ms of {COLD_LOAD_MS_MAX:,.0f} ms",
        )
    )
    return found
