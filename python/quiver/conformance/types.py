"""The enum and dataclasses of ``ConformanceService`` (field order is part of the wire)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Annotated

import pyarrow as pa

from ..rpc.types import ArrowType

DECIMAL = pa.decimal128(20, 4)


class Status(Enum):
    """Travels as the member name: ``PENDING``, ``ACTIVE``, ``CLOSED``."""

    PENDING = "pending"
    ACTIVE = "active"
    CLOSED = "closed"


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class BoundingBox:
    top_left: Point
    bottom_right: Point
    label: str


@dataclass(frozen=True)
class AllTypes:
    str_field: str
    bytes_field: bytes
    int_field: int
    float_field: float
    bool_field: bool
    list_of_int: list[int]
    list_of_str: list[str]
    dict_field: dict[str, int]
    enum_field: Status
    nested_point: Point
    optional_str: str | None
    optional_int: int | None
    optional_nested: Point | None
    list_of_nested: list[Point]
    annotated_int32: Annotated[int, ArrowType(pa.int32())]
    annotated_float32: Annotated[float, ArrowType(pa.float32())]
    nested_list: list[list[int]]
    dict_str_str: dict[str, str]


@dataclass(frozen=True)
class WideTypes:
    int8_field: Annotated[int, ArrowType(pa.int8())]
    int16_field: Annotated[int, ArrowType(pa.int16())]
    int32_field: Annotated[int, ArrowType(pa.int32())]
    uint8_field: Annotated[int, ArrowType(pa.uint8())]
    uint16_field: Annotated[int, ArrowType(pa.uint16())]
    uint32_field: Annotated[int, ArrowType(pa.uint32())]
    uint64_field: Annotated[int, ArrowType(pa.uint64())]
    float32_field: Annotated[float, ArrowType(pa.float32())]
    date_field: Annotated[dt.date, ArrowType(pa.date32())]
    timestamp_field: Annotated[dt.datetime, ArrowType(pa.timestamp("us"))]
    timestamp_utc_field: Annotated[dt.datetime, ArrowType(pa.timestamp("us", tz="UTC"))]
    time_field: Annotated[dt.time, ArrowType(pa.time64("us"))]
    duration_field: Annotated[dt.timedelta, ArrowType(pa.duration("us"))]
    decimal_field: Annotated[Decimal, ArrowType(DECIMAL)]
    large_string_field: Annotated[str, ArrowType(pa.large_string())]
    large_binary_field: Annotated[bytes, ArrowType(pa.large_binary())]
    fixed_binary_field: Annotated[bytes, ArrowType(pa.binary(8))]


@dataclass(frozen=True)
class ContainerWideTypes:
    list_decimal: Annotated[list[Decimal], ArrowType(pa.list_(DECIMAL))]
    list_date: Annotated[list[dt.date], ArrowType(pa.list_(pa.date32()))]
    list_timestamp: Annotated[list[dt.datetime], ArrowType(pa.list_(pa.timestamp("us")))]
    optional_date: Annotated[dt.date | None, ArrowType(pa.date32())]
    optional_decimal: Annotated[Decimal | None, ArrowType(DECIMAL)]
    optional_timestamp: Annotated[dt.datetime | None, ArrowType(pa.timestamp("us"))]
    dict_str_decimal: Annotated[dict[str, Decimal], ArrowType(pa.map_(pa.string(), DECIMAL))]
    frozenset_int: frozenset[int]
    list_optional_int: list[int | None]


@dataclass(frozen=True)
class DeepNested:
    list_of_lists_decimal: Annotated[list[list[Decimal]], ArrowType(pa.list_(pa.list_(DECIMAL)))]
    optional_list_date: Annotated[list[dt.date] | None, ArrowType(pa.list_(pa.date32()))]
    dict_encoded_string: Annotated[str, ArrowType(pa.dictionary(pa.int16(), pa.string()))]
    list_of_dict_encoded: Annotated[list[str], ArrowType(pa.list_(pa.dictionary(pa.int16(), pa.string())))]


@dataclass(frozen=True)
class EmbeddedArrow:
    batch: pa.RecordBatch
    schema: pa.Schema


@dataclass(frozen=True)
class NestedContainers:
    statuses: list[Status]
    points: list[Point]
    status_by_name: dict[str, Status]
    frozen_statuses: frozenset[Status]
    tagged_status: Annotated[Status, "conformance-tag"] | None
    tagged_point: Annotated[Point, "conformance-tag"] | None
    tagged_batch: Annotated[pa.RecordBatch, ArrowType(pa.binary())] | None


@dataclass(frozen=True)
class ConformanceHeader:
    total_expected: int
    description: str


@dataclass(frozen=True)
class RichHeader:
    str_field: str
    bytes_field: bytes
    int_field: int
    float_field: float
    bool_field: bool
    list_of_int: list[int]
    list_of_str: list[str]
    dict_field: dict[str, int]
    enum_field: Status
    nested_point: Point
    optional_str: str | None
    optional_int: int | None
    optional_nested: Point | None
    list_of_nested: list[Point]
    nested_list: list[list[int]]
    annotated_int32: Annotated[int, ArrowType(pa.int32())]
    annotated_float32: Annotated[float, ArrowType(pa.float32())]
    dict_str_str: dict[str, str]


_STATUS_CYCLE = (Status.PENDING, Status.ACTIVE, Status.CLOSED)


def build_rich_header(seed: int) -> RichHeader:
    """The header every implementation derives from ``seed`` (the reference values)."""
    return RichHeader(
        str_field=f"seed-{seed}",
        bytes_field=bytes([seed % 256, (seed + 1) % 256, (seed + 2) % 256]),
        int_field=seed * 7,
        float_field=seed * 1.5,
        bool_field=seed % 2 == 0,
        list_of_int=[seed, seed + 1, seed + 2],
        list_of_str=[f"item-{seed}", f"item-{seed + 1}"],
        dict_field={"a": seed, "b": seed + 1},
        enum_field=_STATUS_CYCLE[seed % 3],
        nested_point=Point(float(seed), float(seed * 2)),
        optional_str=f"opt-{seed}" if seed % 2 == 0 else None,
        optional_int=seed * 3 if seed % 2 == 1 else None,
        optional_nested=Point(float(seed), 0.0) if seed % 3 == 0 else None,
        list_of_nested=[Point(float(seed), float(seed + 1))],
        nested_list=[[seed, seed + 1], [seed + 2]],
        annotated_int32=seed % 1000,
        annotated_float32=seed / 3.0,
        dict_str_str={"key": f"val-{seed}"},
    )
