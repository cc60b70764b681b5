"""The example worker: ``numbers(n)``, ``echo(TABLE)``, ``upper_case(VARCHAR)``.

``python -m quiver.vgi.allinone`` (stdio) or ``... --unix PATH [--idle-timeout SECS]``;
attach it from DuckDB with ``LOCATION 'launch:python -m quiver.vgi.allinone'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Worker

DEFAULT_BATCH_ROWS = 1 << 20
NUMBERS = pa.schema([pa.field("n", pa.int64())])

worker = Worker("allinone", "VGI example worker: numbers, echo, upper_case")


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


@worker.table_in_out(args=[Arg.table_input("data", "the rows to pass through")], finalize=lambda args, state: [])
def echo(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Returns its input table unchanged (finalize adds nothing)."""
    return batch


if __name__ == "__main__":
    worker.main()
