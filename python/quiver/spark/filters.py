"""Spark's pushed filters as VGI's filter v2 document (``vgi.filters.v2``).

It is the same document quiver's DuckDB extension builds from DuckDB's filters (extension/src/filter_pushdown.cpp): one
predicate per filter Spark hands over (they are ANDed), literals as the typed columns
``value_<N>`` of one row, each of its column's type.

A filter is translated when it compares one top-level column with literals (``=``, ``<=>``, ``<``,
``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL`` and ``NOT`` of those); the rest stay with Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

# Spark's filter class -> the comparison operator of filter v2.
_COMPARISONS = {
    "EqualTo": "eq",
    "EqualNullSafe": "not_distinct_from",
    "GreaterThan": "gt",
    "GreaterThanOrEqual": "ge",
    "LessThan": "lt",
    "LessThanOrEqual": "le",
}


@dataclass
class Translated:
    """The predicates translated so far and their literals."""

    schema: pa.Schema
    predicates: list[dict[str, Any]] = field(default_factory=list)
    values: list[pa.Array] = field(default_factory=list)

    def add(self, spark_filter: Any, required: bool) -> bool:
        """Translates ``spark_filter`` into a predicate; ``False`` (nothing added) when it cannot."""
        mark = len(self.values)
        expression = self._expression(spark_filter)
        if expression is None:
            del self.values[mark:]
            return False
        self.predicates.append(
            {
                "id": f"spark:{len(self.predicates)}",
                "revision": 0,
                "mode": "required" if required else "advisory",
                "source": "query",
                "expression": expression,
            }
        )
        return True

    def spec(self) -> str | None:
        """The document, or ``None`` when nothing was translated."""
        if not self.predicates:
            return None
        return json.dumps(
            {
                "encoding": "vgi.filters.v2",
                "semantics": "vgi.duckdb.standard.v1",
                "kind": "snapshot",
                "predicates": self.predicates,
            }
        )

    def literals(self) -> pa.RecordBatch | None:
        if not self.values:
            return None
        return pa.RecordBatch.from_arrays(self.values, names=[f"value_{i}" for i in range(len(self.values))])

    def _expression(self, spark_filter: Any) -> dict[str, Any] | None:
        kind = type(spark_filter).__name__
        if kind == "Not":
            child = self._expression(spark_filter.child)
            return None if child is None else {"node": "not", "expression": child}
        column = self._column(spark_filter.attribute)
        if column is None:
            return None
        index, column_type = column
        ref = {"node": "column_ref", "column_index": index, "column_name": self.schema.field(index).name}
        if kind in ("IsNull", "IsNotNull"):
            return {"node": "is_null", "expression": ref, "negated": kind == "IsNotNull"}
        if kind == "In":
            literal = self._literal(list(spark_filter.value), pa.list_(column_type))
            if literal is None:
                return None
            return {"node": "in", "expression": ref, "set": {"kind": "literal", "value_ref": literal}, "negated": False}
        op = _COMPARISONS.get(kind)
        if op is None:
            return None
        literal = self._literal(spark_filter.value, column_type)
        if literal is None:
            return None
        return {"node": "comparison", "op": op, "left": ref, "right": {"node": "literal", "value_ref": literal}}

    def _column(self, attribute: tuple[str, ...]) -> tuple[int, pa.DataType] | None:
        if len(attribute) != 1:
            return None
        index = self.schema.get_field_index(attribute[0])
        if index < 0:
            return None
        return index, self.schema.field(index).type

    def _literal(self, value: Any, value_type: pa.DataType) -> int | None:
        try:
            array = pa.array([value], type=value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            return None
        self.values.append(array)
        return len(self.values) - 1
