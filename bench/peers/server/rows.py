"""The rows of `./quiver bench server`: seed 002's `measurements` table, made once for every peer.

Schema (24 bytes per row):

    measurements(id INT NOT NULL, sensor_id INT, value DOUBLE, timestamp BIGINT)

Row ``i`` of a table that starts at ``start`` (the seed's generator, so quiver's rows and the seed's own
suite hold the same values):

    id        = start + i                          (INT)
    sensor_id = id % 10                            (INT)
    value     = id * 0.1                           (DOUBLE: the INT widened to DOUBLE, times 0.1)
    timestamp = 1_700_000_000_000 + id * 1000      (BIGINT)

A single-table workload starts at 0. The N-connection workloads split ``rows`` into N tables of
``rows // N`` rows, table ``w`` starting at ``w * (rows // N)``: together they hold ids
``0 .. (rows // N) * N``, the same rows as one table of that many rows.

Every peer checks "same rows" instead of assuming it: after an insert it asks its server for
`CHECKSUM_SQL` and compares with `expected`; after a scan it compares `of_table(result)` with the
expected checksum of what the query selects. The expected values come from closed forms, so checking
costs no second pass over the data.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.compute as pc

BYTES_PER_ROW = 24
TIMESTAMP_BASE = 1_700_000_000_000
TIMESTAMP_STEP = 1000
SENSORS = 10
# The filter of query.filtered; its result has the columns id and value (12 bytes per row).
FILTER_SENSOR = 5
# `id` is an INT and the checksum's timestamp sum must stay inside a BIGINT (1000 · n² / 2 < 2⁶³).
ROWS_MAX = 100_000_000
# Peers that stream batches (Arrow IPC, COPY) cut the table into batches of this many rows, as the
# seed's own suite does.
BATCH_ROWS = 100_000

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("sensor_id", pa.int32()),
        pa.field("value", pa.float64()),
        pa.field("timestamp", pa.int64()),
    ]
)
# DOUBLE PRECISION rather than DOUBLE: the one spelling DuckDB, Hyper and PostgreSQL all accept.
COLUMNS_DDL = "id INT NOT NULL, sensor_id INT, value DOUBLE PRECISION, timestamp BIGINT"

FULL_SCAN_SQL = "SELECT id, sensor_id, value, timestamp FROM {table}"
FILTERED_SQL = f"SELECT id, value FROM {{table}} WHERE sensor_id = {FILTER_SENSOR}"
AGGREGATION_SQL = "SELECT sensor_id, count(*) AS n, sum(value) AS total FROM {table} GROUP BY sensor_id"
# The query workloads: name, SQL, bytes per result row (the seed's counts).
QUERY_SHAPES = [
    ("query.full_scan", FULL_SCAN_SQL, BYTES_PER_ROW),
    ("query.filtered", FILTERED_SQL, 12),
    ("query.aggregation", AGGREGATION_SQL, BYTES_PER_ROW),
]
# What a server holds after an insert; the timestamp sum is taken from TIMESTAMP_BASE so that it fits
# a BIGINT on every engine.
CHECKSUM_SQL = (
    "SELECT count(*), sum(CAST(id AS BIGINT)), sum(CAST(sensor_id AS BIGINT)), "
    f"sum(timestamp - {TIMESTAMP_BASE}), sum(value) FROM {{table}}"
)
# sum(value) is a sum of doubles whose order differs between engines; everything else is exact.
VALUE_REL_TOL = 1e-9


@dataclass(frozen=True)
class Checksum:
    """Sums over a set of rows; None where the rows lack the column (query.filtered keeps id, value)."""

    count: int
    sum_id: int
    sum_sensor_id: int | None
    sum_timestamp_offset: int | None
    sum_value: float

    def matches(self, other: Checksum) -> bool:
        """Exact on the integer sums both sides have, relative tolerance on sum(value)."""
        for mine, theirs in (
            (self.count, other.count),
            (self.sum_id, other.sum_id),
            (self.sum_sensor_id, other.sum_sensor_id),
            (self.sum_timestamp_offset, other.sum_timestamp_offset),
        ):
            if mine is not None and theirs is not None and mine != theirs:
                return False
        return math.isclose(self.sum_value, other.sum_value, rel_tol=VALUE_REL_TOL, abs_tol=1e-6)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["sum_value"] = round(self.sum_value, 3)
        return out


def check_rows(rows: int, start: int = 0) -> None:
    assert 0 <= rows <= ROWS_MAX, f"rows must be in 0..{ROWS_MAX}, got {rows}"
    assert start >= 0 and start + rows <= ROWS_MAX, f"ids must stay below {ROWS_MAX}"


def _arange_int32(start: int, rows: int) -> pa.Array:
    """start, start+1, ... as one int32 array, by doubling (pyarrow alone: no numpy in every venv)."""
    if rows == 0:
        return pa.array([], pa.int32())
    out = pa.array([0], pa.int32())
    while len(out) < rows:
        out = pa.concat_arrays([out, pc.add(out, pa.scalar(len(out), pa.int32()))])
    out = out.slice(0, rows)
    return pc.add(out, pa.scalar(start, pa.int32())) if start else out


def table(rows: int, start: int = 0) -> pa.Table:
    """``rows`` rows of measurements with ids from ``start``, in one contiguous chunk per column."""
    check_rows(rows, start)
    ids = _arange_int32(start, rows)
    # Integer division truncates, and ids are never negative, so this is id % 10.
    sensor_ids = pc.subtract(ids, pc.multiply(pc.divide(ids, SENSORS), SENSORS))
    values = pc.multiply(pc.cast(ids, pa.float64()), 0.1)
    wide = pc.cast(ids, pa.int64())
    timestamps = pc.add(pc.multiply(wide, TIMESTAMP_STEP), TIMESTAMP_BASE)
    return pa.Table.from_arrays([ids, sensor_ids, values, timestamps], schema=SCHEMA)


def worker_tables(rows: int, workers: int) -> list[pa.Table]:
    """The N-connection split: ``workers`` tables of ``rows // workers`` rows each."""
    assert workers >= 1, "workers must be at least 1"
    per_worker = rows // workers
    return [table(per_worker, start=w * per_worker) for w in range(workers)]


