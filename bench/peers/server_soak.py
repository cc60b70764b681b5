"""`./quiver bench soak`: the mixed load of bench/peers/server/mixed_load.py against one server for a
while, the server's RSS sampled every second; results in bench/results/soak.{json,md,svg}.

    python bench/peers/server_soak.py run --out bench/results [--clients 16] [--duration 300] [--rows 1000]

The claims are counts, not speeds: no failed statement, exact rows at the end, and the server's RSS
flat once warm (the growth from the sample a tenth into the run to the last one).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mixed_load
from results import machine_facts

#: RSS growth once warm that the soak accepts; a leak per statement passes it within minutes.
RSS_GROWTH_MIB_MAX = 128
RSS_SAMPLE_S = 1.0


def log(message: str) -> None:
    print(f"[soak] {message}", file=sys.stderr, flush=True)


def start_server(directory: Path, token: str) -> tuple[subprocess.Popen[str], mixed_load.Doors]:
    command = [
        str(ROOT / ".venv" / "bin" / "python"),
        "-m",
        "quiver.serve",
        "--database",
        str(directory / "soak.db"),
        "--listen",
        f"unix://{directory / 'quiver.sock'}",
        "--listen",
        "tcp://127.0.0.1:0",
        "--listen",
        "grpc://127.0.0.1:0",
    ]
    env = {**os.environ, "QUIVER_TOKEN": token, "PYTHONPATH": str(ROOT / "python")}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    announced: dict[str, str] = {}
    assert server.stdout is not None
    for line in server.stdout:
        kind, _, value = line.strip().partition(":")
        if kind == "READY":
            break
        announced[kind] = value
    else:
        raise SystemExit(f"the server ended before READY (exit {server.wait()})")
    doors = mixed_load.Doors(
        unix=announced["UNIX"], tcp_port=int(announced["PORT"]), flight_sql=announced["FLIGHT_SQL"], token=token
    )
    return server, doors


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.started = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic() - self.started, rss_mib(self.pid)))
            self.stop.wait(RSS_SAMPLE_S)


def soak(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="quiver-soak-") as scratch:
        server, doors = start_server(Path(scratch), secrets.token_hex(16))
        try:
            mixed_load.prepare(doors)
            sampler = RssSampler(server.pid)
            sampler.start()
            last_report = [time.monotonic()]

            def progress(rounds: int) -> None:
                if time.monotonic() - last_report[0] >= 10:
                    last_report[0] = time.monotonic()
                    elapsed = last_report[0] - sampler.started
                    log(f"{elapsed:.0f}/{args.duration} s: {rounds} rounds, server RSS {rss_mib(server.pid):.0f} MiB")

            log(f"{args.clients} clients for {args.duration} s on Unix, TCP and Flight SQL")
            tally = mixed_load.run(doors, args.clients, duration_s=args.duration, rows=args.rows, on_round=progress)
            sampler.stop.set()
            sampler.join()
            problems = mixed_load.verify(doors, tally)
        finally:
            server.terminate()
            exit_status = server.wait(timeout=60)
    return record(args, tally, problems, sampler.samples, exit_status, started)


def record(
    args: argparse.Namespace,
    tally: mixed_load.Tally,
    problems: list[str],
    samples: list[tuple[float, float]],
    exit_status: int,
    started: float,
) -> dict[str, Any]:
    rss = [mib for _, mib in samples] or [0.0]
    warm = rss[len(rss) // 10]
    growth = rss[-1] - warm
    return {
        "suite": "soak",
        "info": machine_facts(ROOT, started),
        "config": {"clients": args.clients, "duration_s": args.duration, "rows_per_insert": args.rows},
        "statements": tally.statements,
        "statements_total": sum(tally.statements.values()),
        "rows_committed": sum(tally.committed.values()),
        "errors": [list(error) for error in tally.errors[:20]],
        "errors_total": len(tally.errors),
        "count_problems": problems,
        "server_exit_status": exit_status,
        "rss_mib": {"first": rss[0], "warm": warm, "last": rss[-1], "max": max(rss)},
        "rss_samples": samples,
        "targets": [
            {"target": "failed statements", "measured": len(tally.errors), "threshold": 0, "met": not tally.errors},
            {
                "target": "rows differing from the clients' commits",
                "measured": len(problems),
                "threshold": 0,
                "met": not problems,
            },
            {
                "target": "server RSS growth once warm (MiB)",
                "measured": round(growth, 1),
                "threshold": RSS_GROWTH_MIB_MAX,
                "met": growth <= RSS_GROWTH_MIB_MAX,
            },
            {
                "target": "server exit status after SIGTERM",
                "measured": exit_status,
                "threshold": 0,
                "met": exit_status == 0,
            },
        ],
        "peers": {"quiver": {"status": "ok" if exit_status == 0 else "failed"}},
    }


def write_reports(out: Path, saved: dict[str, Any]) -> None:
    info, rss = saved["info"], saved["rss_mib"]
    lines = [
        "# Soak: a mixed load on one quiver server",
        "",
        f"{info['cpu']}, {info['nproc']} CPUs, {info['memory_gb']:.0f} GiB; commit {info['commit']}; {info['date']}.",
        "",
        f"{saved['config']['clients']} clients for {saved['config']['duration_s']} s "
        "(bench/peers/server/mixed_load.py: the spine over Unix and TCP, Flight SQL through ADBC).",
        "",
        "| role | statements |",
        "|---|---:|",
        *(f"| {role} | {n:,} |" for role, n in sorted(saved["statements"].items())),
        f"| **all** | **{saved['statements_total']:,}** |",
        "",
        f"Rows committed: {saved['rows_committed']:,}. Failed statements: {saved['errors_total']}. "
        f"Count problems: {len(saved['count_problems'])}.",
        "",
        f"Server RSS (MiB): first {rss['first']:.0f}, warm {rss['warm']:.0f}, last {rss['last']:.0f}, "
        f"max {rss['max']:.0f}.",
        "",
        "| target | measured | threshold | met |",
        "|---|---:|---:|---|",
        *(
            f"| {t['target']} | {t['measured']} | {t['threshold']} | {'yes' if t['met'] else 'NO'} |"
            for t in saved["targets"]
        ),
        "",
        "![server RSS over the run](soak.svg)",
        "",
    ]
    (out / "soak.md").write_text("\n".join(lines))
    write_rss_chart(out / "soak.svg", saved["rss_samples"])


def write_rss_chart(path: Path, samples: list[tuple[float, float]]) -> None:
    width, height, pad = 760, 240, 40
    if not samples:
        samples = [(0.0, 0.0)]
    t_max = max(t for t, _ in samples) or 1.0
    m_max = max(m for _, m in samples) * 1.1 or 1.0
    points = " ".join(
        f"{pad + t / t_max * (width - 2 * pad):.1f},{height - pad - m / m_max * (height - 2 * pad):.1f}"
        for t, m in samples
    )
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<text x="{pad}" y="20">{html.escape("quiver server RSS (MiB) under the mixed load")}</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>',
        f'<text x="{pad - 4}" y="{pad + 4}" text-anchor="end">{m_max:.0f}</text>',
        f'<text x="{width - pad}" y="{height - pad + 16}" text-anchor="end">{t_max:.0f} s</text>',
        f'<polyline fill="none" stroke="#3b6ea5" stroke-width="1.5" points="{points}"/>',
        "</svg>",
    ]
    path.write_text("\n".join(svg) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of load (default 300)")
    parser.add_argument("--rows", type=int, default=1000, help="rows per insert (default 1000)")
    args = parser.parse_args()
    saved = soak(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "soak.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_reports(args.out, saved)
    for target in saved["targets"]:
        log(
            f"{target['target']}: {target['measured']} (threshold {target['threshold']}) "
            f"{'met' if target['met'] else 'NOT MET'}"
        )
    return 0 if all(t["met"] for t in saved["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
