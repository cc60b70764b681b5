"""What every peer of `./quiver bench server` shares: arguments, timing, the record shape, the JSON
line protocol, free ports, threads and progress lines.

A peer is one subprocess in its own venv. It prints JSON objects, one per line, on stdout:

    {"kind": "info", "peer": ..., "versions": {...}, "notes": [...]}     once, first
    {"kind": "record", "peer": ..., "workload": ..., ...}                one per measured case
    {"kind": "error", "peer": ..., "workload": ..., "message": ...}      a case that failed

and progress on stderr. quiver's own bench binary prints the same lines (`--quiver-cmd`), so the
harness (bench/peers/server_bench.py) reads every peer the same way.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rows as measurements

PROTOCOL = "quiver.bench.server.v1"
# Variants: the seed's names, with the API each peer used in the record's `api` field.
QUERY_ONE = "1 connection"
INSERT_ROWS = "row API, 1 connection"
INSERT_ARROW = "Arrow, 1 connection"
INSERT_COPY = "COPY, 1 connection"
THREAD_JOIN_TIMEOUT_S = 3600


def insert_arrow_n(n: int) -> str:
    return f"Arrow × {n} connections"


def query_n(n: int) -> str:
    return f"{n} parallel connections"


def log(peer: str, msg: str) -> None:
    print(f"[{peer}] {msg}", file=sys.stderr, flush=True)


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout; the harness parses nothing else there."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (never a fixed one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--measured", type=int, default=5)
    args = p.parse_args()
    measurements.check_rows(args.rows)
    assert 1 <= args.workers <= 64, "--workers must be in 1..64"
    assert args.warmup >= 0 and args.measured >= 1, "--warmup ≥ 0 and --measured ≥ 1"
    return args


def in_threads(fns: list[Callable[[], Any]]) -> list[Any]:
    """Run each callable on its own thread (the N-connection variants); re-raise the first failure."""
    results: list[Any] = [None] * len(fns)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            results[i] = fns[i]()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_JOIN_TIMEOUT_S)
        assert not t.is_alive(), "a benchmark thread did not finish"
    if errors:
        raise errors[0]
    return results


@dataclass
class Case:
    """One measured cell: a timed `run` (given what the untimed `prepare` returned), then `check` on
    the last run's result, untimed, which must return True (same rows, checked, not assumed).
    """

    workload: str
    variant: str
    flavor: str
    transport: str
    api: str
    run: Callable[[Any], Any]
    check: Callable[[Any], bool]
    rows: int
    bytes_per_row: int
    prepare: Callable[[], Any] | None = None
    connections: int = 1
    database: str = "memory"
    note: str = ""


def measure(case: Case, warmup: int, measured: int) -> list[float]:
    """Times every run and checks the first. Each result is let go before the next run starts, as a
    program done with it would: one still held would keep its memory (and a client's shared-memory
    regions) through the next run.
    """
    times: list[float] = []
    for i in range(warmup + measured):
        state = case.prepare() if case.prepare else None
        start = time.perf_counter()
        result = case.run(state)
        elapsed = time.perf_counter() - start
        if i == 0 and not case.check(result):
            raise AssertionError("the rows do not match the expected checksum")
        del result
        if i >= warmup:
            times.append(elapsed)
    return times


def record(peer: str, case: Case, times: list[float], table_rows: int) -> dict[str, Any]:
    median = statistics.median(times)
    nbytes = case.rows * case.bytes_per_row
    return {
        "kind": "record",
        "peer": peer,
        "workload": case.workload,
        "variant": case.variant,
        "flavor": case.flavor,
        "transport": case.transport,
        "api": case.api,
        "connections": case.connections,
        "database": case.database,
        "rows": case.rows,
        "table_rows": table_rows,
        "bytes": nbytes,
        "median_s": median,
        "min_s": min(times),
        "max_s": max(times),
        "times_s": times,
        "rows_per_s": case.rows / median,
        "mb_per_s": nbytes / median / 1e6,
        "checked": True,
        "note": case.note,
    }


def _raise_on_sigterm() -> None:
    """SIGTERM (the harness giving up) unwinds like Ctrl-C, so servers and temp dirs are cleaned up."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def run_peer(
    peer: str,
    args: argparse.Namespace,
    versions: dict[str, str],
    cases: Callable[[], Any],
    notes: list[str] | None = None,
) -> int:
    """Emit the info line, then measure every case `cases()` yields; a failing case is an error line."""
    _raise_on_sigterm()
    emit({"kind": "info", "protocol": PROTOCOL, "peer": peer, "versions": versions, "notes": notes or []})
    failures = 0
    for case in cases():
        label = f"{case.workload} · {case.variant} · {case.transport} · {case.api}"
        try:
            times = measure(case, args.warmup, args.measured)
        except Exception as e:
            failures += 1
            log(peer, f"FAILED {label}: {e}")
            traceback.print_exc(file=sys.stderr)
            emit(
                {
                    "kind": "error",
                    "peer": peer,
                    "workload": case.workload,
                    "variant": case.variant,
                    "api": case.api,
                    "message": f"{type(e).__name__}: {e}"[:2000],
                }
            )
            continue
        rec = record(peer, case, times, args.rows)
        emit(rec)
        log(
            peer,
            f"{label}: {rec['median_s'] * 1e3:,.1f} ms [{rec['min_s'] * 1e3:,.1f}–{rec['max_s'] * 1e3:,.1f}]"
            f"  {rec['rows_per_s'] / 1e6:,.2f} Mrows/s",
        )
    return 1 if failures else 0
