"""Arrow data into a table: the insert handshake of ``crates/quiver-server-protocol/src/insert.rs``.

Batches go one exchange turn each (the server appends and acknowledges with the rows so far); the
last carries the commit marker. Anything that ends the call otherwise — an error here, in the caller's
reader, or on the server — cancels it, and the server rolls back every row the call appended.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .. import server_protocol as sp
from ..rpc import StreamCall
from .errors import InterfaceError, ProgrammingError

# Why 64 MiB (server_protocol.INSERT_BATCH_BYTES_MAX): a quarter of the server's default message
# limit, so a batch with its framing always fits, and large enough that the per-turn round trip vanishes.
BATCH_BYTES_MAX = sp.INSERT_BATCH_BYTES_MAX


def arrow_source(data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and batches of a Table, RecordBatch, RecordBatchReader or Arrow C stream."""
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    raise ProgrammingError(
        f"insert_arrow takes a pyarrow Table, RecordBatch or RecordBatchReader, got {type(data).__name__}"
    )


def bounded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The same rows in batches of at most BATCH_BYTES_MAX bytes each (empty batches dropped)."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if batch.nbytes <= BATCH_BYTES_MAX:
            yield batch
            continue
        rows_per_slice = max(1, batch.num_rows * BATCH_BYTES_MAX // batch.nbytes)
        for start in range(0, batch.num_rows, rows_per_slice):
            yield batch.slice(start, rows_per_slice)


def send(call: StreamCall, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> int:
    """Runs an opened ``insert`` call to its commit; returns the rows the server committed.

    One batch of lookahead tells which batch is the last, so the marker rides on real data and an
    empty input costs a single zero-row batch.
    """
    sent = 0
    acknowledged = 0
    try:
        pending = next(batches, None)
        while pending is not None:
            following = next(batches, None)
            last = following is None
            if not pending.schema.equals(schema):
                raise ProgrammingError(f"insert_arrow: a batch's schema differs from the first: {pending.schema}")
            acknowledged = _turn(call, pending, last)
            sent += pending.num_rows
            pending = following
        if sent == 0:
            acknowledged = _turn(call, pa.RecordBatch.from_pylist([], schema=schema), True)
    except BaseException:
        with contextlib.suppress(Exception):  # the original error says more than a failed cancel
            call.cancel()
        raise
    call.close()
    if acknowledged != sent:
        raise InterfaceError(f"insert: the server acknowledged {acknowledged} rows of {sent} sent")
    return acknowledged


def _turn(call: StreamCall, batch: pa.RecordBatch, last: bool) -> int:
    metadata = {sp.COMMIT_KEY: sp.COMMIT_VALUE} if last else None
    answer = call.exchange(batch, metadata)
    ack = answer.batch
    if ack.num_rows != 1 or ack.schema.names != [sp.ROWS_FIELD]:
        raise InterfaceError(f"insert: the acknowledgement is not one '{sp.ROWS_FIELD}' row: {ack.schema}")
    return int(ack.column(0)[0].as_py())
