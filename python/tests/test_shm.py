"""Shared-memory segments: layout, first-fit allocation, zero-copy claims, settings."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from quiver.shm import ALLOCATIONS_MAX, HEADER_BYTES, Segment, ShmConfig, ShmConfigError, ShmError

from .support import SHM_DIR, assert_unlinked

MIB = 1 << 20


@pytest.fixture
def segment() -> Segment:
    created = Segment.create(MIB)
    yield created
    created.close()


def test_header_layout(segment: Segment) -> None:
    header = bytes(segment._map[:24])
    assert header[:4] == b"VGIS"
    assert struct.unpack_from("<IQII", header, 4) == (1, MIB - HEADER_BYTES, 0, 0)
    assert segment.name.startswith("psm_") and len(segment.name) == 12


def test_attach_sees_the_same_table_and_does_not_unlink(segment: Segment) -> None:
    offset = segment.allocate(100)
    peer = Segment.attach(segment.name)
    assert (peer.size_bytes, peer.owner) == (MIB, False)
    assert peer._table.entries() == [(offset, 100)]
    peer.free(offset)
    assert segment.allocation_count() == 0
    peer.close()
    assert Segment.attach(segment.name).close() is None


def test_first_fit_with_aligned_offsets(segment: Segment) -> None:
    a, b, c = (segment.allocate(size) for size in (100, 200, 300))
    assert (a, b, c) == (HEADER_BYTES, HEADER_BYTES + 128, HEADER_BYTES + 384)
    segment.free(b)
    assert segment.allocate(150) == b, "the freed gap is reused"
    assert segment.allocate(MIB) is None, "nothing fits: go inline"
    assert segment.allocate(MIB - HEADER_BYTES) is None, "the data area is partly used"


def test_packed_peer_entries_are_respected(segment: Segment) -> None:
    struct.pack_into("<II4Q", segment._map, 16, 2, 0, HEADER_BYTES, 10, HEADER_BYTES + 10, 5)
    assert segment.allocate(8) == HEADER_BYTES + 64
    segment.free(HEADER_BYTES)
    assert segment._table.entries() == [(HEADER_BYTES + 10, 5), (HEADER_BYTES + 64, 8)]


def test_table_full_and_corrupt_tables_fall_back(segment: Segment) -> None:
    struct.pack_into("<I", segment._map, 16, ALLOCATIONS_MAX + 1)
    assert segment.allocate(8) is None
    struct.pack_into("<II2Q", segment._map, 16, 1, 0, 10, 10)
    assert segment.allocate(8) is None
    with pytest.raises(ShmError, match="corrupt"):
        segment.free(10)


def test_free_of_an_unknown_offset_is_an_error(segment: Segment) -> None:
    with pytest.raises(ShmError, match="no allocation"):
        segment.free(HEADER_BYTES)


def test_claims_are_zero_copy_and_free_after_release(segment: Segment) -> None:
    data = pa.RecordBatch.from_pydict({"v": list(range(1000))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_batch(data)
    payload = sink.getvalue()
    offset = segment.allocate(payload.size)
    assert offset is not None
    target = segment.writable(offset, payload.size)
    pa.FixedSizeBufferWriter(target).write(payload)
    region = segment.claim(offset, payload.size)
    batch = pa.ipc.open_stream(region).read_next_batch()
    assert batch.equals(data)
    assert segment._address <= batch.column(0).buffers()[1].address < segment._address + MIB
    del region, target
    assert segment.collect() == 0, "the batch still uses the region"
    del batch
    assert segment.collect() == 1
    assert segment.allocation_count() == 0


def test_claims_are_checked(segment: Segment) -> None:
    with pytest.raises(ShmError, match="no allocated region"):
        segment.claim(HEADER_BYTES, 8)
    with pytest.raises(ShmError, match="outside"):
        segment.claim(MIB - 4, 8)


@pytest.mark.parametrize("name", ["", "a/b", "..", "x" * 256, "psm_does_not_exist"])
def test_attach_rejects_bad_names(name: str) -> None:
    with pytest.raises(ShmError):
        Segment.attach(name)


def test_attach_rejects_a_foreign_header(segment: Segment) -> None:
    segment._map[:4] = b"NOPE"
    with pytest.raises(ShmError, match="magic"):
        Segment.attach(segment.name)


def test_the_owner_unlinks_on_close_and_an_attached_peer_does_not() -> None:
    owner = Segment.create(MIB)
    peer = Segment.attach(owner.name)
    peer.close()
    assert Segment.attach(owner.name).close() is None
    owner.close()
    assert_unlinked(owner.name)


def test_sizes_are_bounded() -> None:
    with pytest.raises(ShmError, match="must exceed"):
        Segment.create(HEADER_BYTES)


def test_config_defaults_and_parsing() -> None:
    assert ShmConfig.from_env({}) == ShmConfig()
    assert ShmConfig().min_batch_bytes == 128 * 1024
    assert ShmConfig().process_max_bytes == 4 << 30
    assert ShmConfig.from_env({"VGI_RPC_SHM_PROCESS_MAX_BYTES": "1073741824"}).process_max_bytes == 1 << 30
    config = ShmConfig.from_env(
        {"VGI_RPC_SHM_SIZE_BYTES": "67108864", "VGI_RPC_SHM_DEBUG": "TRUE", "VGI_RPC_SHM_MIN_BATCH_BYTES": " 0 "}
    )
    assert (config.segment_to_create(), config.debug, config.min_batch_bytes) == (64 * MIB, True, 0)
    assert config.wants_shm_for(1, 0) and not config.wants_shm_for(0, MIB)
    disabled = ShmConfig.from_env({"VGI_RPC_SHM_SIZE_BYTES": "1048576", "VGI_RPC_SHM_DISABLE": "1"})
    assert disabled.segment_to_create() is None and not disabled.wants_shm_for(10, 1 << 30)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("VGI_RPC_SHM_SIZE_BYTES", "64MiB"),
        ("VGI_RPC_SHM_SIZE_BYTES", "-1"),
        ("VGI_RPC_SHM_SIZE_BYTES", "65536"),
        ("VGI_RPC_SHM_SIZE_BYTES", "68719476737"),
        ("VGI_RPC_SHM_DISABLE", "maybe"),
        ("VGI_RPC_SHM_DEBUG", "2"),
        ("VGI_RPC_SHM_MIN_BATCH_BYTES", "1e6"),
        ("VGI_RPC_SHM_PROCESS_MAX_BYTES", "4GiB"),
    ],
)
def test_config_rejects_nonsense_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ShmConfigError, match=variable):
        ShmConfig.from_env({variable: value})


def test_segments_are_sparse_until_a_region_is_allocated() -> None:
    segment = Segment.create(64 << 20)
    try:
        committed = lambda: (SHM_DIR / segment.name).stat().st_blocks * 512  # noqa: E731
        assert committed() <= 65536, "only the header is committed at create"
        offset = segment.allocate(8 << 20)
        assert offset is not None
        assert (8 << 20) <= committed() < (32 << 20)
        segment.free(offset)
    finally:
        segment.close()
