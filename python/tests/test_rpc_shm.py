"""Large batches through shared memory, both directions, in one process over pipes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from quiver import Server, connect
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.shm import ShmConfig, reserved_segment_bytes

from .support import assert_unlinked

SEGMENT_BYTES = 16 << 20
SHM = ShmConfig(debug=True)


@pytest.fixture
def pair() -> Any:
    server = Server(ConformanceService, ConformanceServiceImpl(), shm=SHM)
    client = connect(ConformanceService, server.in_process(), shm=SHM, shm_size=SEGMENT_BYTES)
    yield client
    client.close()
    assert_unlinked(client.route.segment.name)


def test_large_request_and_result_travel_through_the_segment(pair: Any, capfd: pytest.CaptureFixture[str]) -> None:
    payload = b"\xa5" * (4 << 20)
    assert pair.route.segment.name_linked, "linked until the server has attached"
    assert pair.api.echo_large_binary(payload) == payload
    assert not pair.route.segment.name_linked, "unlinked once the server answered with data"
    assert_unlinked(pair.route.segment.name)
    assert pair.api.echo_large_binary(payload) == payload, "the server reuses its attachment"
    stats = pair.route.stats
    assert (stats.outbound_shm, stats.inbound_shm) == (2, 2)
    assert pair.route.segment.allocation_count() == 0, "both regions were freed by their readers"
    assert "[quiver-shm] attached psm_" in capfd.readouterr().err


def test_exchange_batches_are_zero_copy_both_ways(pair: Any) -> None:
    big = pa.RecordBatch.from_pydict({"value": pa.array(range(100_000), pa.float64())})
    segment = pair.route.segment
    with pair.api.exchange_scale(2.0) as call:
        for _ in range(3):
            answer = call.exchange(big)
            address = answer.batch.column(0).buffers()[1].address
            assert segment._address <= address < segment._address + SEGMENT_BYTES
            assert answer.batch.column(0)[99_999].as_py() == 199_998.0
            del answer
    assert pair.route.stats.outbound_shm == 3 and pair.route.stats.inbound_shm == 3
    assert segment.allocation_count() == 0


def test_small_batches_stay_inline_and_too_large_ones_fall_back(pair: Any) -> None:
    assert pair.api.echo_string("small") == "small"
    assert pair.route.stats.outbound_shm == 0
    huge = b"x" * (SEGMENT_BYTES - (1 << 20))
    assert len(pair.api.echo_large_binary(huge)) == len(huge)
    assert pair.route.stats.fallbacks == 0 and pair.route.stats.outbound_shm == 1


def test_disabled_shm_never_creates_a_segment() -> None:
    server = Server(ConformanceService, ConformanceServiceImpl(), shm=ShmConfig())
    client = connect(
        ConformanceService, server.in_process(), shm=ShmConfig(segment_size_bytes=SEGMENT_BYTES, disabled=True)
    )
    assert client.route is None
    assert client.api.echo_int(3) == 3
    client.close()


def test_a_segment_over_the_process_budget_leaves_the_connection_inline(capfd: pytest.CaptureFixture[str]) -> None:
    server = Server(ConformanceService, ConformanceServiceImpl(), shm=SHM)
    over = ShmConfig(debug=True, process_max_bytes=0)
    client = connect(ConformanceService, server.in_process(), shm=over, shm_size=SEGMENT_BYTES)
    try:
        assert client.route is None
        payload = b"\x5a" * (1 << 20)
        assert client.api.echo_large_binary(payload) == payload
    finally:
        client.close()
    assert "[quiver-shm] inline connection: a 16777216-byte segment would exceed" in capfd.readouterr().err
    before = reserved_segment_bytes()
    within = connect(ConformanceService, server.in_process(), shm=SHM, shm_size=SEGMENT_BYTES)
    assert within.route is not None and reserved_segment_bytes() == before + SEGMENT_BYTES
    within.close()
    assert reserved_segment_bytes() == before, "closing gives the bytes back"
