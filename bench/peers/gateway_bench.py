"""`./quiver bench gateway`: seed 004's gateway benchmark with its peers in the same run.

Services (each its own process on loopback, bench/peers/gateway/services.py): quiver's gateway (and
the quiver server it spawns), nginx serving the gateway's response bytes as static files (the
ceiling, and a check of the load generator's own), ROAPI and Datasette on the same rows.
Load: wrk with keep-alive connections at concurrency 1/10/50, `--passes` runs each, the median
kept (bench/peers/gateway/wrk.py). Loads: cold (fresh state) and warm (same state) process start →
`/ready` 200, for the suite's project and for examples/gateway; resident memory after the runs; the
gateway's state on disk.

Usage (with .venv/bin/python; tools/setup_bench_peers.sh installs wrk, nginx and the peer venvs):
    python bench/peers/gateway_bench.py run [--rows N] [--duration S] [--passes P] [--quick]
        [--peers gateway,nginx,roapi,datasette] [--out DIR]
    python bench/peers/gateway_bench.py report [DIR]    # rewrite gateway.{md,svg} from gateway.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "peers" / "gateway"))

import data
import report
import results
import scenarios
import services
import targets
import wrk

CONCURRENCY = [1, 10, 50]
PEERS = ["gateway", "nginx", "roapi", "datasette"]
NAMES = {"gateway": "quiver gateway", "nginx": "nginx", "roapi": "roapi", "datasette": "datasette"}
GATEWAY_BIN = ROOT / "target" / "release" / "quiver-gateway"
ROAPI_BIN = ROOT / ".venv-bench-roapi" / "bin" / "roapi"
DATASETTE_BIN = ROOT / ".venv-bench-datasette" / "bin" / "datasette"
EXAMPLE_PROJECT = ROOT / "examples" / "gateway"
QUICK_ROWS = 200_000
QUICK_DURATION_S = 2


def log(msg: str) -> None:
    print(f"[gateway-bench] {msg}", file=sys.stderr, flush=True)


def measure(service: services.Service, name: str, scenario: wrk.Scenario, args: argparse.Namespace) -> list[dict]:
    """Every concurrency, `passes` runs each; one record per concurrency with the medians."""
    records = []
    for connections in CONCURRENCY:
        runs = []
        for _ in range(args.passes):
            runs.append(wrk.run(service.base_url, scenario, connections, args.duration))
        record: dict[str, Any] = {"peer": name, "scenario": scenario.name, "connections": connections}
        for key in ("req_per_s", "mb_per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms"):
            record[key] = statistics.median(run[key] for run in runs)
        record["errors"] = sum(run["errors"] for run in runs)
        record["requests"] = sum(run["requests"] for run in runs)
        record["passes"] = runs
        log(
            f"{name} {scenario.name} c={connections}: {record['req_per_s']:,.0f} req/s, "
            f"p50 {record['p50_ms']:.2f} ms, p99 {record['p99_ms']:.2f} ms, errors {record['errors']}"
        )
        records.append(record)
    return records


def gateway_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("QUIVER_SERVER_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
    env["PYTHONPATH"] = str(ROOT / "python") + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("RUST_LOG", "warn")
    return env


def load_times(project: Path, state: Path, logs: Path) -> dict[str, float]:
    """Cold (empty state) then warm (the state the cold start left) process start → /ready 200."""
    shutil.rmtree(state, ignore_errors=True)
    cold = services.start_gateway(GATEWAY_BIN, project, state, logs, gateway_env())
    cold.stop()
    warm = services.start_gateway(GATEWAY_BIN, project, state, logs, gateway_env())
    warm.stop()
    return {"cold_load_ms": cold.load_ms, "warm_load_ms": warm.load_ms}


def fetch(service: services.Service, scenario: wrk.Scenario, customer: int) -> tuple[int, dict[str, str], bytes]:
    return services.get(service.base_url + scenario.path.replace("{n}", str(customer)), scenario.headers)


def run_gateway(work: Path, paths: dict[str, Path], args, out: dict, records: list) -> dict[str, bytes]:
    """The gateway's loads and scenarios; returns the response bytes nginx will serve."""
    peer = out.setdefault("quiver gateway", new_peer())
    if not GATEWAY_BIN.exists():
        peer["status"] = f"not run: no {GATEWAY_BIN.relative_to(ROOT)} (cargo build --release -p quiver-gateway)"
        return {}
    logs = work / "logs"
    peer["versions"] = {"quiver-gateway": crate_version(), "duckdb": duckdb_version()}
    peer["notes"].append("pool of 4 server connections (shared memory over a Unix socket), cache 256 MiB, an API key")
    peer["loads"] = load_times(paths["project"], work / "state", logs)
    if EXAMPLE_PROJECT.exists():
        example = work / "example"
        shutil.copytree(EXAMPLE_PROJECT, example, symlinks=True)
        shutil.rmtree(example / ".quiver-gateway", ignore_errors=True)
        example_loads = load_times(example, work / "example-state", logs)
        peer["loads"].update({f"example_{k}": v for k, v in example_loads.items()})
    service = services.start_gateway(GATEWAY_BIN, paths["project"], work / "state", logs, gateway_env())
    try:
        auth = {"Authorization": f"Bearer {data.TOKEN}"}
        path = scenarios.gateway_path(data.ENDPOINT, str(scenarios.FIXED_CUSTOMER))
        status, headers, body = services.get(service.base_url + path, auth)
        if status != 200 or "etag" not in headers:
            raise RuntimeError(f"the cached endpoint answered {status} {body[:200]!r}")
        plan = scenarios.gateway(headers["etag"])
        bodies = {"cache_hit.json": body}
        status, _, bodies["local_table.json"] = fetch(service, plan["local_table"], scenarios.FIXED_CUSTOMER)
        status, _, bodies["arrow_format.arrows"] = fetch(service, plan["arrow_format"], scenarios.FIXED_CUSTOMER)
        peer["rows"] = scenarios.rows_of("quiver gateway", body)
        for name in args.scenarios:
            records += measure(service, "quiver gateway", plan[name], args)
        peer["loads"]["rss_mb"] = service.rss_mb()
        peer["loads"]["cache_disk_bytes"] = services.dir_bytes(work / "state")
        _, _, metrics = services.get(service.admin_url + "/metrics")
        peer["notes"].append(cache_line(metrics.decode(errors="replace")))
    finally:
        service.stop()
    return bodies


