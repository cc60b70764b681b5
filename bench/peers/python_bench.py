#!/usr/bin/env python3
"""``./quiver bench python``: quiver's Python SDK against vgi-rpc 0.52.2, same run, same workloads.

Both implementations run in this one interpreter (the oracle venv's Python, where
vgi-rpc lives; quiver is imported from ``python/``), so Python version, pyarrow and
machine are the same for both. Every figure is median [min–max] over ``--reps``
measured reps after a warm-up; the reps of quiver and vgi-rpc are interleaved, their
order rotating, so a slow spell of this noisy VM lands on both. Nothing is pinned.

    python python_bench.py run [--reps N] [--quick] [--out DIR]   # measure, write python.{md,json,svg}
    python python_bench.py report [DIR]                             # rewrite python.{md,svg} from python.json
    python python_bench.py serve-quiver [--unix PATH | --http]     # the quiver worker (BenchService)
    python python_bench.py serve-native [--unix PATH]              # the quiver_native worker (add only)

vgi-rpc's worker is ``vgi_rpc_bench.py serve`` (beside this file); the Rust worker is
``target/release/quiver-bench serve``. All three serve the same ``BenchService`` 1.0.0. Where the native
module ``quiver_native`` (crates/quiver-python) is installed, its unary ``add`` joins the unary rows of the
subprocess and unix transports: its Rust client calling its Rust server, whose body is the Python ``a + b``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(HERE))

import pyarrow as pa
from python_payloads import SMALL_BATCH, SMALL_SCHEMA, quiver_codecs, vgi_codecs
from python_plan import (
    LARGE_ROWS,
    NATIVE,
    PAYLOAD_NAMES,
    SMALL_ROWS,
    TRANSPORT_PLAN,
    Plan,
)
from python_report import write_markdown, write_svg
from python_timing import Figure, Rep, interleave, records, task_cpu_s, time_rep, timed

import quiver
from quiver import CallContext, ExchangeState, Output, ProducerState, Server, Stream
from quiver.transport.http import HttpClient, WsgiApp, WsgiConnection

SHM_SEGMENT_BYTES = 64 << 20
LARGE_SCHEMA = pa.schema([pa.field("x", pa.int64(), nullable=False)])


LARGE_BATCH = pa.record_batch([pa.array(range(LARGE_ROWS), pa.int64())], schema=LARGE_SCHEMA)


# ---------------------------------------------------------------------------
# quiver's BenchService (the same methods as crates/quiver-bench/src/service.rs).
# ---------------------------------------------------------------------------


class QBench:
    """BenchService 1.0.0, quiver's Python spelling."""

    protocol_name: ClassVar[str] = "BenchService"
    protocol_version: ClassVar[str] = "1.0.0"

    def add(self, a: float, b: float) -> float: ...
    def produce(self, count: int) -> Stream[ProducerState, None]: ...
    def produce_large(self, count: int) -> Stream[ProducerState, None]: ...
    def echo(self) -> Stream[ExchangeState, None]: ...


class Repeat(ProducerState):
    def __init__(self, remaining: int, batch: pa.RecordBatch) -> None:
        self.remaining, self.batch = remaining, batch

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.remaining == 0:
            return out.finish()
        self.remaining -= 1
        out.emit(self.batch)


class Echo(ExchangeState):
    def exchange(self, input: Any, out: Output, ctx: CallContext) -> None:
        out.emit(input.batch)


class QBenchImpl:
    def add(self, a: float, b: float) -> float:
        return a + b

    def produce(self, count: int) -> Stream[Any, None]:
        return Stream(SMALL_SCHEMA, Repeat(count, SMALL_BATCH))

    def produce_large(self, count: int) -> Stream[Any, None]:
        return Stream(LARGE_SCHEMA, Repeat(count, LARGE_BATCH))

    def echo(self) -> Stream[Any, None]:
        return Stream(SMALL_SCHEMA, Echo(), input_schema=SMALL_SCHEMA)


