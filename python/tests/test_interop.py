"""The Python client against other workers (quiver's Rust one, vgi-rpc's reference one): inline and through shm."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from quiver import Client, LogRecord, RpcError, connect, spawn
from quiver.conformance import ConformanceService
from quiver.conformance.types import AllTypes, Point, Status, build_rich_header
from quiver.shm import ShmConfig

from .support import assert_unlinked

SEGMENT_BYTES = 16 << 20


def worker_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("VGI_RPC_SHM_")}


@pytest.fixture
def logs() -> list[LogRecord]:
    return []


@pytest.fixture(params=["rust", "reference"])
def worker(request: pytest.FixtureRequest) -> Path:
    if request.param == "rust":
        return Path(request.getfixturevalue("rust_worker"))
    return Path(request.getfixturevalue("oracle_cli")).with_name("vgi-rpc-conformance")


@pytest.fixture
def inline(worker: Path, logs: list[LogRecord]) -> Iterator[Client[ConformanceService]]:
    client = connect(ConformanceService, spawn([str(worker)], env=worker_env()), on_log=logs.append, shm=ShmConfig())
    yield client
    client.close()


@pytest.fixture
def with_shm(worker: Path) -> Iterator[Client[ConformanceService]]:
    connection = spawn([str(worker)], env=worker_env())
    client = connect(ConformanceService, connection, shm=ShmConfig(), shm_size=SEGMENT_BYTES)
    yield client
    client.close()
    assert client.route is not None
    assert_unlinked(client.route.segment.name)


def test_unary(inline: Client[ConformanceService], logs: list[LogRecord]) -> None:
    api: Any = inline.api
    assert api.echo_string("héllo") == "héllo"
    assert api.echo_enum(Status.PENDING) is Status.PENDING
    assert api.echo_point(Point(1.5, 2.5)) == Point(1.5, 2.5)
    assert api.with_defaults(7) == "required=7, optional_str=default, optional_int=42"
    value = AllTypes(
        "s", b"b", 1, 2.5, False, [], [], {}, Status.CLOSED, Point(0, 0), None, 3, None, [], 5, 0.5, [[]], {}
    )
    assert api.echo_all_types(value) == value
    assert api.echo_with_multi_logs("m") == "m"
    assert [r.level.value for r in logs] == ["DEBUG", "INFO", "WARN"]
    with pytest.raises(RpcError) as caught:
        api.raise_type_error("type error")
    assert caught.value.error_type == "TypeError"
    assert api.echo_large_binary(b"\x5a" * (4 << 20)) == b"\x5a" * (4 << 20)


def test_producer(inline: Client[ConformanceService]) -> None:
    api: Any = inline.api
    assert [b.batch.to_pydict() for b in api.produce_n(3)] == [{"index": [i], "value": [i * 10]} for i in range(3)]
    call = api.produce_with_rich_header(7, 2)
    assert call.header.enum_field is Status.ACTIVE and call.header.list_of_int == build_rich_header(7).list_of_int
    assert len(list(call)) == 2
    with pytest.raises(RpcError, match="intentional error"):
        list(api.produce_error_mid_stream(1))
    assert api.echo_int(1) == 1


def test_exchange_and_cancel(inline: Client[ConformanceService]) -> None:
    api: Any = inline.api
    with api.exchange_scale(3.0) as call:
        answer = call.exchange(pa.RecordBatch.from_pydict({"value": [1.0, 2.0, 3.0]}))
        assert answer.batch.column(0).to_pylist() == [3.0, 6.0, 9.0]
    with api.exchange_cast_compatible() as call:
        answer = call.exchange(pa.RecordBatch.from_pydict({"value": pa.array([1, 2], pa.int32())}))
        assert answer.batch.schema.field("value").type == pa.float64()
    api.reset_cancel_probe()
    call = api.cancellable_exchange()
    call.exchange(pa.RecordBatch.from_pydict({"value": [1.0]}))
    call.cancel()
    assert api.cancel_probe_counters() == [0, 1, 1]


def test_shared_memory_both_ways(with_shm: Client[ConformanceService]) -> None:
    api: Any = with_shm.api
    payload = b"\xa5" * (4 << 20)
    assert api.echo_large_binary(payload) == payload
    big = pa.RecordBatch.from_pydict({"value": pa.array(range(200_000), pa.float64())})
    with api.exchange_scale(0.5) as call:
        for _ in range(3):
            assert call.exchange(big).batch.column(0)[199_999].as_py() == 99_999.5
    assert [b.batch.num_rows for b in api.produce_large_batches(50_000, 2)] == [50_000, 50_000]
    stats = with_shm.route.stats  # type: ignore[union-attr]
    assert stats.outbound_shm == 4, "the 4 MiB request and three exchange inputs"
    assert stats.inbound_shm == 6, "the 4 MiB result, three answers, two producer batches"
    assert api.echo_int(1) == 1, "regions released between calls are freed on the client's next turn"
    assert with_shm.route.segment.allocation_count() == 0  # type: ignore[union-attr]
