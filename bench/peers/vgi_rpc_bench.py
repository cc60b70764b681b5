#!/usr/bin/env python3
"""The vgi-rpc side of ``./quiver bench rpc``.

Defines ``BenchService`` 1.0.0 with vgi-rpc's own Protocol / Stream API (the same
methods as ``crates/quiver-bench/src/service.rs``), then measures it through
vgi-rpc's public client API on each transport, with the counts of the plan the
Rust harness passes in.

    python vgi_rpc_bench.py bench --plan '<json>'   # measure; JSON lines on stdout
    python vgi_rpc_bench.py serve [--pin CPU] [--unix P | --tcp H:P]   # the worker (vgi_rpc.run_server)

Output, one JSON object per line: ``{"info": {...}}`` once, ``{"measurement": {...}}``
per figure (workload, variant, transport, implementation, placement, rows_per_op,
bytes_per_op, reps: [{ops, total_s, p50_s, p99_s}]), and ``{"failure": "..."}``
for a part that could not run. Progress goes to stderr.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from vgi_rpc.metadata import SHM_SOURCE_KEY
from vgi_rpc.rpc import (
    AnnotatedBatch,
    CallContext,
    ExchangeState,
    OutputCollector,
    ProducerState,
    RpcConnection,
    RpcServer,
    ShmPipeTransport,
    Stream,
    SubprocessTransport,
    make_pipe_pair,
    run_server,
    tcp_connect,
    unix_connect,
)
from vgi_rpc.shm import ShmSegment

IMPLEMENTATION = "vgi-rpc"
SMALL_ROWS = 1024
LARGE_ROWS = 2 * 1024 * 1024

SMALL_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
    ]
)
LARGE_SCHEMA = pa.schema([pa.field("x", pa.int64(), nullable=False)])
ROWS_SCHEMA = pa.schema([pa.field("rows", pa.int64(), nullable=False)])

SMALL_BATCH = pa.record_batch(
    [
        pa.array(range(SMALL_ROWS), pa.int64()),
        pa.array([i * 0.5 for i in range(SMALL_ROWS)], pa.float64()),
        pa.array([f"row-{i}" for i in range(SMALL_ROWS)], pa.string()),
    ],
    schema=SMALL_SCHEMA,
)
LARGE_BATCH = pa.record_batch([pa.array(range(LARGE_ROWS), pa.int64())], schema=LARGE_SCHEMA)
LARGE_SUM = LARGE_ROWS * (LARGE_ROWS - 1) // 2


class BenchService(Protocol):
    """The benchmark protocol; mirrors quiver-bench's service.rs."""

    protocol_name: ClassVar[str] = "BenchService"
    protocol_version: ClassVar[str] = "1.0.0"

    def add(self, a: float, b: float) -> float:
        """Return a + b."""
        ...

    def produce(self, count: int) -> Stream[ProducerState]:
        """Emit `count` 1K-row batches, one per tick."""
        ...

    def produce_large(self, count: int) -> Stream[ProducerState]:
        """Emit `count` 16 MiB batches, one per tick."""
        ...

    def echo(self) -> Stream[ExchangeState]:
        """Return every 1K-row input batch as it came."""
        ...

    def echo_large(self) -> Stream[ExchangeState]:
        """Return every 16 MiB input batch as it came."""
        ...

    def sink(self) -> Stream[ExchangeState]:
        """Answer every input batch with its row count (one row)."""
        ...


@dataclass
class RepeatState(ProducerState):
    """Emit one pre-built batch `remaining` times, then finish."""

    remaining: int
    large: bool = False

    def produce(self, out: OutputCollector, ctx: CallContext) -> None:
        """One batch per tick."""
        if self.remaining == 0:
            out.finish()
            return
        self.remaining -= 1
        out.emit(LARGE_BATCH if self.large else SMALL_BATCH)