def serve_quiver(argv: list[str]) -> int:
    """The quiver worker: stdio by default, ``--unix PATH`` or ``--http``."""
    server = Server(QBench, QBenchImpl())
    if argv[:1] == ["--unix"]:
        quiver.serve_unix(server, argv[1])
    elif argv[:1] == ["--http"]:
        from quiver.transport.http import serve_http

        serve_http(WsgiApp(server))
    else:
        quiver.serve_stdio(server)
    return 0


def serve_native(argv: list[str]) -> int:
    """The quiver_native worker: BenchService's ``add`` with a Python body on the Rust server."""
    import quiver_native

    service = quiver_native.RpcService(QBench.protocol_name, QBench.protocol_version)
    numbers = pa.schema([pa.field("a", pa.float64(), nullable=False), pa.field("b", pa.float64(), nullable=False)])
    service.unary("add", numbers, pa.float64(), lambda a, b: a + b)
    if argv[:1] == ["--unix"]:
        service.serve_unix(argv[1])
    else:
        service.serve_stdio()
    return 0


# ---------------------------------------------------------------------------
# Sessions: a typed client over each transport, for both implementations.
# ---------------------------------------------------------------------------


def read_announcement(process: subprocess.Popen[bytes], prefix: str) -> str:
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    if not line.startswith(prefix):
        raise RuntimeError(f"worker announced {line!r}, expected {prefix}...")
    return line[len(prefix) :]


@contextlib.contextmanager
def worker(argv: list[str], prefix: str) -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        yield read_announcement(process, prefix), process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


QUIVER_WORKER = [sys.executable, str(Path(__file__).resolve()), "serve-quiver"]
VGI_WORKER = [sys.executable, str(HERE / "vgi_rpc_bench.py"), "serve"]
RUST_WORKER = [str(REPO / "target" / "release" / "quiver-bench"), "serve"]


class Session:
    """Uniform calls over both implementations' clients."""

    def __init__(self, impl: str, proxy: Any, worker_pid: int | None = None) -> None:
        self.impl, self.proxy, self.worker_pid = impl, proxy, worker_pid

    def cpu_s(self) -> float:
        """CPU time used so far by this process and the session's worker process (every thread)."""
        return time.process_time() + (task_cpu_s(self.worker_pid) if self.worker_pid else 0.0)

    def add(self) -> float:
        if self.impl == "quiver":
            return self.proxy.add(1.0, 2.0)  # type: ignore[no-any-return]
        return self.proxy.add(a=1.0, b=2.0)  # type: ignore[no-any-return]

    def produce(self, count: int, large: bool = False) -> tuple[Callable[[], Any], Callable[[], None]]:
        """(next batch, close) of a fresh producer stream."""
        if self.impl == "quiver":
            call = self.proxy.produce_large(count) if large else self.proxy.produce(count)
            return (lambda: call.tick().batch), call.close
        call = self.proxy.produce_large(count=count) if large else self.proxy.produce(count=count)

        def tick() -> Any:
            ab = call.tick()
            batch = ab.batch
            ab.release()
            return batch

        return tick, call.close

    def echo(self) -> tuple[Callable[[], Any], Callable[[], None]]:
        """(one echo round trip, close) of a fresh exchange stream."""
        if self.impl == "quiver":
            call = self.proxy.echo()
            return (lambda: call.exchange(SMALL_BATCH).batch), call.close
        from vgi_rpc.rpc import AnnotatedBatch

        call = self.proxy.echo()
        request = AnnotatedBatch(batch=SMALL_BATCH)

        def exchange() -> Any:
            ab = call.exchange(request)
            batch = ab.batch
            ab.release()
            return batch

        return exchange, call.close


