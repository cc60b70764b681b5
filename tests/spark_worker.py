"""The worker tests/test_spark.py drives through Spark and DuckDB alike.

``readings(n, splits := k)`` is a split-planned table of three columns with projection and filter
pushdown, so a read can be seen to ask the worker for fewer columns; ``tally(TABLE)`` answers each
input batch in two parts and ends with a finalize phase; ``checked_sqrt(x)`` fails on a negative x.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Worker

worker = Worker("spark_readings")
READINGS = pa.schema([("id", pa.int64()), ("sensor", pa.string()), ("value", pa.float64())])
SENSORS = pa.array(["north", "south", "east", "west", "straße"])
RANGE = struct.Struct("<qq")


def _ranges(args: dict[str, Any]) -> list[bytes]:
    n, k = args["n"], args["splits"]
    bounds = [n * i // k for i in range(k + 1)]
    return [RANGE.pack(lo, hi) for lo, hi in itertools.pairwise(bounds)]


@worker.table(
    output=READINGS,
    args=[
        Arg("n", pa.int64(), "how many readings", min=0),
        Arg("splits", pa.int64(), "how many splits", named=True, default=4, min=1, max=10_000),
    ],
    projection=True,
    filters=True,
    max_workers=4,
    splits=_ranges,
)
def readings(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    """Reading i: sensor i % 5, value i / 4 (every seventh reading NULL)."""
    lo, hi = RANGE.unpack(scan.split)
    for start in range(lo, hi, 10_000):
        ids = pa.array(range(start, min(hi, start + 10_000)), pa.int64())
        sensor = pc.take(SENSORS, pc.remainder(ids, 5))
        value = pc.if_else(pc.equal(pc.remainder(ids, 7), 0), None, pc.divide(pc.cast(ids, pa.float64()), 4.0))
        yield pa.RecordBatch.from_arrays([ids, sensor, value], schema=READINGS)


TALLY = pa.schema([("rows", pa.int64())])


def _tally(rows: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([rows], pa.int64())], schema=TALLY)


@worker.table_in_out(
    args=[Arg.table_input("data", "the rows to tally")],
    output=TALLY,
    initial_state=lambda args: {"rows": 0},
    finalize=lambda args, state: [_tally(state["rows"])],
)
def tally(args: dict[str, Any], state: dict[str, int], batch: pa.RecordBatch) -> list[pa.RecordBatch]:
    """Per input batch its row count, then a zero (two answers to one batch); finalize: the call's total.

    However the input is cut into calls and batches, the answers add up to twice its rows.
    """
    state["rows"] += batch.num_rows
    return [_tally(batch.num_rows), _tally(0)]


@worker.scalar(returns=pa.float64(), args=[Arg("x", pa.float64(), "a non-negative number")])
def checked_sqrt(x: pa.Array) -> pa.Array:
    """The square root of x; a negative x is an error naming it."""
    negative = pc.min(x).as_py()
    if negative is not None and negative < 0:
        raise ValueError(f"checked_sqrt: cannot take the square root of {negative}")
    return pc.sqrt(x)


if __name__ == "__main__":
    worker.main()