def _sensor_subset(rows: int, start: int, sensor: int) -> Checksum:
    """Closed-form sums over the ids in [start, start + rows) whose id % 10 == sensor."""
    end = start + rows
    first = start + (sensor - start) % SENSORS
    k = 0 if first >= end else (end - 1 - first) // SENSORS + 1
    sum_id = k * first + SENSORS * k * (k - 1) // 2
    return Checksum(
        count=k,
        sum_id=sum_id,
        sum_sensor_id=sensor * k,
        sum_timestamp_offset=TIMESTAMP_STEP * sum_id,
        sum_value=0.1 * sum_id,
    )


def expected(rows: int, start: int = 0) -> Checksum:
    """The checksum of a full table of ``rows`` rows starting at ``start``."""
    check_rows(rows, start)
    parts = [_sensor_subset(rows, start, s) for s in range(SENSORS)]
    return Checksum(
        count=sum(p.count for p in parts),
        sum_id=sum(p.sum_id for p in parts),
        sum_sensor_id=sum(p.sum_sensor_id for p in parts),
        sum_timestamp_offset=sum(p.sum_timestamp_offset for p in parts),
        sum_value=sum(p.sum_value for p in parts),
    )


def expected_filtered(rows: int, start: int = 0) -> Checksum:
    """The checksum of query.filtered's result (id and value of the rows with sensor_id = 5)."""
    check_rows(rows, start)
    subset = _sensor_subset(rows, start, FILTER_SENSOR)
    return Checksum(subset.count, subset.sum_id, None, None, subset.sum_value)


def _sum(column: pa.ChunkedArray | pa.Array, wide: pa.DataType) -> int | float:
    total = pc.sum(pc.cast(column, wide)).as_py()
    return 0 if total is None else total


def of_table(result: pa.Table) -> Checksum:
    """The checksum of rows received from a scan (full scan or filtered; columns by name)."""
    names = set(result.column_names)
    assert {"id", "value"} <= names, f"a scan result needs id and value, got {sorted(names)}"
    offset = None
    if "timestamp" in names:
        offset = _sum(pc.subtract(pc.cast(result["timestamp"], pa.int64()), TIMESTAMP_BASE), pa.int64())
    return Checksum(
        count=result.num_rows,
        sum_id=_sum(result["id"], pa.int64()),
        sum_sensor_id=_sum(result["sensor_id"], pa.int64()) if "sensor_id" in names else None,
        sum_timestamp_offset=offset,
        sum_value=float(_sum(result["value"], pa.float64())),
    )


def of_sql_row(row: tuple) -> Checksum:
    """The checksum from one row of CHECKSUM_SQL (engines return sums as int, Decimal or float)."""
    count, sum_id, sum_sensor, sum_ts, sum_value = row
    return Checksum(
        count=int(count),
        sum_id=int(sum_id or 0),
        sum_sensor_id=int(sum_sensor or 0),
        sum_timestamp_offset=int(sum_ts or 0),
        sum_value=float(sum_value or 0.0),
    )


def checksum_sql(tables: list[str]) -> str:
    """CHECKSUM_SQL over the union of ``tables`` (the N-connection workloads' tables together)."""
    assert tables, "a checksum needs at least one table"
    union = " UNION ALL ".join(f"SELECT * FROM {t}" for t in tables)
    return CHECKSUM_SQL.format(table=f"({union}) AS u")


def result_rows(workload: str, rows: int, start: int = 0) -> int:
    """How many rows a query workload returns from a table of ``rows`` rows from ``start``."""
    if workload == "query.full_scan":
        return rows
    if workload == "query.filtered":
        return expected_filtered(rows, start).count
    return min(rows, SENSORS)


def result_matches(workload: str, result: pa.Table, rows: int, start: int = 0) -> bool:
    """Whether a query workload's result holds what a table of ``rows`` rows from ``start`` must give."""
    if workload == "query.aggregation":
        return aggregation_matches(result, rows, start)
    want = expected(rows, start) if workload == "query.full_scan" else expected_filtered(rows, start)
    return of_table(result).matches(want)


def split_result_rows(workload: str, per_worker: int, workers: int) -> int:
    """How many rows the N-connection variant of a query workload returns, all tables together."""
    return sum(result_rows(workload, per_worker, w * per_worker) for w in range(workers))


def split_results_match(workload: str, results: list[pa.Table], per_worker: int) -> bool:
    """Whether each worker table's result (in worker order) holds what that table must give."""
    return all(result_matches(workload, r, per_worker, w * per_worker) for w, r in enumerate(results))


def aggregation_matches(result: pa.Table, rows: int, start: int = 0) -> bool:
    """query.aggregation: ten groups whose counts and sums add up to the whole table's."""
    want = expected(rows, start)
    counts = result.column(1)
    totals = result.column(2)
    return (
        result.num_rows == SENSORS
        and _sum(counts, pa.int64()) == want.count
        and math.isclose(float(_sum(totals, pa.float64())), want.sum_value, rel_tol=VALUE_REL_TOL)
    )
