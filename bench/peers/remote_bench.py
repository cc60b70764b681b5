"""`./quiver bench remote`: call-out beyond the engine's machine, beside the physical limit.

The example worker (quiver-allinone) under DuckDB 2.0.0 through quiver's extension, reached five ways
in one run, with loopback TCP's own bandwidth measured in the same run as the limit every HTTP row
shares:

    launch inline   ATTACH 'launch:<worker>'                       (a child process, Arrow IPC over a pipe)
    launch shm      the same with VGI_RPC_SHM_SIZE_BYTES set       (batches through shared memory)
    http            ATTACH 'http://127.0.0.1:<port>'               (one remote worker, vgi-rpc HTTP)
    nginx xR        ATTACH 'http://<nginx>' over R = 1, 2, 3 replicas (round robin, no stickiness,
                    every replica with the same token key, so any replica serves any turn)

Workloads:
    scan    SELECT sum(n) FROM w.split_numbers(N, splits := S)     (S splits, claimed by DuckDB's threads)
    scalar  SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range(K) t(i)

Each figure is median [min–max] over MEASURED runs after WARMUP runs, SET threads = 2. This is a
2-vCPU machine: replicas share its two cores with nginx and DuckDB, so more replicas cannot add
throughput here; the rows show what the balancer and the carried stream state cost.

Usage (with .venv/bin/python; nginx from tools/setup_nginx.sh):
    python bench/peers/remote_bench.py run [--warmup W] [--measured R] [--quick] [--out DIR]
    python bench/peers/remote_bench.py report [DIR]      # rewrite remote.{md,svg} from remote.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import results
from charts import write_log_bars

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = Path(os.environ.get("QUIVER_EXTENSION", ROOT / "target" / "extension" / "quiver.duckdb_extension"))
WORKER = ROOT / "target" / "release" / "quiver-allinone"
THREADS = 2
SHM_BYTES = 256 << 20
SCAN_ROWS = 200_000_000  # 1.6 GB of BIGINT from the worker
SCAN_SPLITS = 8
SCALAR_ROWS = 10_000_000
LOOPBACK_BYTES = 4 << 30
DEADLINE_S = 60.0

# Each target a same-run ratio; see the md for what each one claims.
TARGETS = {
    "http_scan_vs_loopback": 0.3,
    "balancer_scan_vs_direct": 0.8,
    "replicas3_scan_vs_replicas1": 0.8,
}


def log(message: str) -> None:
    print(f"[remote-bench] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The physical limit


def loopback_bandwidth(nbytes: int) -> float:
    """Bytes per second one TCP connection over 127.0.0.1 carries, 4 MiB writes into 4 MiB reads."""
    listener = socket.create_server(("127.0.0.1", 0))
    chunk = bytes(4 << 20)

    def send() -> None:
        with socket.create_connection(listener.getsockname()) as out:
            left = nbytes
            while left > 0:
                out.sendall(chunk[: min(left, len(chunk))])
                left -= len(chunk)

    sender = threading.Thread(target=send)
    start = time.perf_counter()
    sender.start()
    connection, _ = listener.accept()
    buffer = bytearray(4 << 20)
    received = 0
    with connection:
        while received < nbytes:
            got = connection.recv_into(buffer)
            if got == 0:
                break
            received += got
    sender.join()
    listener.close()
    return received / (time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Workers and the balancer


def start_worker(key: str) -> tuple[subprocess.Popen, int]:
    worker = subprocess.Popen(
        [str(WORKER), "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "QUIVER_HTTP_TOKEN_KEY": key},
    )
    assert worker.stdout is not None
    line = worker.stdout.readline().strip()
    if not line.startswith("PORT:"):
        raise RuntimeError(f"the worker announced {line!r} (exit {worker.poll()})")
    return worker, int(line.removeprefix("PORT:"))


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def nginx_config(tmp: Path, port: int, upstreams: list[int]) -> str:
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in upstreams)
    temp_paths = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
daemon off;
worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
{temp_paths}
    upstream workers {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 0;
        location / {{
            proxy_pass http://workers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # Turns stream through; the buffer nginx relays them in is 1 MiB, not its 4-8 KiB default
            # (a turn is up to 8 MiB: small buffers cost a syscall pair per few KiB).
            proxy_buffering off;
            proxy_buffer_size 1m;
            proxy_buffers 4 1m;
            proxy_busy_buffers_size 2m;
            proxy_request_buffering off;
            proxy_next_upstream error timeout non_idempotent;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen on {port} within {DEADLINE_S} s")


@contextlib.contextmanager
def balancer(upstreams: list[int]) -> Iterator[int]:
    nginx = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if nginx is None:
        raise RuntimeError("no nginx on PATH or in /usr/sbin: run tools/setup_nginx.sh")
    with tempfile.TemporaryDirectory(prefix="quiver-bench-nginx-") as tmp:
        port = free_port()
        config = Path(tmp) / "nginx.conf"
        config.write_text(nginx_config(Path(tmp), port, upstreams))
        process = subprocess.Popen([nginx, "-p", tmp, "-c", str(config)], stdin=subprocess.DEVNULL)
        try:
            wait_listening(port, process)
            yield port
        finally:
            stop(process)


# ---------------------------------------------------------------------------------------------
# Measuring


def workloads(scan_rows: int, scalar_rows: int) -> list[dict[str, Any]]:
    return [
        {
            "workload": "scan",
            "sql": f"SELECT sum(n) FROM w.split_numbers({scan_rows}, splits := {SCAN_SPLITS})",
            "rows": scan_rows,
            "bytes": 8 * scan_rows,
            "expected": scan_rows * (scan_rows - 1) // 2,
        },
        {
            "workload": "scalar",
            "sql": f"SELECT sum(length(w.upper_case(i::VARCHAR))) FROM range({scalar_rows}) t(i)",
            "rows": scalar_rows,
            # The strings' characters there and back (offsets and validity not counted).
            "bytes": 2 * string_chars(scalar_rows),
            "expected": string_chars(scalar_rows),
        },
    ]


def string_chars(n: int) -> int:
    """Characters of the decimal forms of 0..n-1."""
    total, width, low = 0, 1, 0
    while low < n:
        high = min(n, 10**width)
        total += (high - low) * width
        low, width = high, width + 1
    return total


def connect(location: str, shm: bool):
    import duckdb

    if shm:
        os.environ["VGI_RPC_SHM_SIZE_BYTES"] = str(SHM_BYTES)
    else:
        os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{EXTENSION}'")
    con.execute(f"SET threads = {THREADS}")
    con.execute(f"ATTACH '{location}' AS w (TYPE quiver)")
    return con


def measure(location: str, shm: bool, w: dict[str, Any], warmup: int, measured: int) -> dict[str, Any]:
    con = connect(location, shm)
    try:
        times = []
        for index in range(warmup + measured):
            start = time.perf_counter()
            result = con.execute(w["sql"]).fetchone()[0]
            elapsed = time.perf_counter() - start
            if result != w["expected"]:
                raise RuntimeError(f"{w['workload']} gave {result}, expected {w['expected']}")
            if index >= warmup:
                times.append(elapsed)
    finally:
        con.close()
        os.environ.pop("VGI_RPC_SHM_SIZE_BYTES", None)
    median = statistics.median(times)
    return {
        "workload": w["workload"],
        "sql": w["sql"],
        "median_s": median,
        "min_s": min(times),
        "max_s": max(times),
        "rows_per_s": w["rows"] / median,
        "bytes_per_s": w["bytes"] / median,
        "runs": len(times),
    }


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    load_at_start = round(os.getloadavg()[0], 2)
    scan_rows, scalar_rows = (SCAN_ROWS // 20, SCALAR_ROWS // 10) if args.quick else (SCAN_ROWS, SCALAR_ROWS)
    for path in (EXTENSION, WORKER):
        if not path.exists():
            log(f"no {path}: run ./quiver setup")
            return 1
    chosen = workloads(scan_rows, scalar_rows)
    log(f"loopback TCP: {LOOPBACK_BYTES >> 20} MiB through one connection")
    loopback = statistics.median(loopback_bandwidth(LOOPBACK_BYTES) for _ in range(3))
    log(f"loopback TCP: {loopback / 1e9:.2f} GB/s")
    rows: list[dict[str, Any]] = []

    def measure_all(variant: str, location: str, shm: bool = False) -> None:
        for w in chosen:
            log(f"{variant}: {w['workload']} ({args.warmup} warm-up + {args.measured} measured runs)")
            record = measure(location, shm, w, args.warmup, args.measured)
            record["variant"] = variant
            rows.append(record)
            log(
                f"{variant}: {w['workload']} median {record['median_s']:.3f} s, {record['rows_per_s'] / 1e6:.1f} M rows/s"
            )

    measure_all("launch inline", f"launch:{WORKER}")
    measure_all("launch shm", f"launch:{WORKER}", shm=True)
    key = secrets.token_hex(32)
    workers = [start_worker(key) for _ in range(3)]
    try:
        measure_all("http", f"http://127.0.0.1:{workers[0][1]}")
        for count in (1, 2, 3):
            with balancer([port for _, port in workers[:count]]) as port:
                measure_all(f"nginx x{count}", f"http://127.0.0.1:{port}")
    finally:
        for worker, _ in workers:
            stop(worker)
    saved = {
        "suite": "remote",
        "info": results.machine_facts(ROOT, started)
        | {"threads": THREADS, "quick": args.quick, "load_average_at_start": load_at_start},
        "loopback_bytes_per_s": loopback,
        "rows": rows,
        "targets": targets(rows, loopback),
        "peers": {"nginx": {"status": "ok"}},
    }
    return results.save(Path(args.out), saved, write_reports, log)


def find(rows: list[dict[str, Any]], variant: str, workload: str) -> dict[str, Any]:
    return next(r for r in rows if r["variant"] == variant and r["workload"] == workload)


def targets(rows: list[dict[str, Any]], loopback: float) -> list[dict[str, Any]]:
    measured = {
        "http_scan_vs_loopback": find(rows, "http", "scan")["bytes_per_s"] / loopback,
        "balancer_scan_vs_direct": find(rows, "nginx x1", "scan")["rows_per_s"]
        / find(rows, "http", "scan")["rows_per_s"],
        "replicas3_scan_vs_replicas1": find(rows, "nginx x3", "scan")["rows_per_s"]
        / find(rows, "nginx x1", "scan")["rows_per_s"],
    }
    return [
        {"target": name, "measured": round(value, 3), "threshold": TARGETS[name], "met": value >= TARGETS[name]}
        for name, value in measured.items()
    ]


# ---------------------------------------------------------------------------------------------
# The report


CLAIMS = {
    "http_scan_vs_loopback": "the scan's BIGINT bytes over one HTTP worker, as a share of loopback TCP's bandwidth",
    "balancer_scan_vs_direct": "the scan through nginx to one replica vs straight to it (what the balancer costs)",
    "replicas3_scan_vs_replicas1": "the scan over 3 replicas vs 1 behind nginx (2 vCPUs: no gain expected, no loss allowed)",
}


def write_reports(out: Path, saved: dict[str, Any]) -> None:
    info = saved["info"]
    lines = [
        "# Remote call-out: launch:, HTTP, and replicas behind nginx",
        "",
        f"{info['cpu']}, {info['nproc']} vCPU, {info['memory_gb']:.0f} GiB, Linux {info['kernel']}; commit "
        f"{info['commit']}; {info['date']}; load average {info['load_average_at_start']} at start, {info['load_average']} at end; DuckDB threads = {info['threads']}"
        + ("; quick sizes" if info["quick"] else "")
        + ".",
        "",
        f"Physical limit, same run: loopback TCP carries **{saved['loopback_bytes_per_s'] / 1e9:.2f} GB/s** "
        "through one connection (4 MiB writes, median of 3).",
        "",
        "| workload | variant | median s [min–max] | M rows/s | GB/s | × loopback |",
        "|---|---|---|---|---|---|",
    ]
    for r in saved["rows"]:
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r['median_s']:.3f} [{r['min_s']:.3f}–{r['max_s']:.3f}] | "
            f"{r['rows_per_s'] / 1e6:.1f} | {r['bytes_per_s'] / 1e9:.2f} | "
            f"{r['bytes_per_s'] / saved['loopback_bytes_per_s']:.2f} |"
        )
    lines += ["", "| target | measured | threshold | met | what it claims |", "|---|---|---|---|---|"]
    for t in saved["targets"]:
        lines.append(
            f"| {t['target']} | {t['measured']} | ≥ {t['threshold']} | {'yes' if t['met'] else 'no'} | {CLAIMS[t['target']]} |"
        )
    lines += [
        "",
        "SQL: " + "; ".join(sorted({f"`{r['sql']}`" for r in saved["rows"]})) + ".",
        "",
        "Method: `./quiver bench remote`; each variant attaches once, then runs each workload "
        "warm-up + measured times, checking every result exactly. The HTTP replicas share one "
        "`QUIVER_HTTP_TOKEN_KEY`, so a stream's state travels in its token and round robin may send "
        "any turn to any replica.",
        "",
    ]
    (out / "remote.md").write_text("\n".join(lines))
    bars = [(r["workload"], r["variant"], r["rows_per_s"]) for r in saved["rows"]]
    write_log_bars(
        out / "remote.svg",
        bars,
        title="remote call-out: rows/s (log scale), same run",
        lo=1e5,
        fmt=lambda v: f"{v / 1e6:.1f} M rows",
        colors={"launch shm": "#2b7", "launch inline": "#7b2", "http": "#27b"},
        default_color="#88a",
        label_width=200,
        group_count=len({r["workload"] for r in saved["rows"]}),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("--warmup", type=int, default=1)
    run_parser.add_argument("--measured", type=int, default=5)
    run_parser.add_argument("--quick", action="store_true", help="a twentieth of the scan, a tenth of the scalar")
    run_parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    report_parser = commands.add_parser("report")
    report_parser.add_argument("dir", nargs="?", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.command == "report":
        out = Path(args.dir)
        write_reports(out, json.loads((out / "remote.json").read_text()))
        return
    sys.exit(run(args))


if __name__ == "__main__":
    main()
