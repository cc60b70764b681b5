"""Pushed-down filters (``vgi.filters.v2``): the subset this SDK evaluates exactly.

Supported nodes: ``column_ref``, ``literal``, ``comparison`` (all eight operators),
``and``, ``or``, ``not``, ``is_null`` and ``in`` over a literal list. A *required*
predicate using anything else is declined: the init fails with
``FilterDeserializationError`` (the engine must not think it was applied). An
*advisory* predicate is never evaluated (the engine keeps its own exact filter), and
advisory deltas on ticks are ignored for the same reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import FilterDeserializationError
from .wire import read_batch

ENCODING = "vgi.filters.v2"
SEMANTICS = "vgi.duckdb.standard.v1"
CONTEXT_NONE = "vgi.none.v1"
_TOP_KEYS = {"encoding", "semantics", "kind", "predicates"}
_COMPARISONS = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}
_MAX_DEPTH = 64


@dataclass(frozen=True)
class Filter:
    """The required predicates of a snapshot, checked against the unprojected output schema."""

    predicates: tuple[dict[str, Any], ...]
    values: dict[int, pa.Scalar]

    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """The rows to keep (TRUE); ``None`` when there is nothing to apply."""
        result = None
        for expression in self.predicates:
            value = _eval(expression, batch, self.values)
            result = value if result is None else pc.and_kleene(result, value)
        return result

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        mask = self.mask(batch)
        if mask is None:
            return batch
        if isinstance(mask, pa.Scalar):
            mask = pa.array([mask.as_py()] * batch.num_rows, pa.bool_())
        return batch.filter(mask, null_selection_behavior="drop")


def parse(data: bytes, schema: pa.Schema) -> Filter:
    """Parses and checks a ``pushdown_filters`` container against ``schema`` (unprojected)."""
    try:
        batch = read_batch(data)
    except Exception as exc:
        raise FilterDeserializationError(f"Failed to parse filters: not an IPC stream: {exc}") from exc
    meta = {k.decode(): v.decode() for k, v in (batch.schema.metadata or {}).items()}
    if meta.get("vgi_filter_encoding") != ENCODING or meta.get("vgi_filter_version") != "2":
        raise FilterDeserializationError("Failed to parse filters: not a vgi.filters.v2 container")
    context = meta.get("vgi_evaluation_context", CONTEXT_NONE)
    if context != CONTEXT_NONE:
        raise FilterDeserializationError(f"Failed to parse filters: evaluation context {context!r} is not supported")
    if batch.num_rows != 1 or "filter_spec" not in batch.schema.names:
        raise FilterDeserializationError("Failed to parse filters: expected one row with filter_spec")
    try:
        document = json.loads(batch.column("filter_spec")[0].as_py())
    except (TypeError, ValueError) as exc:
        raise FilterDeserializationError(f"Failed to parse filters: bad JSON: {exc}") from exc
    if not isinstance(document, dict) or set(document) != _TOP_KEYS:
        raise FilterDeserializationError(
            "Failed to parse filters: top level must be encoding/semantics/kind/predicates"
        )
    if document["encoding"] != ENCODING or document["semantics"] != SEMANTICS or document["kind"] != "snapshot":
        raise FilterDeserializationError("Failed to parse filters: unsupported encoding, semantics or kind")
    values: dict[int, pa.Scalar] = {}
    for index, name in enumerate(batch.schema.names):
        if name.startswith("value_"):
            values[int(name[6:])] = batch.column(index)[0]
    required = []
    for predicate in document["predicates"]:
        if not isinstance(predicate, dict) or predicate.get("mode") not in ("required", "advisory"):
            raise FilterDeserializationError("Failed to parse filters: a predicate needs mode required/advisory")
        if predicate["mode"] == "advisory":
            continue
        _check(predicate.get("expression"), schema, values, 0)
        required.append(predicate["expression"])
    return Filter(tuple(required), values)


def _check(node: Any, schema: pa.Schema, values: dict[int, pa.Scalar], depth: int) -> None:
    """Declines (raises) anything this SDK cannot evaluate exactly."""
    if depth > _MAX_DEPTH:
        raise FilterDeserializationError("Failed to parse filters: expression nested too deep")
    if not isinstance(node, dict):
        raise FilterDeserializationError("Failed to parse filters: an expression must be an object")
    kind = node.get("node")
    if kind == "column_ref":
        index, name = node.get("column_index"), node.get("column_name")
        if not isinstance(index, int) or not 0 <= index < len(schema):
            raise FilterDeserializationError(f"Failed to parse filters: column_ref index {index!r} out of range")
        if schema.field(index).name != name:
            raise FilterDeserializationError(
                f"Failed to parse filters: column_ref name {name!r} does not match index {index} "
                f"({schema.field(index).name!r})"
            )
    elif kind == "literal":
        if node.get("value_ref") not in values:
            raise FilterDeserializationError(f"Failed to parse filters: no value_{node.get('value_ref')}")
    elif kind == "comparison":
        if node.get("op") not in (*_COMPARISONS, "distinct_from", "not_distinct_from"):
            raise FilterDeserializationError(f"Failed to parse filters: comparison op {node.get('op')!r}")
        _check(node.get("left"), schema, values, depth + 1)
        _check(node.get("right"), schema, values, depth + 1)
    elif kind in ("and", "or"):
        children = node.get("children")
        if not isinstance(children, list) or len(children) < 2:
            raise FilterDeserializationError(f"Failed to parse filters: {kind} needs at least two children")
        for child in children:
            _check(child, schema, values, depth + 1)
    elif kind in ("not", "is_null"):
        _check(node.get("expression"), schema, values, depth + 1)
    elif kind == "in":
        target = node.get("set") or {}
        if target.get("kind") != "literal":
            raise FilterDeserializationError("Failed to parse filters: only literal IN sets are supported")
        value = values.get(target.get("value_ref"))
        if value is None or not pa.types.is_list(value.type) or not value.is_valid:
            raise FilterDeserializationError("Failed to parse filters: an IN set must be a non-null list literal")
        _check(node.get("expression"), schema, values, depth + 1)
    else:
        raise FilterDeserializationError(f"Failed to parse filters: node {kind!r} is not supported by this worker")


def _eval(node: dict[str, Any], batch: pa.RecordBatch, values: dict[int, pa.Scalar]) -> Any:
    kind = node["node"]
    if kind == "column_ref":
        return batch.column(node["column_index"])
    if kind == "literal":
        return values[node["value_ref"]]
    if kind == "comparison":
        left, right = _eval(node["left"], batch, values), _eval(node["right"], batch, values)
        op = node["op"]
        if op in _COMPARISONS:
            return _COMPARISONS[op](left, right)
        distinct = _distinct(left, right)
        return distinct if op == "distinct_from" else pc.invert(distinct)
    if kind == "and":
        result = _eval(node["children"][0], batch, values)
        for child in node["children"][1:]:
            result = pc.and_kleene(result, _eval(child, batch, values))
        return result
    if kind == "or":
        result = _eval(node["children"][0], batch, values)
        for child in node["children"][1:]:
            result = pc.or_kleene(result, _eval(child, batch, values))
        return result
    if kind == "not":
        return pc.invert(_eval(node["expression"], batch, values))
    if kind == "is_null":
        tested = pc.is_null(_eval(node["expression"], batch, values))
        return pc.invert(tested) if node.get("negated") else tested
    if kind == "in":
        result = _in(_eval(node["expression"], batch, values), values[node["set"]["value_ref"]])
        return pc.invert(result) if node.get("negated") else result
    raise FilterDeserializationError(f"node {kind!r} is not supported")  # _check rules this out


def _distinct(left: Any, right: Any) -> Any:
    """NULL-safe ``IS DISTINCT FROM``: never NULL."""
    left_null, right_null = pc.is_null(left), pc.is_null(right)
    differs = pc.fill_null(pc.not_equal(left, right), False)
    both_valid = pc.and_(pc.invert(left_null), pc.invert(right_null))
    return pc.or_(pc.and_(both_valid, differs), pc.xor(left_null, right_null))


def _in(tested: Any, candidates: pa.ListScalar) -> Any:
    """SQL ``IN``: TRUE on a match; else NULL if a candidate (or the tested value) is NULL; else FALSE."""
    items = candidates.values
    if items is None or len(items) == 0:
        return pc.if_else(pc.is_null(tested), False, False) if isinstance(tested, pa.Array) else pa.scalar(False)
    has_null = items.null_count > 0
    present = items.drop_null()
    if isinstance(tested, pa.Scalar):
        tested = pa.array([tested.as_py()], tested.type)
    if present.type != tested.type:
        present = present.cast(tested.type)
    found = pc.is_in(tested, value_set=present, skip_nulls=True)
    unknown = pa.scalar(None, pa.bool_())
    miss = unknown if has_null else pa.scalar(False)
    return pc.if_else(pc.is_null(tested), unknown, pc.if_else(found, True, miss))
