"""``init``: start, join or finalize an execution, and hand the stream to the right kind.

A scalar call and a table-in-out INPUT call are exchanges (a batch in, a batch out); a table
scan and a table-in-out FINALIZE are producers. The header (:class:`GlobalInitResponse`) is
built here and travels with the stream.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..rpc import CallContext, ExchangeState, Output, Stream
from ..rpc.stream import AnnotatedBatch
from . import buffering, splits, wire
from . import filters as vgi_filters
from .bind import Bound, bind
from .errors import InvalidArgumentError
from .function import SCALAR, TABLE, TABLE_BUFFERING
from .log import log
from .protocol import STATUS_KEY, UNBOUNDED_WORKERS, GlobalInitResponse

if TYPE_CHECKING:
    from .worker import Worker


@dataclass
class _VgiStream(Stream):  # type: ignore[type-arg]
    """A stream whose shape (producer or exchange) is chosen per ``init`` call."""

    producer: bool = False


class _Scan:
    """What a table function's body sees: its share of the execution's work.

    ``split`` is the payload of the split this init redeems, for a function that declares splits.
    """

    def __init__(self, counter: Any, split: bytes | None = None) -> None:
        self.counter = counter
        self.split = split
        self.rows = 0

    def claim(self, units: int) -> tuple[int, int] | None:
        if self.counter is None:
            return None
        return self.counter.claim(units)


class _TableState(ExchangeState):
    def __init__(
        self,
        bound: Bound,
        batches: Iterator[pa.RecordBatch],
        filter: Any,
        projection: list[int] | None,
        output_schema: pa.Schema,
        scan: _Scan,
    ) -> None:
        self.bound, self.batches, self.filter, self.projection = bound, batches, filter, projection
        self.output_schema, self.scan = output_schema, scan

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = next(self.batches, None)
        if batch is None:
            log("debug", f"{self.bound.function.name}(): connection emitted {self.scan.rows} row(s)")
            return out.finish()
        batch = _shape(batch, self.bound.output_schema, self.filter, self.projection)
        self.scan.rows += batch.num_rows
        out.emit(batch)


class _ScalarState(ExchangeState):
    def __init__(self, bound: Bound) -> None:
        self.bound = bound

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = input.batch
        result = self.bound.function.body(*batch.columns)
        if not isinstance(result, (pa.Array, pa.ChunkedArray)):
            result = pa.array(result, self.bound.function.returns)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        if len(result) != batch.num_rows:
            raise ValueError(f"{self.bound.function.name}() returned {len(result)} values for {batch.num_rows} rows")
        if result.type != self.bound.function.returns:
            result = result.cast(self.bound.function.returns)
        out.emit(pa.RecordBatch.from_arrays([result], schema=self.bound.output_schema))


class _InOutState(ExchangeState):
    def __init__(self, bound: Bound, state: Any, filter: Any, projection: list[int] | None) -> None:
        self.bound, self.state, self.filter, self.projection = bound, state, filter, projection
        self.pending: list[pa.RecordBatch] = []

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        if input.metadata.get(STATUS_KEY) == "CONTINUE":
            if not self.pending:
                raise InvalidArgumentError("CONTINUE without pending output")
        else:
            if self.pending:
                raise InvalidArgumentError("new input while output is still pending")
            produced = self.bound.function.body(self.bound.args, self.state, input.batch)
            batches = [produced] if isinstance(produced, pa.RecordBatch) else list(produced or [])
            self.pending = [_shape(b, self.bound.output_schema, self.filter, self.projection) for b in batches]
            if not self.pending:
                self.pending = [_empty(_projected(self.bound.output_schema, self.projection))]
        batch = self.pending.pop(0)
        out.emit(batch, {STATUS_KEY: "HAVE_MORE_OUTPUT"} if self.pending else None)


class _FinalizeState(ExchangeState):
    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.batches = batches

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        batch = next(self.batches, None)
        if batch is None:
            return out.finish()
        out.emit(batch)


def _projected(schema: pa.Schema, projection: list[int] | None) -> pa.Schema:
    return schema if projection is None else pa.schema([schema.field(i) for i in projection])


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def _shape(batch: pa.RecordBatch, schema: pa.Schema, filter: Any, projection: list[int] | None) -> pa.RecordBatch:
    """Filters (on the unprojected columns) and then projects a batch the body produced."""
    if batch.schema != schema:
        batch = pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema], schema=schema)
    if filter is not None:
        batch = filter.apply(batch)
    if projection is not None:
        batch = batch.select(projection)
    return batch


def _redeem(bound: Bound, init: dict[str, Any], tokens: list[bytes]) -> bytes:
    """The payload of the one split an init redeems, checked against this bind."""
    if len(tokens) != 1:
        raise InvalidArgumentError(f"{bound.function.name}(): an init redeems one split, got {len(tokens)} tokens")
    return splits.open_token(tokens[0], splits.fingerprint(wire.read_row(init["bind_call"])))


class InitMethods:
    """The ``init`` method of :class:`~quiver.vgi.protocol.VgiV2`."""

    worker: Worker

    def _init_buffered(self, bound: Bound, init: dict[str, Any], header: GlobalInitResponse, phase: Any) -> Stream:  # type: ignore[type-arg]
        """The sink (a header, no data) or one finalize stream of a buffered call."""
        header.max_workers = 1
        if phase == "TABLE_BUFFERING":
            self.worker.buffered.open(header.execution_id, bound)
            return _VgiStream(bound.output_schema, _FinalizeState(iter(())), wire.EMPTY_SCHEMA, header, producer=True)
        if phase == "TABLE_BUFFERING_FINALIZE":
            call = self.worker.buffered.get(header.execution_id)
            produced = buffering.output(call)
            shaped = iter([_shape(b, bound.output_schema, None, None) for b in produced])
            return _VgiStream(bound.output_schema, _FinalizeState(shaped), wire.EMPTY_SCHEMA, header, producer=True)
        raise InvalidArgumentError(
            f"{bound.function.name}() is a buffered table function: init takes phase TABLE_BUFFERING or "
            f"TABLE_BUFFERING_FINALIZE (got {phase})"
        )

    def init(self, request: bytes) -> Stream:  # type: ignore[type-arg]
        init = wire.read_row(request)
        bound = bind(self.worker, wire.read_row(init["bind_call"]))
        function, phase = bound.function, init.get("phase")
        execution_id = init.get("execution_id")
        secondary = execution_id is not None
        execution_id = execution_id or uuid.uuid4().bytes
        header = GlobalInitResponse(
            execution_id, init.get("init_opaque_data") if secondary else None, UNBOUNDED_WORKERS
        )
        role = "secondary" if secondary else "primary"
        log("debug", f"init {function.name}() {role} phase={phase}")
        projection = init.get("projection_ids") if function.projection_pushdown else None
        filter = None
        if function.filter_pushdown and init.get("pushdown_filters"):
            filter = vgi_filters.parse(init["pushdown_filters"], bound.output_schema)
        if function.kind == SCALAR:
            if phase is not None:
                raise InvalidArgumentError(f"{function.name}() is a scalar function: init takes no phase ({phase})")
            return _VgiStream(bound.output_schema, _ScalarState(bound), bound.input_schema, header)
        if function.kind == TABLE_BUFFERING:
            return self._init_buffered(bound, init, header, phase)
        if function.kind == TABLE:
            if phase is not None:
                raise InvalidArgumentError(f"{function.name}() is a table function: init takes no phase ({phase})")
            executions = self.worker.executions
            tokens = init.get("split_tokens")
            if tokens is not None:
                scan = _Scan(None, _redeem(bound, init, tokens))
                header.max_workers = 1
                output = _projected(bound.output_schema, projection)
                batches = iter(function.body(bound.args, scan))
                state = _TableState(bound, batches, filter, projection, output, scan)
                return _VgiStream(output, state, wire.EMPTY_SCHEMA, header, producer=True)
            if function.splits is not None:
                raise InvalidArgumentError(
                    f"{function.name}() plans its scan into splits: call table_function_plan, then init "
                    "with split_tokens"
                )
            if function.shared_work is None:
                counter = None
                header.max_workers = 1
            elif secondary:
                counter = executions.join(execution_id)
                log("debug", f"secondary init of execution {execution_id.hex()}")
            else:
                counter = executions.start(execution_id, int(function.shared_work(bound.args)))
                header.max_workers = function.max_workers or 1
                log("debug", f"execution {execution_id.hex()} started")
            scan = _Scan(counter)
            batches = iter(function.body(bound.args, scan))
            output = _projected(bound.output_schema, projection)
            state = _TableState(bound, batches, filter, projection, output, scan)
            return _VgiStream(output, state, wire.EMPTY_SCHEMA, header, producer=True)
        # table-in-out
        substream = init.get("substream_id") or b""
        key = (execution_id, substream)
        if phase == "INPUT":
            state = function.initial_state(bound.args) if function.initial_state else {}
            with self.worker.executions.lock:
                self.worker.executions.states[key] = state
            output = _projected(bound.output_schema, projection)
            return _VgiStream(output, _InOutState(bound, state, filter, projection), bound.input_schema, header)
        if phase == "FINALIZE":
            with self.worker.executions.lock:
                state = self.worker.executions.states.pop(key, None)
            produced = function.finalize(bound.args, state) if function.finalize else []
            batches = [produced] if isinstance(produced, pa.RecordBatch) else list(produced or [])
            shaped = iter([_shape(b, bound.output_schema, None, None) for b in batches])
            return _VgiStream(bound.output_schema, _FinalizeState(shaped), wire.EMPTY_SCHEMA, header, producer=True)
        raise InvalidArgumentError(
            f"{function.name}() is a table-in-out function: init requires an input row "
            f"stream (phase INPUT or FINALIZE, got {phase})"
        )
