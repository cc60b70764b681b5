"""The worker tests/test_spark.py reads through Spark and DuckDB alike: ``readings(n, splits := k)``,
a split-planned table of three columns with projection and filter pushdown (the SDK projects and
filters), so a read can be seen to ask the worker for fewer columns and rows.
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


if __name__ == "__main__":
    worker.main()
