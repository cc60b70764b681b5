"""How ``./quiver bench python`` times: a rep (ops, wall time, CPU of both processes, latency
percentiles), a figure (one measurement for every implementation, reps interleaved with their
order rotating), and the JSON record each figure becomes, with its ratio to vgi-rpc.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from python_plan import TRANSPORT_NAMES


@dataclass
class Rep:
    ops: int
    total_s: float
    p50_s: float
    p99_s: float
    cpu_s: float = 0.0
    """CPU time of client and server together over the rep (all threads, both processes)."""


def task_cpu_s(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far, from /proc/<pid>/task/*/schedstat (ns)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


def timed(session: Any, ops: int, op: Callable[[], Any]) -> Rep:
    """``time_rep`` plus the CPU both ends spent."""
    before = session.cpu_s()
    rep = time_rep(ops, op)
    rep.cpu_s = session.cpu_s() - before
    return rep


def time_rep(ops: int, op: Callable[[], Any]) -> Rep:
    """Times ``ops`` calls of ``op`` one by one: per-op p50/p99 and the wall time."""
    clock = time.perf_counter_ns
    times = [0] * ops
    started = clock()
    for i in range(ops):
        t = clock()
        op()
        times[i] = clock() - t
    total = (clock() - started) / 1e9
    times.sort()
    return Rep(ops, total, _rank(times, 0.50) / 1e9, _rank(times, 0.99) / 1e9)


def _rank(sorted_ns: list[int], q: float) -> int:
    rank = math.ceil(q * len(sorted_ns))
    return sorted_ns[min(max(rank, 1), len(sorted_ns)) - 1]


@dataclass
class Figure:
    """One workload × transport, both implementations, every rep."""

    section: str
    workload: str
    transport: str
    unit: str  # "latency" | "rate" | "bandwidth"
    bytes_per_op: int = 0
    reps: dict[str, list[Rep]] = field(default_factory=lambda: {"quiver": [], "vgi-rpc": []})


def interleave(figure: Figure, reps: int, runners: dict[str, Callable[[], Rep]]) -> Figure:
    """Runs each implementation's rep in turn, rotating who goes first."""
    names = list(runners)
    for rep in range(reps):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for name in order:
            figure.reps[name].append(runners[name]())
    return figure


def summary(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[0], ordered[-1]


def rate_of(rep: Rep) -> float:
    return rep.ops / rep.total_s


def records(figures: list[Figure]) -> list[dict[str, Any]]:
    """One JSON record per figure × implementation, with its ratio to vgi-rpc."""
    out = []
    for figure in figures:
        medians: dict[str, dict[str, float]] = {}
        for impl, reps in figure.reps.items():
            p50 = summary([r.p50_s for r in reps])
            p99 = summary([r.p99_s for r in reps])
            per_s = summary([rate_of(r) for r in reps])
            cpu = summary([r.cpu_s / r.ops for r in reps])
            record: dict[str, Any] = {
                "section": figure.section,
                "workload": figure.workload,
                "variant": figure.transport,
                "transport": TRANSPORT_NAMES.get(figure.transport, figure.transport),
                "implementation": impl,
                "median_s": p50[0],
                "min_s": p50[1],
                "max_s": p50[2],
                "p99_s": p99[0],
                "per_s": per_s[0],
                "per_s_min": per_s[1],
                "per_s_max": per_s[2],
                "bytes_per_op": figure.bytes_per_op,
                "cpu_s_per_op": cpu[0] if figure.section != "codec" else p50[0],
                "reps": [r.__dict__ for r in reps],
            }
            if figure.unit == "bandwidth":
                record["gb_per_s"] = figure.bytes_per_op * per_s[0] / 1e9
            medians[impl] = record
            out.append(record)
        baseline = medians["vgi-rpc"]
        for record in medians.values():
            # >1 means faster than vgi-rpc: time ratio for latencies, rate ratio for rates.
            if figure.unit == "latency":
                record["ratio_to_vgi_rpc"] = baseline["median_s"] / record["median_s"]
            else:
                record["ratio_to_vgi_rpc"] = record["per_s"] / baseline["per_s"]
            record["baseline"] = "vgi-rpc 0.52.2, same run"
            record["cpu_ratio_to_vgi_rpc"] = baseline["cpu_s_per_op"] / record["cpu_s_per_op"]
    return out
