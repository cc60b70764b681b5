"""The example worker: numbers, split_numbers, echo, row_count and upper_case.

``numbers(n)``, ``split_numbers(n, splits)`` (a split-planned scan), ``echo(TABLE)``,
``row_count(TABLE)`` (a buffered table function), ``upper_case(VARCHAR)``.

``python -m quiver.vgi.allinone`` (stdio) or ``... --unix PATH [--idle-timeout SECS]``;
attach it from DuckDB with ``LOCATION 'launch:python -m quiver.vgi.allinone'``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Worker

DEFAULT_BATCH_ROWS = 1 << 20
NUMBERS = pa.schema([pa.field("n", pa.int64())])

worker = Worker("allinone", "VGI example worker: numbers, split_numbers, echo, row_count, upper_case")
ROW_COUNT = pa.schema([pa.field("rows", pa.int64())])
SPLIT_RANGE = struct.Struct("<qq")


@worker.scalar(returns=pa.string(), args=[Arg("s", pa.string(), "the text to upper-case")])
def upper_case(s: pa.Array) -> pa.Array:
    """Upper-cases a string (Unicode-aware); NULL stays NULL."""
    return pc.utf8_upper(s)


@worker.table(
    output=NUMBERS,
    args=[
        Arg("n", pa.int64(), "how many numbers", min=0),
        Arg("batch_rows", pa.int64(), "rows per batch", named=True, default=DEFAULT_BATCH_ROWS, min=1),
    ],
    projection=True,
    filters=True,
    max_workers=8,
    shared_work=lambda args: args["n"],
)
def numbers(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    """The integers 0 .. n-1 as column n, in batches, shared by every connection of the scan."""
    size = args["batch_rows"] or DEFAULT_BATCH_ROWS
    base = None
    while (rows := scan.claim(size)) is not None:
        start, end = rows
        if base is None or len(base) < end - start:
            base = pa.array(range(end - start), pa.int64())
        yield pa.RecordBatch.from_arrays([pc.add(base.slice(0, end - start), start)], schema=NUMBERS)


def _split_ranges(args: dict[str, Any]) -> list[bytes]:
    """[0, n) in ``splits`` contiguous ranges (the first ones one row longer), one payload each."""
    n, k = args["n"], args["splits"]
    base, extra = divmod(n, k)
    payloads, lo = [], 0
    for i in range(k):
        hi = lo + base + (1 if i < extra else 0)
        payloads.append(SPLIT_RANGE.pack(lo, hi))
        lo = hi
    return payloads


@worker.table(
    output=NUMBERS,
    args=[
        Arg("n", pa.int64(), "how many numbers", min=0),
        Arg("splits", pa.int64(), "how many splits", named=True, default=4, min=1, max=1_000_000),
    ],
    projection=True,
    max_workers=8,
    splits=_split_ranges,
)
def split_numbers(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    """The integers 0 .. n-1 as column n, planned into splits: each init reads one range."""
    lo, hi = SPLIT_RANGE.unpack(scan.split)
    for start in range(lo, hi, DEFAULT_BATCH_ROWS):
        end = min(hi, start + DEFAULT_BATCH_ROWS)
        yield pa.RecordBatch.from_arrays([pa.array(range(start, end), pa.int64())], schema=NUMBERS)


@worker.buffered_table(args=[Arg.table_input("data", "the rows to count")], output=ROW_COUNT)
def row_count(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    """One row: how many rows the whole input has (a buffered table function: it sees all of it)."""
    return pa.RecordBatch.from_arrays([pa.array([table.num_rows], pa.int64())], schema=ROW_COUNT)


@worker.table_in_out(args=[Arg.table_input("data", "the rows to pass through")], finalize=lambda args, state: [])
def echo(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Returns its input table unchanged (finalize adds nothing)."""
    return batch


if __name__ == "__main__":
    worker.main()
