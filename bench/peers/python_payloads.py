"""The payloads of ``./quiver bench python``'s serialization table, spelled in both implementations
(quiver's dataclasses and vgi-rpc's), their values, and each implementation's encode/decode pair.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from python_plan import SMALL_ROWS

from quiver.rpc import protocol_spec
from quiver.rpc.conform import decode_params
from quiver.rpc.dispatch import request_envelope
from quiver.wire.reader import decode_stream
from quiver.wire.sink import GatherBuffer
from quiver.wire.writer import StreamWriter

SMALL_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
    ]
)


def small_batch(rows: int) -> pa.RecordBatch:
    return pa.record_batch(
        [
            pa.array(range(rows), pa.int64()),
            pa.array([i * 0.5 for i in range(rows)], pa.float64()),
            pa.array([f"row-{i}" for i in range(rows)], pa.string()),
        ],
        schema=SMALL_SCHEMA,
    )


SMALL_BATCH = small_batch(SMALL_ROWS)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


@dataclass
class QInner:
    x: float
    y: float
    label: str


@dataclass
class QNested:
    name: str
    inner: QInner
    weight: float


@dataclass
class QComplex:
    id: int
    name: str
    values: list[float]
    tags: list[str]
    color: Color
    palette: list[Color]
    inner: QInner
    counts: dict[str, int]
    note: str | None = None


class QPayloads:
    """One method per payload type; the request batch is what is measured."""

    def f(self, value: float) -> None: ...
    def s(self, value: str) -> None: ...
    def lf(self, value: list[float]) -> None: ...
    def d(self, value: dict[str, int]) -> None: ...
    def nd(self, value: QNested) -> None: ...
    def cx(self, value: QComplex) -> None: ...


try:  # vgi-rpc's spelling of the same types; absent only where vgi-rpc is not installed
    from typing import Protocol

    from vgi_rpc.utils import ArrowSerializableDataclass

    @dataclass(frozen=True)
    class VInner(ArrowSerializableDataclass):
        x: float
        y: float
        label: str

    @dataclass(frozen=True)
    class VNested(ArrowSerializableDataclass):
        name: str
        inner: VInner
        weight: float

    @dataclass(frozen=True)
    class VComplex(ArrowSerializableDataclass):
        id: int
        name: str
        values: list[float]
        tags: list[str]
        color: Color
        palette: list[Color]
        inner: VInner
        counts: dict[str, int]
        note: str | None = None

    class VPayloads(Protocol):
        def f(self, value: float) -> None: ...
        def s(self, value: str) -> None: ...
        def lf(self, value: list[float]) -> None: ...
        def d(self, value: dict[str, int]) -> None: ...
        def nd(self, value: VNested) -> None: ...
        def cx(self, value: VComplex) -> None: ...

except ImportError:  # pragma: no cover
    pass


def payload_values(inner: type, nested: type, complex_: type) -> dict[str, Any]:
    point = inner(1.5, -2.25, "origin")
    return {
        "f": 3.14159,
        "s": "the quick brown fox jumps over the lazy dog",
        "lf": [i * 0.25 for i in range(100)],
        "d": {f"key{i:02d}": i for i in range(50)},
        "nd": nested("widget", point, 0.5),
        "cx": complex_(
            7,
            "complex",
            [i * 1.5 for i in range(20)],
            ["a", "bb", "ccc", "dddd", "eeeee"],
            Color.GREEN,
            [Color.RED, Color.BLUE, Color.GREEN, Color.RED],
            point,
            {f"c{i}": i * i for i in range(5)},
            None,
        ),
    }


def quiver_codecs() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """(serialize, deserialize) per payload, quiver's way: request batch → IPC stream → values."""
    spec_of = protocol_spec(QPayloads).methods
    values = payload_values(QInner, QNested, QComplex)
    codecs: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {}
    for name, value in values.items():
        spec = spec_of[name]
        metadata = {
            "vgi_rpc.method": name,
            "vgi_rpc.request_version": "1",
            "vgi_rpc.protocol": "QPayloads",
            "vgi_rpc.request_id": "0123456789abcdef",
        }

        def serialize(spec: Any = spec, value: Any = value, metadata: dict[str, str] = metadata) -> bytes:
            batch = spec.request_batch({"value": value})
            return _stream_bytes(batch, metadata)

        def deserialize(data: bytes, spec: Any = spec) -> Any:
            decoded = decode_stream(pa.py_buffer(data))
            assert decoded is not None
            _, _, batch = request_envelope(decoded[0])
            return decode_params(spec, batch)["value"]

        assert deserialize(serialize()) == value, name
        codecs[name] = (serialize, deserialize)
    for name, batch in (("b1k", SMALL_BATCH), ("b100k", small_batch(100_000))):

        def serialize_batch(batch: pa.RecordBatch = batch) -> bytes:
            return _stream_bytes(batch, {})

        def deserialize_batch(data: bytes) -> pa.RecordBatch:
            decoded = decode_stream(pa.py_buffer(data))
            assert decoded is not None
            return decoded[0].batches[0][0]

        assert deserialize_batch(serialize_batch()).equals(batch)
        codecs[name] = (serialize_batch, deserialize_batch)
    return codecs


def _stream_bytes(batch: pa.RecordBatch, metadata: dict[str, str]) -> bytes:
    out = GatherBuffer()
    writer = StreamWriter(out, batch.schema, expected_bytes=batch.nbytes)
    writer.write(batch, metadata)
    writer.close()
    return b"".join(out.take())


def vgi_codecs() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """(serialize, deserialize) per payload, vgi-rpc's way (its client's and server's own functions)."""
    from vgi_rpc.rpc import rpc_methods
    from vgi_rpc.rpc._wire import _deserialize_params, _read_request, _send_request
    from vgi_rpc.utils import IpcValidation, ValidatedReader, new_ipc_stream

    infos = rpc_methods(VPayloads)
    values = payload_values(VInner, VNested, VComplex)
    codecs: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {}
    for name, value in values.items():
        info = infos[name]

        def serialize(info: Any = info, value: Any = value) -> bytes:
            buf = io.BytesIO()
            _send_request(buf, info, {"value": value}, protocol="VPayloads")
            return buf.getvalue()

        def deserialize(data: bytes, info: Any = info) -> Any:
            _, kwargs = _read_request(pa.BufferReader(data))
            _deserialize_params(kwargs, info.param_types)
            return kwargs["value"]

        assert deserialize(serialize()) == value, name
        codecs[name] = (serialize, deserialize)
    for name, batch in (("b1k", SMALL_BATCH), ("b100k", small_batch(100_000))):

        def serialize_batch(batch: pa.RecordBatch = batch) -> bytes:
            buf = io.BytesIO()
            with new_ipc_stream(buf, batch.schema) as writer:
                writer.write_batch(batch)
            return buf.getvalue()

        def deserialize_batch(data: bytes) -> pa.RecordBatch:
            reader = ValidatedReader(pa.ipc.open_stream(pa.BufferReader(data)), IpcValidation.FULL)
            batch, _ = reader.read_next_batch_with_custom_metadata()
            return batch

        assert deserialize_batch(serialize_batch()).equals(batch)
        codecs[name] = (serialize_batch, deserialize_batch)
    return codecs
