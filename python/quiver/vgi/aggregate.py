"""Aggregate functions: the :class:`Aggregator` a worker author writes, and the methods serving it.

The five unary methods are ``aggregate_bind``, ``_update``, ``_combine``, ``_finalize`` and
``_destructor``.

The engine sends group ids (an ``__vgi_group_id`` column first in every update batch,
``source_group_id``/``target_group_id`` pairs to combine, ``group_id`` to finalize); the states live
here, per execution, in this process. Executions and groups are bounded: past
:data:`EXECUTIONS_MAX` the oldest execution is dropped (an engine that died before its destructor
cannot grow a long-lived worker), past :data:`GROUPS_MAX` an update fails.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from . import wire
from .bind import Bound
from .catalog import resolve
from .errors import ArgumentValidationError, InvalidArgumentError, VgiError
from .function import AGGREGATE, sql_name
from .log import log

if TYPE_CHECKING:
    from .worker import Worker

GROUP_COLUMN = "__vgi_group_id"
EXECUTIONS_MAX = 1024
GROUPS_MAX = 1 << 24

BIND_RESPONSE = pa.schema(
    [pa.field("output_schema", pa.binary(), nullable=False), pa.field("execution_id", pa.binary(), nullable=False)]
)
FINALIZE_RESPONSE = pa.schema([pa.field("result_batch", pa.binary(), nullable=False)])


class ResourceExhaustedError(VgiError):
    error_code = "RESOURCE_EXHAUSTED"


class Aggregator(Protocol):
    """An aggregate's behaviour: a state per group, folded, merged, finalized.

    ``update`` gets the value columns and the rows (indices, in input order) of one group and returns
    the new state; NULLs are its to skip. ``finalize`` gets one state per group (``None`` for a group
    that never saw a row) and returns one value each, of the declared type.
    """

    def init(self, args: dict[str, Any]) -> Any: ...
    def update(self, state: Any, columns: list[pa.Array], rows: list[int], args: dict[str, Any]) -> Any: ...
    def combine(self, target: Any, source: Any, args: dict[str, Any]) -> Any: ...
    def finalize(self, states: list[Any], args: dict[str, Any]) -> pa.Array: ...


@dataclass
class _Execution:
    bound: Bound
    groups: dict[int, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def aggregator(self) -> Aggregator:
        return self.bound.function.body

    def state(self, group: int) -> Any:
        if group not in self.groups:
            if len(self.groups) >= GROUPS_MAX:
                raise ResourceExhaustedError(f"{self.bound.function.name}(): more than {GROUPS_MAX} groups")
            self.groups[group] = self.aggregator.init(self.bound.args)
        return self.groups[group]

    def update(self, batch: pa.RecordBatch) -> None:
        function = self.bound.function
        if GROUP_COLUMN not in batch.schema.names:
            raise InvalidArgumentError(f"the update batch has no '{GROUP_COLUMN}' column")
        groups = _ids(batch.column(GROUP_COLUMN), GROUP_COLUMN)
        declared = function.columns
        values = [batch.column(i) for i, name in enumerate(batch.schema.names) if name != GROUP_COLUMN]
        if len(values) != len(declared):
            raise InvalidArgumentError(
                f"{function.name}() takes {len(declared)} value column(s), the update batch has {len(values)}"
            )
        columns = []
        for arg, column in zip(declared, values, strict=True):
            if column.type != arg.type:
                try:
                    column = column.cast(arg.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise ArgumentValidationError(
                        f"{function.name}(): input column does not cast to {sql_name(arg.type)}"
                    ) from exc
            columns.append(column)
        rows: dict[int, list[int]] = {}
        for row, group in enumerate(groups):
            rows.setdefault(group, []).append(row)
        for group, members in rows.items():
            self.groups[group] = self.aggregator.update(self.state(group), columns, members, self.bound.args)

    def combine(self, batch: pa.RecordBatch) -> None:
        sources = _ids(batch.column("source_group_id"), "source_group_id")
        targets = _ids(batch.column("target_group_id"), "target_group_id")
        for source, target in zip(sources, targets, strict=True):
            # A source never updated is the initial state: merging it changes nothing.
            if source == target or source not in self.groups:
                continue
            self.groups[target] = self.aggregator.combine(self.state(target), self.groups[source], self.bound.args)

    def finalize(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        function = self.bound.function
        groups = _ids(batch.column("group_id"), "group_id")
        result = self.aggregator.finalize([self.groups.get(g) for g in groups], self.bound.args)
        if not isinstance(result, pa.Array):
            result = pa.array(result, type=function.returns)
        if len(result) != len(groups):
            raise VgiError(f"{function.name}() finalized {len(groups)} group(s) into {len(result)} value(s)")
        if result.type != function.returns:
            raise VgiError(f"{function.name}() finalized to {result.type}, but declares {function.returns}")
        return pa.RecordBatch.from_arrays([result], schema=self.bound.output_schema)


def _ids(column: pa.Array, name: str) -> list[int]:
    if column.null_count:
        raise InvalidArgumentError(f"'{name}' holds NULLs")
    return column.cast(pa.int64()).to_pylist()


def _nested(data: bytes) -> pa.RecordBatch:
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    batches = list(reader)
    if len(batches) > 1:
        raise InvalidArgumentError(f"expected one nested batch, got {len(batches)}")
    return batches[0] if batches else reader.schema.empty_table().to_batches()[0]


def _empty() -> bytes:
    return wire.stream_bytes([pa.RecordBatch.from_pylist([], schema=wire.EMPTY_SCHEMA)], wire.EMPTY_SCHEMA)


class Executions:
    """The aggregate executions of this process, oldest first."""

    def __init__(self) -> None:
        self.live: OrderedDict[bytes, _Execution] = OrderedDict()
        self.lock = threading.Lock()

    def open(self, bound: Bound) -> bytes:
        execution_id = os.urandom(16)
        with self.lock:
            while len(self.live) >= EXECUTIONS_MAX:
                self.live.popitem(last=False)
                log("warning", f"more than {EXECUTIONS_MAX} aggregate executions: the oldest was dropped")
            self.live[execution_id] = _Execution(bound)
        return execution_id

    def get(self, execution_id: bytes) -> _Execution:
        with self.lock:
            found = self.live.get(bytes(execution_id))
        if found is None:
            raise InvalidArgumentError("unknown aggregate execution (never bound here, or already destroyed)")
        return found

    def close(self, execution_id: bytes) -> None:
        with self.lock:
            self.live.pop(bytes(execution_id), None)


def bind(worker: Worker, request: dict[str, Any]) -> Bound:
    """Resolves an ``AggregateBindRequest`` row and checks its value columns and constant arguments."""
    function = resolve(worker.functions, request["function_name"], request.get("schema_path"))
    name = function.name
    if function.kind != AGGREGATE:
        raise InvalidArgumentError(f"{name}() is not an aggregate function")
    input_schema = wire.read_schema(request.get("input_schema"))
    given = list(input_schema) if input_schema is not None else []
    declared = function.columns
    if len(given) != len(declared):
        raise ArgumentValidationError(f"{name}() takes {len(declared)} column argument(s), got {len(given)}")
    for index, (arg, column) in enumerate(zip(declared, given, strict=True)):
        castable = column.type == arg.type or column.type == pa.null()
        castable = castable or (pa.types.is_integer(column.type) and pa.types.is_integer(arg.type))
        if not castable:
            raise ArgumentValidationError(
                f"{name}(): column argument {index} '{arg.name}' must be {sql_name(arg.type)}, "
                f"got {sql_name(column.type)}"
            )
    args = function.bind_arguments(request.get("arguments"))
    return Bound(function, args, input_schema, pa.schema([pa.field("result", function.returns)]))


class AggregateMethods:
    """The ``aggregate_*`` methods of :class:`~quiver.vgi.protocol.VgiV2`."""

    worker: Worker

    def aggregate_bind(self, request: bytes) -> bytes:
        bound = bind(self.worker, wire.read_row(request))
        execution_id = self.worker.aggregates.open(bound)
        log("debug", f"aggregate_bind {bound.function.name}()")
        return wire.row_bytes(
            BIND_RESPONSE, {"output_schema": wire.schema_bytes(bound.output_schema), "execution_id": execution_id}
        )

    def _on(self, request: bytes, column: str) -> tuple[_Execution, pa.RecordBatch]:
        row = wire.read_row(request)
        return self.worker.aggregates.get(row["execution_id"]), _nested(row[column])

    def aggregate_update(self, request: bytes) -> bytes:
        execution, batch = self._on(request, "input_batch")
        with execution.lock:
            execution.update(batch)
        return _empty()

    def aggregate_combine(self, request: bytes) -> bytes:
        execution, batch = self._on(request, "merge_batch")
        with execution.lock:
            execution.combine(batch)
        return _empty()

    def aggregate_finalize(self, request: bytes) -> bytes:
        execution, batch = self._on(request, "group_ids_batch")
        with execution.lock:
            result = execution.finalize(batch)
        return wire.row_bytes(FINALIZE_RESPONSE, {"result_batch": wire.stream_bytes([result], result.schema)})

    def aggregate_destructor(self, request: bytes) -> bytes:
        self.worker.aggregates.close(wire.read_row(request)["execution_id"])
        return _empty()