def crate_version() -> str:
    for line in (ROOT / "Cargo.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    return "unknown"


def duckdb_version() -> str:
    import duckdb

    return duckdb.__version__


def cache_line(metrics: str) -> str:
    wanted = ("quiver_gateway_cache_hits_total", "quiver_gateway_cache_misses_total", "quiver_gateway_cache_bytes")
    found = [line for line in metrics.splitlines() if line.startswith(wanted)]
    return "cache after the runs: " + (", ".join(found) if found else "no cache metrics on /metrics")


def fallback_bodies(paths: dict[str, Path]) -> dict[str, bytes]:
    """The files nginx serves when the gateway did not run: the same rows in the gateway's envelope."""
    import duckdb

    con = duckdb.connect()
    columns = ", ".join(data.COLUMNS)
    rows = con.execute(
        f"SELECT {columns} FROM read_parquet(?) WHERE tenant_id = ? AND customer_id = ? "
        f"ORDER BY order_date, order_id LIMIT {data.LIMIT}",
        [str(paths["parquet"]), data.TENANT, scenarios.FIXED_CUSTOMER],
    ).fetchall()
    records = [
        dict(zip(data.COLUMNS, (v.isoformat() if hasattr(v, "isoformat") else v for v in row), strict=True))
        for row in rows
    ]
    body = json.dumps({"data": records, "meta": {"endpoint": data.ENDPOINT}}, separators=(",", ":")).encode()
    parquet = paths["parquet"]
    arrow = con.sql(f"SELECT {columns} FROM read_parquet('{parquet}') LIMIT 25").to_arrow_table()
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, arrow.schema) as writer:
        writer.write_table(arrow)
    return {"cache_hit.json": body, "local_table.json": body, "arrow_format.arrows": sink.getvalue().to_pybytes()}


def run_nginx(work: Path, bodies: dict[str, bytes], args, out: dict, records: list) -> None:
    peer = out.setdefault("nginx", new_peer())
    peer["versions"] = {"nginx": services.nginx_version()}
    peer["notes"].append(f"{args.nginx_workers} worker processes, the gateway's response bytes as static files")
    service = services.start_nginx(work / "nginx", bodies, args.nginx_workers)
    try:
        _, headers, _ = services.get(service.base_url + "/cache_hit.json")
        plan = scenarios.nginx(headers.get("etag", ""))
        for name in args.scenarios:
            records += measure(service, "nginx", plan[name], args)
        peer["loads"] = {"cold_load_ms": service.load_ms, "rss_mb": service.rss_mb()}
    finally:
        service.stop()


def run_peer(short: str, work: Path, paths: dict[str, Path], args, out: dict, records: list) -> None:
    name = NAMES[short]
    peer = out.setdefault(name, new_peer())
    binary = ROAPI_BIN if short == "roapi" else DATASETTE_BIN
    if not binary.exists():
        peer["status"] = f"not run: no {binary.relative_to(ROOT)} (tools/setup_bench_peers.sh)"
        return
    if short == "roapi":
        service = services.start_roapi(binary, paths["parquet"], work / "logs")
        plan = scenarios.roapi()
        peer["versions"] = {"roapi": pip_version(binary, "roapi")}
        peer["notes"].append("the parquet file loaded in memory (DataFusion), REST query API")
    else:
        service = services.start_datasette(binary, paths["sqlite"], work / "logs")
        plan = scenarios.datasette()
        peer["versions"] = {"datasette": pip_version(binary, "datasette")}
        peer["notes"].append("SQLite copy, immutable (-i), indexed on (tenant_id, customer_id, order_date, order_id)")
    try:
        _, _, body = fetch(service, plan["cache_hit"], scenarios.FIXED_CUSTOMER)
        peer["rows"] = scenarios.rows_of(name, body)
        for scenario in args.scenarios:
            if scenario in plan:
                records += measure(service, name, plan[scenario], args)
        peer["loads"] = {"cold_load_ms": service.load_ms, "rss_mb": service.rss_mb()}
    finally:
        service.stop()


