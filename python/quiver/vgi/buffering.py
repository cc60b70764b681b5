"""Buffered table functions (``table_buffering``): the body sees the whole input at once.

The engine opens the call with an ``init`` (phase ``TABLE_BUFFERING``), sends every input batch
with ``table_buffering_process``, then ``table_buffering_combine``, then one finalize ``init``
(phase ``TABLE_BUFFERING_FINALIZE``) per id combine answered, and ``table_buffering_destructor``.
This SDK keeps a call's batches in its process, keyed by execution id: quiver's engine and
vgi-python's Client send a whole buffered call on one connection.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import wire
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .bind import Bound

# Most buffered calls one process holds at once (an engine that never combines cannot grow it).
CALLS_MAX = 1024


@dataclass
class BufferedCall:
    bound: Bound
    batches: list[pa.RecordBatch] = field(default_factory=list)


class BufferedCalls:
    """The open buffered calls of one worker process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[bytes, BufferedCall] = {}

    def open(self, execution_id: bytes, bound: Bound) -> None:
        with self.lock:
            if len(self.calls) >= CALLS_MAX:
                raise InvalidArgumentError(f"more than {CALLS_MAX} buffered calls are open in this worker")
            self.calls[execution_id] = BufferedCall(bound)

    def get(self, execution_id: bytes) -> BufferedCall:
        with self.lock:
            call = self.calls.get(execution_id)
        if call is None:
            raise InvalidArgumentError(f"no buffered call is open for execution {execution_id.hex()}")
        return call

    def close(self, execution_id: bytes) -> BufferedCall | None:
        with self.lock:
            return self.calls.pop(execution_id, None)


def output(call: BufferedCall) -> list[pa.RecordBatch]:
    """What the body answers for the whole input, as batches of the bound output schema."""
    bound = call.bound
    schema = bound.input_schema if bound.input_schema is not None else pa.schema([])
    table = pa.Table.from_batches(call.batches, schema=schema)
    produced = bound.function.body(bound.args, table)
    if isinstance(produced, pa.Table):
        return produced.to_batches()
    return [produced] if isinstance(produced, pa.RecordBatch) else list(produced or [])


class BufferingMethods:
    """``table_buffering_process`` / ``_combine`` / ``_destructor`` of :class:`~quiver.vgi.protocol.VgiV2`."""

    worker: Any

    def table_buffering_process(self, request: bytes) -> bytes:
        row = wire.read_row(request)
        call = self.worker.buffered.get(row["execution_id"])
        batch = wire.read_batch(row["input_batch"])
        expected = call.bound.input_schema
        if expected is not None and not batch.schema.equals(expected):
            batch = pa.RecordBatch.from_arrays(
                [batch.column(i).cast(f.type) for i, f in enumerate(expected)], schema=expected
            )
        call.batches.append(batch)
        return wire.row_bytes(wire.BUFFERING_PROCESS_RESPONSE, {"state_id": row["execution_id"]})

    def table_buffering_combine(self, request: bytes) -> bytes:
        row = wire.read_row(request)
        self.worker.buffered.get(row["execution_id"])
        # One finalize stream reads the whole input.
        return wire.row_bytes(wire.BUFFERING_COMBINE_RESPONSE, {"finalize_state_ids": [row["execution_id"]]})

    def table_buffering_destructor(self, request: bytes) -> bytes:
        row = wire.read_row(request)
        self.worker.buffered.close(row["execution_id"])
        return wire.row_bytes(pa.schema([]), {})