@contextlib.contextmanager
def quiver_session(transport: str) -> Iterator[Session]:
    if transport in ("pipe", "shm"):
        server = Server(QBench, QBenchImpl())
        shm_size = SHM_SEGMENT_BYTES if transport == "shm" else None
        client = quiver.connect(QBench, server.in_process(), shm_size=shm_size)
        try:
            yield Session("quiver", client.api)
        finally:
            client.close()
    elif transport in ("subprocess", "subprocess+shm", "rust"):
        argv = RUST_WORKER if transport == "rust" else QUIVER_WORKER
        shm_size = SHM_SEGMENT_BYTES if transport == "subprocess+shm" else None
        connection = quiver.spawn(argv)
        client = quiver.connect(QBench, connection, shm_size=shm_size)
        try:
            yield Session("quiver", client.api, connection.process.pid)
        finally:
            client.close()
    elif transport == "unix":
        with (
            tempfile.TemporaryDirectory(prefix="quiver-bench-") as tmp,
            worker([*QUIVER_WORKER, "--unix", os.path.join(tmp, "q.sock")], "UNIX:") as (path, pid),
        ):
            client = quiver.connect(QBench, quiver.connect_unix(path))
            try:
                yield Session("quiver", client.api, pid)
            finally:
                client.close()
    elif transport == "http":
        with worker([*QUIVER_WORKER, "--http"], "PORT:") as (port, pid):
            http = HttpClient(QBench, f"http://127.0.0.1:{port}")
            try:
                yield Session("quiver", http.api, pid)
            finally:
                http.close()
    elif transport == "http-wsgi":
        app = WsgiApp(Server(QBench, QBenchImpl()))
        http = HttpClient(QBench, "http://in-process", connection=WsgiConnection(app))
        yield Session("quiver", http.api)
    else:
        raise ValueError(transport)


@contextlib.contextmanager
def vgi_session(transport: str) -> Iterator[Session]:
    from vgi_rpc.rpc import (
        RpcConnection,
        RpcServer,
        ShmPipeTransport,
        SubprocessTransport,
        make_pipe_pair,
        unix_connect,
    )
    from vgi_rpc.shm import ShmSegment
    from vgi_rpc_bench import BenchService, BenchServiceImpl

    segment = ShmSegment.create(SHM_SEGMENT_BYTES) if transport in ("shm", "subprocess+shm") else None
    try:
        if transport in ("pipe", "shm"):
            client_t, server_t = make_pipe_pair()
            server = RpcServer(BenchService, BenchServiceImpl())
            thread = threading.Thread(target=server.serve, args=(server_t,), daemon=True)
            thread.start()
            effective = ShmPipeTransport(client_t, segment) if segment is not None else client_t
            try:
                with RpcConnection(BenchService, effective) as proxy:
                    yield Session("vgi-rpc", proxy)
            finally:
                client_t.close()
                thread.join(timeout=5)
                server_t.close()
        elif transport in ("subprocess", "subprocess+shm", "rust"):
            sub = SubprocessTransport(RUST_WORKER if transport == "rust" else VGI_WORKER)
            effective = ShmPipeTransport(sub, segment) if segment is not None else sub  # type: ignore[arg-type]
            try:
                with RpcConnection(BenchService, effective) as proxy:
                    yield Session("vgi-rpc", proxy, sub._proc.pid)
            finally:
                sub.close()
        elif transport == "unix":
            with (
                tempfile.TemporaryDirectory(prefix="vgi-bench-") as tmp,
                worker([*VGI_WORKER, "--unix", os.path.join(tmp, "v.sock")], "UNIX:") as (path, pid),
                unix_connect(BenchService, path) as proxy,
            ):
                yield Session("vgi-rpc", proxy, pid)
        elif transport == "http":
            from vgi_rpc.http import http_connect

            with (
                worker([*VGI_WORKER, "--http"], "PORT:") as (port, pid),
                http_connect(BenchService, f"http://127.0.0.1:{port}") as proxy,
            ):
                yield Session("vgi-rpc", proxy, pid)
        elif transport == "http-wsgi":
            from vgi_rpc.http import http_connect, make_sync_client

            with http_connect(
                BenchService, client=make_sync_client(RpcServer(BenchService, BenchServiceImpl()))
            ) as proxy:
                yield Session("vgi-rpc", proxy)
        else:
            raise ValueError(transport)
    finally:
        if segment is not None:
            segment.unlink()
            with contextlib.suppress(BufferError):
                segment.close()


SESSIONS = {"quiver": quiver_session, "vgi-rpc": vgi_session}

NATIVE_WORKER = [sys.executable, str(Path(__file__).resolve()), "serve-native"]
# The transports where the native module's unary row is measured (the target names these).
NATIVE_TRANSPORTS = ("subprocess", "unix")


