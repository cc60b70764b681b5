"""`./quiver bench server`: seed 002's suite with every peer in the same run.

The workloads are bulk insert, full scan, filtered and aggregation; each peer is a subprocess in its
own venv speaking the JSON lines of bench/peers/server/common.py:

    flight_sql quiver's server through its Flight SQL front door, ADBC's Python client (quiver's .venv)
    node      quiver's Node package (node/, its bench node/bench/server_bench.js): seed 002's Node table
    duckdb    in-process DuckDB 2.0.0 (quiver's .venv): the ceiling, the fastest of its Arrow paths in
              the run, among them quiver_arrow_drain (the server's own Arrow result stream drained in
              process) from the bench flavour of the extension
    hyper     Hyper through tableauhyperapi and pantab (.venv-bench-hyper)
    quack     DuckDB's own client/server protocol, duckdb 1.5.5 (.venv-bench-quack)
    postgres  PostgreSQL 15 through psycopg 3 and ADBC (.venv-bench-postgres)
    python_native  quiver's server from Python through the native module quiver_native (quiver's .venv)
    python    quiver's server from Python through the pure-Python client quiver.client (quiver's .venv)

quiver's own rows come from `--quiver-cmd CMD` (or $QUIVER_BENCH_SERVER_CMD): any program printing
the same JSON lines, run as `CMD --rows N --workers N --warmup W --measured M`, whose records carry
peer "quiver" and transport "tcp", "unix" or "unix+shm" (the spine), or "grpc" (the queries through
the Flight SQL front door with arrow-flight's Rust client); bench/peers/server/targets.py matches on
those. Without it the suite runs and says so.

Usage (with .venv/bin/python; tools/setup_bench_peers.sh creates the peer venvs):
    python bench/peers/server_bench.py run [--rows N] [--workers N] [--warmup W] [--measured M]
        [--out DIR] [--quick] [--peers flight_sql,duckdb,hyper,quack,postgres,python_native,python] [--quiver-cmd CMD]
    python bench/peers/server_bench.py report [DIR]    # rewrite server.{md,svg} from server.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVER_DIR = ROOT / "bench" / "peers" / "server"
sys.path.insert(0, str(SERVER_DIR))

import report
import results
import targets
from common import PROTOCOL

# Short name on the command line → (the `peer` its records carry, its interpreter, its script).
PEERS = {
    "flight_sql": ("quiver flight sql", ROOT / ".venv" / "bin" / "python", SERVER_DIR / "flight_sql.py"),
    "node": ("quiver node", ROOT / ".venv" / "bin" / "python", SERVER_DIR / "node.py"),
    "duckdb": ("duckdb in-process", ROOT / ".venv" / "bin" / "python", SERVER_DIR / "duckdb_inprocess.py"),
    "hyper": ("hyper", ROOT / ".venv-bench-hyper" / "bin" / "python", SERVER_DIR / "hyper.py"),
    "quack": ("quack", ROOT / ".venv-bench-quack" / "bin" / "python", SERVER_DIR / "quack.py"),
    "postgres": ("postgresql", ROOT / ".venv-bench-postgres" / "bin" / "python", SERVER_DIR / "postgres.py"),
    "python_native": ("quiver python native", ROOT / ".venv" / "bin" / "python", SERVER_DIR / "quiver_python.py"),
    "python": ("quiver python", ROOT / ".venv" / "bin" / "python", SERVER_DIR / "quiver_python.py"),
}
# Arguments a peer's script takes before the sizes (one script serving two peers).
PEER_ARGS = {"python_native": ["--implementation", "native"], "python": ["--implementation", "python"]}
PEER_TIMEOUT_S = 3 * 3600
QUICK_ROWS = 1_000_000
QUICK_MEASURED = 3
STOP_GRACE_S = 30


def log(msg: str) -> None:
    print(f"[server-bench] {msg}", file=sys.stderr, flush=True)


def run_child(argv: list[str], name: str) -> dict[str, Any]:
    """Run one peer; collect its info, records and errors. Its stderr passes through as progress."""
    out: dict[str, Any] = {"status": "ok", "versions": {}, "notes": [], "records": [], "errors": []}
    log(f"{name}: {shlex.join(argv)}")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + PEER_TIMEOUT_S
    try:
        for line in proc.stdout:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} ran past {PEER_TIMEOUT_S} s")
            take_line(out, line, name)
        proc.wait(STOP_GRACE_S)
    except BaseException:
        # Ctrl-C or a time-out: the peer unwinds on SIGTERM (stops its servers, removes its temp dirs).
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    if proc.returncode != 0:
        out["status"] = f"exited {proc.returncode}"
    if out["errors"]:
        out["status"] = f"{len(out['errors'])} case(s) failed"
    return out


def take_line(out: dict[str, Any], line: str, name: str) -> None:
    line = line.strip()
    if not line:
        return
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        out["errors"].append({"peer": name, "message": f"not a JSON line on stdout: {line[:200]}"})
        return
    kind = obj.get("kind")
    if kind == "info":
        if obj.get("protocol") != PROTOCOL or obj.get("peer") != name:
            message = f"info line says {obj.get('protocol')!r} / {obj.get('peer')!r}, want {PROTOCOL!r} / {name!r}"
            out["errors"].append({"peer": name, "message": message})
        out["versions"], out["notes"] = obj.get("versions", {}), obj.get("notes", [])
    elif kind == "record" and obj.get("peer") == name:
        out["records"].append(obj)
    elif kind == "error":
        out["errors"].append(obj)
    else:
        out["errors"].append({"peer": name, "message": f"unexpected line: kind {kind!r}, peer {obj.get('peer')!r}"})


def machine_info(started: float, args: argparse.Namespace) -> dict[str, Any]:
    return {
        **results.machine_facts(ROOT, started),
        "rows": args.rows,
        "workers": args.workers,
        "warmup": args.warmup,
        "measured": args.measured,
        "quick": args.quick,
    }


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.quick:
        args.rows, args.measured = min(args.rows, QUICK_ROWS), min(args.measured, QUICK_MEASURED)
    sizes = ["--rows", str(args.rows), "--workers", str(args.workers)]
    sizes += ["--warmup", str(args.warmup), "--measured", str(args.measured)]
    wanted = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PEERS))
    if unknown:
        sys.exit(f"server-bench: unknown peer(s) {unknown}; known: {sorted(PEERS)}")
    peers: dict[str, dict[str, Any]] = {}
    quiver = {"present": False, "command": args.quiver_cmd, "reason": ""}
    if args.quiver_cmd:
        peers["quiver"] = run_child([*shlex.split(args.quiver_cmd), *sizes], "quiver")
        quiver["present"] = bool(peers["quiver"]["records"])
        quiver["reason"] = (
            "" if quiver["present"] else f"--quiver-cmd produced no records ({peers['quiver']['status']})"
        )
    else:
        quiver["reason"] = "no --quiver-cmd was given (./quiver bench server passes the Rust client's bench)"
    for short in wanted:
        name, python, script = PEERS[short]
        if not python.exists():
            peers[name] = {"status": f"not run: no venv at {python.parent.parent.name} (tools/setup_bench_peers.sh)"}
            log(f"{name}: {peers[name]['status']}")
            continue
        peers[name] = run_child([str(python), str(script), *PEER_ARGS.get(short, []), *sizes], name)
    records = [r for p in peers.values() for r in p.pop("records", [])]
    targets.add_baselines(records)
    saved = {
        "suite": "server",
        "info": machine_info(started, args),
        "quiver": quiver,
        "peers": peers,
        "targets": targets.compute(records),
        "records": records,
    }
    return results.save(Path(args.out), saved, write_reports, log)


def write_reports(out: Path, saved: dict[str, Any]) -> None:
    report.write_md(out / "server.md", saved)
    report.write_svg(out / "server.svg", saved["records"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--rows", type=int, default=10_000_000)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--measured", type=int, default=5)
    r.add_argument("--out", default=str(ROOT / "bench" / "results"))
    r.add_argument("--quick", action="store_true", help=f"at most {QUICK_ROWS:,} rows and {QUICK_MEASURED} runs")
    r.add_argument("--peers", default=",".join(PEERS))
    r.add_argument("--quiver-cmd", default=os.environ.get("QUIVER_BENCH_SERVER_CMD", ""))
    rep = sub.add_parser("report")
    rep.add_argument("dir", nargs="?", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.command == "run":
        return run(args)
    out = Path(args.dir)
    write_reports(out, json.loads((out / "server.json").read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
