"""Python type hints to Arrow types, and values through Arrow and back."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, ClassVar, NewType

import pyarrow as pa
import pytest

from quiver.conformance import types as ct
from quiver.conformance.protocol import ConformanceService
from quiver.rpc import ArrowType, ExchangeState, MethodKind, ProducerState, Stream, protocol_spec
from quiver.rpc.types import ENUM_TYPE, codec_for, dataclass_from_batch, dataclass_schema, dataclass_to_batch

POINT = pa.struct([pa.field("x", pa.float64(), False), pa.field("y", pa.float64(), False)])
UserId = NewType("UserId", int)


@dataclass
class Holder:
    when: dt.date


class Color(Enum):
    RED = "red"
    GREEN = "green"


@pytest.mark.parametrize(
    ("hint", "arrow_type", "nullable"),
    [
        (str, pa.string(), False),
        (bytes, pa.binary(), False),
        (int, pa.int64(), False),
        (float, pa.float64(), False),
        (bool, pa.bool_(), False),
        (str | None, pa.string(), True),
        (UserId, pa.int64(), False),
        (Color, ENUM_TYPE, False),
        (list[str], pa.list_(pa.string()), False),
        (list[int | None], pa.list_(pa.int64()), False),
        (frozenset[int], pa.list_(pa.int64()), False),
        (dict[str, int], pa.map_(pa.string(), pa.int64()), False),
        (list[Color], pa.list_(ENUM_TYPE), False),
        (list[ct.Point], pa.list_(POINT), False),
        (ct.Point, pa.binary(), False),
        (ct.Point | None, pa.binary(), True),
        (pa.RecordBatch, pa.binary(), False),
        (pa.Schema, pa.binary(), False),
        (Annotated[int, ArrowType(pa.int32())], pa.int32(), False),
        (Annotated[int | None, ArrowType(pa.int32())], pa.int32(), True),
        (Annotated[int, ArrowType(pa.int32(), nullable=False)] | None, pa.int32(), False),
        (Annotated[str, ArrowType(pa.string(), nullable=True)], pa.string(), True),
        (Annotated[Color, "a tag"] | None, ENUM_TYPE, True),
    ],
)
def test_top_level_mapping(hint: Any, arrow_type: pa.DataType, nullable: bool) -> None:
    codec = codec_for(hint)
    assert codec.arrow_type == arrow_type
    assert codec.nullable is nullable


def test_nested_dataclasses_are_structs() -> None:
    schema = dataclass_schema(ct.BoundingBox)
    assert schema == pa.schema(
        [("top_left", POINT, False), ("bottom_right", POINT, False), ("label", pa.string(), False)]
    )
    assert codec_for(ct.Point, top_level=False).arrow_type == POINT


@pytest.mark.parametrize(
    ("hint", "value"),
    [
        (float, -0.0),
        (float, float("inf")),
        (float, 5e-324),
        (int, -(2**63)),
        (str, "a\x00b😀"),
        (bytes, b"\xff" * 3),
        (str | None, None),
        (Color, Color.GREEN),
        (list[list[int]], [[]]),
        (dict[str, int], {"z": 1, "a": 2}),
        (dict[str, Color], {"k": Color.RED}),
        (frozenset[Color], frozenset({Color.RED, Color.GREEN})),
        (list[int | None], [1, None]),
        (ct.Point, ct.Point(1.5, 2.5)),
        (ct.Point | None, None),
        (Annotated[Decimal, ArrowType(pa.decimal128(20, 4))], Decimal("1.2500")),
        (Annotated[dt.datetime, ArrowType(pa.timestamp("us", tz="UTC"))], dt.datetime(2024, 1, 2, tzinfo=dt.UTC)),
        (
            Annotated[dict[str, Decimal], ArrowType(pa.map_(pa.string(), pa.decimal128(20, 4)))],
            {"a": Decimal("1.0000")},
        ),
    ],
)
def test_values_round_trip(hint: Any, value: Any) -> None:
    codec = codec_for(hint)
    back = codec.from_scalar(codec.to_array(value)[0])
    assert back == value
    assert type(back) is type(value)


def test_negative_zero_keeps_its_sign() -> None:
    codec = codec_for(float)
    assert str(codec.from_scalar(codec.to_array(-0.0)[0])) == "-0.0"


def test_enum_travels_as_member_name_and_decodes_by_name_or_value() -> None:
    codec = codec_for(Color)
    array = codec.to_array(Color.RED)
    assert array.type == ENUM_TYPE
    assert array.dictionary.to_pylist() == ["RED"]
    assert codec.decode("green") is Color.GREEN
    with pytest.raises(KeyError, match="'BOGUS' is not a valid Color name or value"):
        codec.decode("BOGUS")


def test_dataclass_travels_as_ipc_stream_and_back() -> None:
    value = ct.build_rich_header(7)
    codec = codec_for(ct.RichHeader)
    payload = codec.to_array(value)[0].as_py()
    reader = pa.ipc.open_stream(payload)
    assert reader.schema == dataclass_schema(ct.RichHeader)
    assert reader.read_next_batch().num_rows == 1
    back = codec.decode(payload)
    assert back.enum_field is ct.Status.ACTIVE and back.nested_point == ct.Point(7.0, 14.0)
    assert back.annotated_float32 == pytest.approx(7 / 3, rel=1e-6)


def test_nested_containers_round_trip_through_a_batch() -> None:
    tagged = pa.RecordBatch.from_pydict({"value": [1, 2]})
    value = ct.NestedContainers(
        [ct.Status.ACTIVE],
        [ct.Point(1, 2)],
        {"a": ct.Status.CLOSED},
        frozenset({ct.Status.ACTIVE}),
        ct.Status.ACTIVE,
        ct.Point(1, 2),
        tagged,
    )
    back = dataclass_from_batch(ct.NestedContainers, dataclass_to_batch(value))
    assert back.tagged_batch.equals(tagged)
    assert (back.statuses, back.status_by_name, back.frozen_statuses) == (
        value.statuses,
        value.status_by_name,
        value.frozen_statuses,
    )


def test_dataclass_batches_are_matched_by_column_name() -> None:
    batch = pa.RecordBatch.from_pydict({"y": [2.0], "x": [1.0]})
    assert dataclass_from_batch(ct.Point, batch) == ct.Point(1.0, 2.0)
    with pytest.raises(TypeError, match="lacks field"):
        dataclass_from_batch(ct.Point, pa.RecordBatch.from_pydict({"x": [1.0]}))


def test_unmappable_types_are_rejected_with_a_hint() -> None:
    with pytest.raises(TypeError, match="ArrowType"):
        codec_for(dt.date)
    with pytest.raises(TypeError, match="needs element types"):
        codec_for(list)


def test_conformance_protocol_matches_the_reference_schemas() -> None:
    spec = protocol_spec(ConformanceService)
    assert len(spec.methods) == 90
    assert spec.version == "2.0.0"
    with_defaults = spec.methods["with_defaults"]
    assert [p.default for p in with_defaults.params] == [with_defaults.params[0].default, "default", 42]
    nested = spec.methods["pack_nested_containers"].params_schema
    assert nested.field("status_by_name").type == pa.map_(pa.string(), ENUM_TYPE)
    assert spec.methods["produce_with_rich_header"].kind is MethodKind.PRODUCER
    assert spec.methods["exchange_with_header"].header_type is ct.ConformanceHeader
    assert spec.methods["echo_outer_optional_non_null"].params_schema.field("value").nullable is False


def test_protocol_classes_declare_methods_from_annotations() -> None:
    class Demo:
        protocol_name: ClassVar[str] = "demo.v1"
        protocol_version: ClassVar[str] = "1.2.3"

        def add(self, a: float, b: float = 1.0) -> float: ...
        def nothing(self) -> None: ...
        def count(self, n: int) -> Stream[ProducerState]: ...
        def scale(self, factor: float) -> Stream[ExchangeState, ct.ConformanceHeader]: ...
        def _private(self) -> int: ...

    spec = protocol_spec(Demo)
    assert (spec.name, spec.version, sorted(spec.methods)) == ("demo.v1", "1.2.3", ["add", "count", "nothing", "scale"])
    assert spec.methods["add"].result_schema == pa.schema([("result", pa.float64(), False)])
    assert len(spec.methods["nothing"].result_schema) == 0
    assert spec.methods["scale"].header_schema == dataclass_schema(ct.ConformanceHeader)
    assert protocol_spec(Demo) is spec


def test_protocol_errors_name_the_method() -> None:
    class BadVersion:
        protocol_version: ClassVar[str] = "1.0"

    class Untyped:
        def f(self, a) -> int: ...  # type: ignore[no-untyped-def]

    class BadField:
        def f(self, h: Holder) -> None: ...

    with pytest.raises(TypeError, match=r"MAJOR\.MINOR\.PATCH"):
        protocol_spec(BadVersion)
    with pytest.raises(TypeError, match=r"Untyped\.f: parameter 'a' has no type annotation"):
        protocol_spec(Untyped)
    with pytest.raises(TypeError, match=r"Holder\.when"):
        protocol_spec(BadField)