@dataclass
class EchoState(ExchangeState):
    """Send each input back."""

    def exchange(self, input: AnnotatedBatch, out: OutputCollector, ctx: CallContext) -> None:
        """Echo."""
        out.emit(input.batch)


@dataclass
class SinkState(ExchangeState):
    """Answer each input with its row count."""

    def exchange(self, input: AnnotatedBatch, out: OutputCollector, ctx: CallContext) -> None:
        """Count."""
        out.emit(pa.record_batch([pa.array([input.batch.num_rows], pa.int64())], schema=ROWS_SCHEMA))


class BenchServiceImpl:
    """The server side."""

    def add(self, a: float, b: float) -> float:
        """Return a + b."""
        return a + b

    def produce(self, count: int) -> Stream[RepeatState]:
        """Small producer."""
        return Stream(output_schema=SMALL_SCHEMA, state=RepeatState(remaining=count))

    def produce_large(self, count: int) -> Stream[RepeatState]:
        """Large producer."""
        return Stream(output_schema=LARGE_SCHEMA, state=RepeatState(remaining=count, large=True))

    def echo(self) -> Stream[EchoState]:
        """Small echo."""
        return Stream(output_schema=SMALL_SCHEMA, state=EchoState(), input_schema=SMALL_SCHEMA)

    def echo_large(self) -> Stream[EchoState]:
        """Large echo."""
        return Stream(output_schema=LARGE_SCHEMA, state=EchoState(), input_schema=LARGE_SCHEMA)

    def sink(self) -> Stream[SinkState]:
        """Row counter."""
        return Stream(output_schema=ROWS_SCHEMA, state=SinkState(), input_schema=LARGE_SCHEMA)


# ---------------------------------------------------------------------------
# Timing: the same definitions as crates/quiver-bench/src/stats.rs.
# ---------------------------------------------------------------------------


def nearest_rank(sorted_ns: list[int], q: float) -> int:
    """Smallest value with at least q of the values at or below it."""
    rank = math.ceil(q * len(sorted_ns))
    return sorted_ns[min(max(rank, 1), len(sorted_ns)) - 1]


def time_rep(ops: int, op: Callable[[], None]) -> dict[str, float]:
    """Run `op` `ops` times, timing each; p50/p99 per op and the wall time."""
    clock = time.perf_counter_ns
    times = [0] * ops
    started = clock()
    for i in range(ops):
        t = clock()
        op()
        times[i] = clock() - t
    total_s = (clock() - started) / 1e9
    times.sort()
    return {
        "ops": ops,
        "total_s": total_s,
        "p50_s": nearest_rank(times, 0.50) / 1e9,
        "p99_s": nearest_rank(times, 0.99) / 1e9,
    }


def emit(kind: str, payload: Any) -> None:
    """One JSON line on stdout."""
    sys.stdout.write(json.dumps({kind: payload}) + "\n")
    sys.stdout.flush()


def log(message: str) -> None:
    """Progress on stderr."""
    sys.stderr.write(f"[vgi-rpc peer] {message}\n")
    sys.stderr.flush()


def measurement(
    workload: str,
    variant: str,
    transport: str,
    placement: str,
    rows_per_op: int,
    bytes_per_op: int,
    reps: list[dict[str, float]],
) -> None:
    """Print one figure."""
    emit(
        "measurement",
        {
            "workload": workload,
            "variant": variant,
            "transport": transport,
            "implementation": IMPLEMENTATION,
            "placement": placement,
            "rows_per_op": rows_per_op,
            "bytes_per_op": bytes_per_op,
            "reps": reps,
        },
    )


# ---------------------------------------------------------------------------
# Connections, one per (transport, shm) session.
# ---------------------------------------------------------------------------


def worker_cmd(server_cpu: int, *args: str) -> list[str]:
    """This script as a worker under the same interpreter, pinned to `server_cpu`."""
    return [sys.executable, os.path.abspath(__file__), "serve", "--pin", str(server_cpu), *args]


