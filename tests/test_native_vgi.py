"""quiver_native's engine role of VGI (crates/quiver-python/src/vgi.rs, vgi_streams.rs): the Rust core
of the DuckDB extension driving the real allinone worker from Python, as quiver.spark does, without
Spark: split plans redeemed on another worker process, parallel scans with projection and filters,
scalar and table-in-out calls, and the errors each misuse gets.

tools/setup.sh installs the module into .venv; without it these tests fail and say so.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pytest

from quiver.spark import arguments


@pytest.fixture(scope="module")
def qn() -> ModuleType:
    try:
        import quiver_native
    except ImportError as exc:
        pytest.fail(f"quiver_native is not installed ({exc}): run tools/setup.sh")
    if not hasattr(quiver_native, "VgiWorker"):
        pytest.fail("quiver_native predates VgiWorker: run tools/setup.sh (it rebuilds the module)")
    return quiver_native


@pytest.fixture
def worker(qn: ModuleType, allinone: Path):
    return qn.VgiWorker(f"launch:{allinone}")


def args(worker, function: str, *positional, **named) -> pa.RecordBatch:
    return arguments.batch(worker.functions()[function]["arguments"], positional, named)


def column(batches, name: str) -> list:
    return sorted(v for b in batches for v in b.column(name).to_pylist())


def test_a_split_plan_redeems_on_another_worker(qn: ModuleType, worker, allinone: Path) -> None:
    plan = worker.plan_scan("split_numbers", args(worker, "split_numbers", 1000, splits=7))
    assert len(plan["requests"]) == 7 and plan["schema"].names == ["n"]
    other = qn.VgiWorker(str(allinone))
    got = column([b for r in plan["requests"] for b in other.redeem(r, plan["schema"])], "n")
    assert got == list(range(1000))
    assert not set(other.pids()) & set(worker.pids())
    # A function without a split plan has no requests.
    assert worker.plan_scan("numbers", args(worker, "numbers", 10))["requests"] is None


def test_a_parallel_scan_with_filters_reads_each_row_once(worker) -> None:
    reader = worker.scan("numbers", args(worker, "numbers", 200_000, batch_rows=1000), streams=4)
    assert column(reader, "n") == list(range(200_000))
    spec = (
        '{"encoding":"vgi.filters.v2","semantics":"vgi.duckdb.standard.v1","kind":"snapshot","predicates":'
        '[{"id":"q0","revision":0,"mode":"advisory","source":"query","expression":{"node":"comparison",'
        '"op":"ge","left":{"node":"column_ref","column_index":0,"column_name":"n"},'
        '"right":{"node":"literal","value_ref":0}}}]}'
    )
    values = pa.record_batch({"value_0": pa.array([199_990], pa.int64())})
    filtered = worker.scan("numbers", args(worker, "numbers", 200_000), None, spec, values, 2)
    assert column(filtered, "n") == list(range(199_990, 200_000))


def test_an_abandoned_scan_leaves_the_worker_serving(worker) -> None:
    reader = worker.scan("numbers", args(worker, "numbers", 10_000_000, batch_rows=1000), streams=2)
    next(reader)
    del reader
    assert column(worker.scan("numbers", args(worker, "numbers", 5)), "n") == list(range(5))


def test_scalar_and_table_in_out_calls(qn: ModuleType, worker) -> None:
    upper = worker.call("upper_case", args(worker, "upper_case"), pa.schema([("s", pa.string())]))
    answer, more = upper.exchange(pa.record_batch({"s": ["straße", None]}))
    assert answer.column(0).to_pylist() == ["STRASSE", None] and not more
    assert list(upper.finish()) == []
    echo = worker.call("echo", args(worker, "echo"), pa.schema([("x", pa.int64())]))
    batch = pa.record_batch({"x": pa.array([1, 2, 3], pa.int64())})
    assert echo.exchange(batch) == (batch, False)
    assert list(echo.finish()) == []
    with pytest.raises(qn.InvalidInputError, match="already finished"):
        echo.exchange(batch)


def test_misuse_is_named(qn: ModuleType, worker) -> None:
    with pytest.raises(qn.InvalidInputError, match="has no function nope"):
        worker.plan_scan("nope", args(worker, "numbers", 1))
    with pytest.raises(qn.InvalidInputError, match="numbers is a table function"):
        worker.call("numbers", args(worker, "numbers", 1), pa.schema([("x", pa.int64())]))
    with pytest.raises(qn.RpcError):
        worker.redeem(b"not an init request", pa.schema([("n", pa.int64())]))
    with pytest.raises(qn.InvalidInputError, match="expected one row"):
        worker.plan_scan("numbers", pa.record_batch({"positional_0": pa.array([1, 2], pa.int64())}))
    # The worker serves on after each.
    assert column(worker.scan("numbers", args(worker, "numbers", 3)), "n") == [0, 1, 2]


def test_a_worker_killed_mid_scan_is_named(qn: ModuleType, worker) -> None:
    reader = worker.scan("numbers", args(worker, "numbers", 1 << 40, batch_rows=1 << 16))
    next(reader)
    for pid in worker.pids():
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(qn.ConnectionLostError, match="quiver"):
        for _ in reader:
            pass