def native_available() -> bool:
    return importlib.util.find_spec("quiver_native") is not None


class NativeBench:
    """BenchService's ``add`` through quiver_native's RpcClient, spelled as vgi-rpc's proxy is."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def add(self, a: float, b: float) -> float:
        return self.client.call("add", a=a, b=b)  # type: ignore[no-any-return]


@contextlib.contextmanager
def native_session(transport: str) -> Iterator[Session]:
    import quiver_native

    protocol = (QBench.protocol_name, QBench.protocol_version)
    if transport == "subprocess":
        client = quiver_native.RpcClient.spawn(NATIVE_WORKER, protocol=protocol)
        with client:
            yield Session(NATIVE, NativeBench(client), _worker_pid_of(client))
    elif transport == "unix":
        with (
            tempfile.TemporaryDirectory(prefix="native-bench-") as tmp,
            worker([*NATIVE_WORKER, "--unix", os.path.join(tmp, "n.sock")], "UNIX:") as (path, pid),
            quiver_native.RpcClient.connect_unix(path, protocol=protocol) as client,
        ):
            yield Session(NATIVE, NativeBench(client), pid)
    else:
        raise ValueError(transport)


def _worker_pid_of(client: Any) -> int | None:
    """The spawned worker's pid, for its CPU time (the client's `worker_pid`, when it has one)."""
    return getattr(client, "worker_pid", None)


# ---------------------------------------------------------------------------
# Workloads.
# ---------------------------------------------------------------------------


def log(message: str) -> None:
    sys.stderr.write(f"[python bench] {message}\n")
    sys.stderr.flush()


def measure_serialization(plan: Plan) -> list[Figure]:
    codecs = {"quiver": quiver_codecs(), "vgi-rpc": vgi_codecs()}
    figures = []
    for name in PAYLOAD_NAMES:
        ops = plan.codec_ops_large if name == "b100k" else plan.codec_ops
        size = len(codecs["quiver"][name][0]())
        for direction in ("serialize", "deserialize"):
            runners = {}
            for impl, table in codecs.items():
                serialize, deserialize = table[name]
                data = serialize()
                op = serialize if direction == "serialize" else (lambda d=data, f=deserialize: f(d))
                for _ in range(max(ops // 10, 5)):
                    op()
                runners[impl] = lambda op=op, ops=ops: time_rep(ops, op)
            figures.append(
                interleave(Figure("codec", f"{direction} {name}", "memory", "latency", size), plan.reps, runners)
            )
    return figures


def measure_transport(plan: Plan, transport: str, workloads: tuple[str, ...]) -> list[Figure]:
    """Every workload of one transport, both implementations.

    Each rep opens fresh sessions (new worker processes, new server threads): left
    unpinned, the scheduler places a client and its server on one vCPU or on two, and
    keeps that placement for the life of the processes. A session per rep re-draws it
    every rep, so the median is not one lucky or unlucky placement.
    """
    figures = {
        "unary": Figure("unary", "add", transport, "latency", 16),
        "producer": Figure("stream", "producer 1K rows", transport, "rate", SMALL_BATCH.get_total_buffer_size()),
        "exchange": Figure("stream", "exchange 1K rows", transport, "rate", 2 * SMALL_BATCH.get_total_buffer_size()),
        "large": Figure("large", "producer 16 MiB", transport, "bandwidth", LARGE_ROWS * 8),
    }
    names = list(SESSIONS)
    for rep in range(plan.reps):
        for impl in names[rep % 2 :] + names[: rep % 2]:
            with SESSIONS[impl](transport) as session:
                if session.add() != 3.0:
                    raise RuntimeError(f"{impl} add(1, 2) is wrong")
                if "unary" in workloads:
                    for _ in range(plan.unary_warmup):
                        session.add()
                    figures["unary"].reps[impl].append(timed(session, plan.unary_ops, session.add))
                if "producer" in workloads:
                    figures["producer"].reps[impl].append(_stream_runner(plan, session, SMALL_ROWS, False)())
                if "exchange" in workloads:
                    figures["exchange"].reps[impl].append(_exchange_runner(plan, session)())
                if "large" in workloads:
                    figures["large"].reps[impl].append(_stream_runner(plan, session, LARGE_ROWS, True)())
        if "unary" in workloads and transport in NATIVE_TRANSPORTS and native_available():
            with native_session(transport) as session:
                if session.add() != 3.0:
                    raise RuntimeError(f"{NATIVE} add(1, 2) is wrong")
                for _ in range(plan.unary_warmup):
                    session.add()
                figures["unary"].reps.setdefault(NATIVE, []).append(timed(session, plan.unary_ops, session.add))
    return [figure for name, figure in figures.items() if name in workloads]


def _stream_runner(plan: Plan, session: Session, rows: int, large: bool) -> Callable[[], Rep]:
    warmup, ops = (plan.large_warmup, plan.large_ops) if large else (plan.stream_warmup, plan.stream_ops)

    def run() -> Rep:
        tick, close = session.produce(warmup + ops + 1, large)
        for _ in range(warmup):
            tick()

        def checked() -> None:
            if tick().num_rows != rows:
                raise RuntimeError("short batch")

        rep = timed(session, ops, checked)
        close()
        return rep

    return run


def _exchange_runner(plan: Plan, session: Session) -> Callable[[], Rep]:
    def run() -> Rep:
        exchange, close = session.echo()
        for _ in range(plan.stream_warmup):
            exchange()
        rep = timed(session, plan.stream_ops, exchange)
        close()
        return rep

    return run


# (transport, workloads): what each session measures.


def machine_info(started: float) -> dict[str, Any]:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True, text=True).stdout
    return {
        "machine": f"nproc {os.cpu_count()}, {cpu}, Linux {platform.release()}",
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "vgi_rpc": importlib.metadata.version("vgi-rpc"),
        "commit": commit + (" (with uncommitted changes)" if dirty.strip() else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": time.monotonic() - started,
    }


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python_bench.py run")
    parser.add_argument("--reps", type=int)
    parser.add_argument("--quick", action="store_true", help="fewer operations (a smoke run)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    parser.add_argument("--only", help="comma-separated transports (and 'codec') to measure")
    args = parser.parse_args(argv)
    plan = Plan.quick() if args.quick else Plan()
    if args.reps:
        plan.reps = args.reps
    only = set(args.only.split(",")) if args.only else None
    if importlib.util.find_spec("falcon") is None or importlib.util.find_spec("httpx2") is None:
        log("vgi-rpc's [http] extra is missing (falcon, waitress, httpx2): the HTTP rows are left out")
        TRANSPORT_PLAN[:] = [entry for entry in TRANSPORT_PLAN if not entry[0].startswith("http")]
    if not native_available():
        log("quiver_native is not installed (tools/setup.sh installs it): the native unary rows are left out")
    started = time.monotonic()
    figures: list[Figure] = []
    if only is None or "codec" in only:
        log("serialization")
        figures += measure_serialization(plan)
    for transport, workloads in TRANSPORT_PLAN:
        if only is not None and transport not in only:
            continue
        log(f"{transport}: {', '.join(workloads)}")
        figures += measure_transport(plan, transport, workloads)
    recs = records(figures)
    info = machine_info(started)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "python.json").write_text(json.dumps({"info": info, "plan": plan.__dict__, "records": recs}, indent=1))
    if only is None:
        write_markdown(out / "python.md", recs, info, plan)
    write_svg(out / "python.svg", recs)
    log(f"done in {info['wall_s']:.0f} s; results in {out}/python.{{md,json,svg}}")
    return 0


def report(argv: list[str]) -> int:
    """Rewrites python.md and python.svg from python.json (no measuring)."""
    out = Path(argv[0] if argv else REPO / "bench" / "results")
    saved = json.loads((out / "python.json").read_text())
    write_markdown(out / "python.md", saved["records"], saved["info"], Plan(**saved["plan"]))
    write_svg(out / "python.svg", saved["records"])
    return 0


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "report":
        return report(sys.argv[2:])
    if len(sys.argv) >= 2 and sys.argv[1] == "serve-quiver":
        return serve_quiver(sys.argv[2:])
    if len(sys.argv) >= 2 and sys.argv[1] == "serve-native":
        return serve_native(sys.argv[2:])
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main())