def pip_version(binary: Path, package: str) -> str:
    python = binary.parent / "python"
    code = f"import importlib.metadata as m; print(m.version('{package}'))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.strip() or "unknown"


def new_peer() -> dict[str, Any]:
    return {"status": "ok", "versions": {}, "notes": [], "errors": [], "loads": {}}


def same_rows(out: dict[str, dict]) -> None:
    """Every peer that ran answered the fixed customer's request with the gateway's rows."""
    reference = out.get("quiver gateway", {}).get("rows")
    for name, peer in out.items():
        rows = peer.pop("rows", None)
        if reference is not None and rows is not None and rows != reference:
            peer["errors"].append({"peer": name, "message": "its rows differ from the gateway's for the same query"})


def machine_info(started: float, args: argparse.Namespace) -> dict[str, Any]:
    return {
        **results.machine_facts(ROOT, started),
        "rows": args.rows,
        "duration_s": args.duration,
        "passes": args.passes,
        "concurrency": CONCURRENCY,
        "wrk": wrk.version() if wrk.available() else "absent",
        "quick": args.quick,
        # Other work on the machine skews every figure alike; the load average says how much there was.
        "load_average_at_start": args.load_average,
    }


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    args.load_average = os.getloadavg()[0]
    if args.quick:
        args.rows, args.duration = min(args.rows, QUICK_ROWS), min(args.duration, QUICK_DURATION_S)
    if args.passes < 2:
        sys.exit("gateway-bench: --passes must be at least 2 (the median of the passes is reported)")
    if not wrk.available():
        sys.exit("gateway-bench: no wrk on PATH (tools/setup_bench_peers.sh installs it)")
    wanted = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PEERS))
    if unknown:
        sys.exit(f"gateway-bench: unknown peer(s) {unknown}; known: {PEERS}")
    work = Path(tempfile.mkdtemp(prefix="quiver-gateway-bench-"))
    peers: dict[str, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    try:
        log(f"writing {args.rows:,} rows under {work}")
        paths = data.prepare(work, args.rows)
        bodies: dict[str, bytes] = {}
        if "gateway" in wanted:
            try:
                bodies = run_gateway(work, paths, args, peers, records)
            except Exception as error:  # one peer failing leaves the others measured
                peers["quiver gateway"]["status"] = "failed"
                peers["quiver gateway"]["errors"].append({"peer": "quiver gateway", "message": str(error)})
                log(f"quiver gateway failed: {error}")
        if "nginx" in wanted:
            run_nginx(work, bodies or fallback_bodies(paths), args, peers, records)
            if not bodies:
                peers["nginx"]["notes"].append("the gateway did not run: nginx serves the same rows in its envelope")
        for short in ("roapi", "datasette"):
            if short not in wanted:
                continue
            try:
                run_peer(short, work, paths, args, peers, records)
            except Exception as error:
                peers[NAMES[short]]["status"] = "failed"
                peers[NAMES[short]]["errors"].append({"peer": NAMES[short], "message": str(error)})
                log(f"{short} failed: {error}")
        same_rows(peers)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for record in records:
        if record["errors"]:
            peers[record["peer"]]["errors"].append(
                {
                    "peer": record["peer"],
                    "message": f"{record['scenario']} c={record['connections']}: {record['errors']} failed requests",
                }
            )
    for peer in peers.values():
        if peer["status"] == "ok" and peer["errors"]:
            peer["status"] = f"{len(peer['errors'])} problem(s)"
    saved = {
        "suite": "gateway",
        "info": machine_info(started, args),
        "peers": peers,
        "targets": targets.compute(records, peers),
        "records": records,
    }
    return results.save(Path(args.out), saved, write_reports, log)


def write_reports(out: Path, saved: dict[str, Any]) -> None:
    report.write_md(out / "gateway.md", saved)
    report.write_svg(out / "gateway.svg", saved["records"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--rows", type=int, default=1_000_000)
    r.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    r.add_argument("--passes", type=int, default=2)
    r.add_argument("--nginx-workers", type=int, default=os.cpu_count() or 1)
    r.add_argument("--out", default=str(ROOT / "bench" / "results"))
    r.add_argument("--quick", action="store_true", help=f"at most {QUICK_ROWS:,} rows, {QUICK_DURATION_S} s runs")
    r.add_argument("--peers", default=",".join(PEERS))
    r.add_argument("--scenarios", default=",".join(scenarios.SCENARIOS))
    r.add_argument("--keep", action="store_true", help="keep the work directory (data, logs)")
    rep = sub.add_parser("report")
    rep.add_argument("dir", nargs="?", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.command == "run":
        args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
        return run(args)
    out = Path(args.dir)
    write_reports(out, json.loads((out / "gateway.json").read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