def pin(cpu: int) -> None:
    """Restrict the calling thread (pid 0 = this thread on Linux) to `cpu`."""
    os.sched_setaffinity(0, {cpu})


@contextlib.contextmanager
def with_segment(size: int | None) -> Iterator[ShmSegment | None]:
    """A client-owned segment (or none), unlinked at the end."""
    if size is None:
        yield None
        return
    segment = ShmSegment.create(size)
    try:
        yield segment
    finally:
        segment.unlink()
        with contextlib.suppress(BufferError):
            segment.close()


@contextlib.contextmanager
def open_session(transport: str, cpus: tuple[int, int], shm_size: int | None) -> Iterator[Any]:
    """A typed BenchService proxy over `transport`, client on cpus[0] and server on
    cpus[1], with shm when `shm_size` is set.
    """
    client_cpu, server_cpu = cpus
    pin(client_cpu)
    with with_segment(shm_size) as segment:
        if transport == "pipe":
            client_t, server_t = make_pipe_pair()
            server = RpcServer(BenchService, BenchServiceImpl())

            def serve_pinned() -> None:
                pin(server_cpu)
                server.serve(server_t)

            thread = threading.Thread(target=serve_pinned, daemon=True)
            thread.start()
            effective = ShmPipeTransport(client_t, segment) if segment is not None else client_t
            try:
                with RpcConnection(BenchService, effective) as proxy:
                    yield proxy
            finally:
                client_t.close()
                thread.join(timeout=5)
                server_t.close()
        elif transport == "subprocess":
            sub = SubprocessTransport(worker_cmd(server_cpu))
            effective = ShmPipeTransport(sub, segment) if segment is not None else sub  # type: ignore[arg-type]
            try:
                with RpcConnection(BenchService, effective) as proxy:
                    yield proxy
            finally:
                sub.close()
        elif transport in ("unix", "tcp"):
            with tempfile.TemporaryDirectory(prefix="vgi-bench-") as tmp:
                args = ["--unix", os.path.join(tmp, "bench.sock")] if transport == "unix" else ["--tcp", "127.0.0.1:0"]
                proc = subprocess.Popen(worker_cmd(server_cpu, *args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
                try:
                    assert proc.stdout is not None
                    line = proc.stdout.readline().decode().strip()
                    if transport == "unix":
                        if not line.startswith("UNIX:"):
                            raise RuntimeError(f"worker announced {line!r}")
                        connection = unix_connect(BenchService, line[len("UNIX:") :])
                    else:
                        if not line.startswith("TCP:"):
                            raise RuntimeError(f"worker announced {line!r}")
                        host, _, port = line[len("TCP:") :].rpartition(":")
                        connection = tcp_connect(BenchService, host, int(port))
                    with connection as proxy:
                        yield proxy
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
        else:
            raise ValueError(f"unknown transport {transport}")


# ---------------------------------------------------------------------------
# Workloads.
# ---------------------------------------------------------------------------


def unary(proxy: Any, plan: dict[str, Any]) -> list[dict[str, float]]:
    """add(1, 2) calls."""
    add = proxy.add
    result = add(a=1.0, b=2.0)
    if result != 3.0:
        raise RuntimeError(f"add(1, 2) returned {result!r}")
    for _ in range(plan["unary_warmup"]):
        add(a=1.0, b=2.0)
    return [time_rep(plan["unary_ops"], lambda: add(a=1.0, b=2.0)) for _ in range(plan["reps"])]


def finish_producer(session: Any) -> None:
    """The producer must end after its count; then close the stream."""
    try:
        session.tick()
    except StopIteration:
        session.close()
        return
    raise RuntimeError("producer did not finish after its count")


def producer_small(proxy: Any, plan: dict[str, Any]) -> list[dict[str, float]]:
    """Ticks of 1K-row batches; one stream per rep."""
    reps = []
    for _ in range(plan["reps"]):
        session = proxy.produce(count=plan["stream_warmup"] + plan["stream_ops"])

        def tick(session: Any = session) -> None:
            ab = session.tick()
            if ab.batch.num_rows != SMALL_ROWS:
                raise RuntimeError(f"producer batch has {ab.batch.num_rows} rows")
            ab.release()

        for _ in range(plan["stream_warmup"]):
            tick()
        reps.append(time_rep(plan["stream_ops"], tick))
        finish_producer(session)
    return reps


def exchange_small(proxy: Any, plan: dict[str, Any]) -> list[dict[str, float]]:
    """Exchanges echoing a 1K-row batch; one stream per rep."""
    reps = []
    request = AnnotatedBatch(batch=SMALL_BATCH)
    for _ in range(plan["reps"]):
        session = proxy.echo()
        first = session.exchange(request)
        if not first.batch.equals(SMALL_BATCH):
            raise RuntimeError("echo returned a different batch")
        first.release()

        def exchange(session: Any = session) -> None:
            ab = session.exchange(request)
            ab.release()

        for _ in range(1, plan["stream_warmup"]):
            exchange()
        reps.append(time_rep(plan["stream_ops"], exchange))
        session.close()
    return reps


def large_producer(proxy: Any, plan: dict[str, Any], shm: bool, total: bool) -> list[dict[str, float]]:
    """Ticks of 16 MiB batches (server→client); with `total`, sum every value."""
    reps = []
    for _ in range(plan["reps"]):
        session = proxy.produce_large(count=plan["large_warmup"] + plan["large_ops"])

        def tick(session: Any = session) -> None:
            ab = session.tick()
            if ab.batch.num_rows != LARGE_ROWS:
                raise RuntimeError(f"large batch has {ab.batch.num_rows} rows")
            if shm and (ab.custom_metadata is None or ab.custom_metadata.get(SHM_SOURCE_KEY) is None):
                raise RuntimeError("shm session received a large batch inline")
            if total and pc.sum(ab.batch.column(0)).as_py() != LARGE_SUM:
                raise RuntimeError("large batch arrived with different values")
            ab.release()

        for _ in range(plan["large_warmup"]):
            tick()
        reps.append(time_rep(plan["large_ops"], tick))
        finish_producer(session)
    return reps


def large_sink(proxy: Any, plan: dict[str, Any]) -> list[dict[str, float]]:
    """Exchanges sending a 16 MiB batch (client→server), answered by one row."""
    reps = []
    request = AnnotatedBatch(batch=LARGE_BATCH)
    for _ in range(plan["reps"]):
        session = proxy.sink()

        def exchange(session: Any = session) -> None:
            ab = session.exchange(request)
            rows = ab.batch.column(0)[0].as_py()
            if rows != LARGE_ROWS:
                raise RuntimeError(f"sink counted {rows} rows")
            ab.release()

        for _ in range(plan["large_warmup"]):
            exchange()
        reps.append(time_rep(plan["large_ops"], exchange))
        session.close()
    return reps


def large_echo(proxy: Any, plan: dict[str, Any], shm: bool) -> list[dict[str, float]]:
    """Exchanges echoing a 16 MiB batch (both directions)."""
    reps = []
    request = AnnotatedBatch(batch=LARGE_BATCH)
    for _ in range(plan["reps"]):
        session = proxy.echo_large()
        first = session.exchange(request)
        if not first.batch.equals(LARGE_BATCH):
            raise RuntimeError("large echo returned a different batch")
        # The server answers through shm only if the request came through it.
        if shm and (first.custom_metadata is None or first.custom_metadata.get(SHM_SOURCE_KEY) is None):
            raise RuntimeError("shm session echoed a large batch inline")
        first.release()

        def exchange(session: Any = session) -> None:
            ab = session.exchange(request)
            ab.release()

        for _ in range(1, plan["large_warmup"]):
            exchange()
        reps.append(time_rep(plan["large_ops"], exchange))
        session.close()
    return reps


EVERYTHING = (True, True, True, False)
UNARY_ONLY = (True, False, False, False)
SMALL_ONLY = (True, True, False, False)
SESSIONS = [
    # transport, shm, placement, (unary, small streams, large, large with sum): as quiver_runs.rs
    ("pipe", False, "cross-cpu", EVERYTHING),
    ("pipe", True, "cross-cpu", (False, False, True, False)),
    ("subprocess", False, "cross-cpu", (True, True, True, True)),
    ("subprocess", True, "cross-cpu", (True, False, True, True)),
    ("unix", False, "cross-cpu", UNARY_ONLY),
    ("tcp", False, "cross-cpu", UNARY_ONLY),
    ("pipe", False, "same-cpu", SMALL_ONLY),
    ("subprocess", False, "same-cpu", SMALL_ONLY),
]


def run_session(
    plan: dict[str, Any], transport: str, shm: bool, placement: str, workloads: tuple[bool, bool, bool, bool]
) -> None:
    """Every workload of one session; each figure is printed as soon as it is done."""
    do_unary, do_small, do_large, do_sum = workloads
    variant = "shm" if shm else "inline"
    small_bytes = SMALL_BATCH.get_total_buffer_size()
    rows, large_bytes = plan["large_rows"], plan["large_rows"] * 8
    cpus = tuple(plan["cross_cpu"] if placement == "cross-cpu" else plan["same_cpu"])
    where = (variant, transport, placement)
    with open_session(transport, cpus, plan["shm_segment_bytes"] if shm else None) as proxy:  # type: ignore[arg-type]
        if do_unary:
            measurement("unary.add", *where, 1, 16, unary(proxy, plan))
        if do_small:
            measurement("producer.1k", *where, SMALL_ROWS, small_bytes, producer_small(proxy, plan))
            measurement("exchange.echo-1k", *where, 2 * SMALL_ROWS, 2 * small_bytes, exchange_small(proxy, plan))
        if do_large:
            measurement("large.server-to-client", *where, rows, large_bytes, large_producer(proxy, plan, shm, False))
            if do_sum:
                reps = large_producer(proxy, plan, shm, total=True)
                measurement("large.server-to-client+sum", *where, rows, large_bytes, reps)
            measurement("large.client-to-server", *where, rows, large_bytes, large_sink(proxy, plan))
            measurement("large.echo", *where, 2 * rows, 2 * large_bytes, large_echo(proxy, plan, shm))


def bench(plan: dict[str, Any]) -> int:
    """All sessions; a failing session is reported and the others still run."""
    if plan["large_rows"] != LARGE_ROWS or plan["small_rows"] != SMALL_ROWS:
        raise SystemExit(f"plan batch sizes {plan['small_rows']}/{plan['large_rows']} differ from this script's")
    emit(
        "info",
        {"python": sys.version, "vgi_rpc": importlib.metadata.version("vgi-rpc"), "pyarrow": pa.__version__},
    )
    failures = 0
    for transport, shm, placement, workloads in SESSIONS:
        variant = "shm" if shm else "inline"
        if placement == "same-cpu" and plan["same_cpu"] == plan["cross_cpu"]:
            continue  # one CPU: the cross-cpu sessions already were same-cpu
        log(f"{transport}/{variant}/{placement}")
        try:
            run_session(plan, transport, shm, placement, workloads)
        except Exception as exc:
            failures += 1
            traceback.print_exc(file=sys.stderr)
            emit("failure", f"vgi-rpc {transport}/{variant}/{placement}: {type(exc).__name__}: {exc}")
    return 1 if failures else 0


def main() -> int:
    """Dispatch `bench` or `serve`."""
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        rest = sys.argv[2:]
        if len(rest) >= 2 and rest[0] == "--pin":
            pin(int(rest[1]))
            rest = rest[2:]
        sys.argv = [sys.argv[0], *rest]
        run_server(BenchService, BenchServiceImpl())
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "bench" and sys.argv[2] == "--plan":
        return bench(json.loads(sys.argv[3]))
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main())
