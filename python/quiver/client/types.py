"""PEP 249's type objects and constructors, over Arrow types.

``description``'s ``type_code`` is the column's ``pyarrow.DataType``; the type objects compare equal to
every Arrow type of their family (``cursor.description[0][1] == quiver.client.NUMBER``).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa


class TypeObject:
    """A family of Arrow types that compares equal to each of its members."""

    def __init__(self, name: str, member: Callable[[pa.DataType], bool]) -> None:
        self.name = name
        self._member = member

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypeObject):
            return other is self
        return isinstance(other, pa.DataType) and self._member(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<type object {self.name}>"


STRING = TypeObject("STRING", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t))
BINARY = TypeObject("BINARY", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t))
NUMBER = TypeObject("NUMBER", lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))
DATETIME = TypeObject("DATETIME", lambda t: pa.types.is_temporal(t) and not pa.types.is_duration(t))
ROWID = TypeObject("ROWID", lambda t: False)  # DuckDB exposes no row id type over Arrow

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:
    return Timestamp(*time.localtime(ticks)[:6])


Description = tuple[str, pa.DataType, None, None, Any, Any, bool]


def describe(schema: pa.Schema) -> list[Description]:
    """``cursor.description`` for a result schema: name, Arrow type, -, -, precision, scale, nullable."""
    columns: list[Description] = []
    for field in schema:
        precision = getattr(field.type, "precision", None)
        scale = getattr(field.type, "scale", None)
        columns.append((field.name, field.type, None, None, precision, scale, field.nullable))
    return columns
