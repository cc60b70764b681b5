"""The example worker: scans, table functions, a scalar and three aggregates.

``numbers(n)``, ``split_numbers(n, splits)``, ``echo(TABLE)``, ``row_count(TABLE)``,
``upper_case(VARCHAR)``, ``multiply(BIGINT, BIGINT)``, ``sum_int``, ``avg_double`` and ``concat_agg``.
``split_numbers`` is a split-planned scan, ``row_count`` a buffered table function. Every function means the same as in
the Rust and Java examples.

``python -m quiver.vgi.allinone`` (stdio) or ``... --unix PATH [--idle-timeout SECS]``;
attach it from DuckDB with ``LOCATION 'launch:python -m quiver.vgi.allinone'``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Example, InvalidArgumentError, Worker

DEFAULT_BATCH_ROWS = 1 << 20
NUMBERS = pa.schema([pa.field("n", pa.int64())])

ROW_COUNT = pa.schema([pa.field("rows", pa.int64())])
SPLIT_RANGE = struct.Struct("<qq")

# The main schema's vgi.categories registry, which each function's vgi.category names.
CATEGORIES = (
    '[{"name": "aggregates", "title": "Aggregates", "description": "Functions over the rows of a group"}, '
    '{"name": "generators", "title": "Generators", "description": "Functions that make rows"}, '
    '{"name": "math", "title": "Math", "description": "Functions over numbers"}, '
    '{"name": "tables", "title": "Tables", "description": "Functions over a whole table"}, '
    '{"name": "text", "title": "Text", "description": "Functions over strings"}]'
)

worker = Worker(
    "allinone",
    "VGI example worker: numbers, split_numbers, echo, row_count, upper_case, multiply, sum_int, avg_double, "
    "concat_agg",
    comment="quiver's example VGI worker: a parallel generator, a pass-through table function and Unicode upper case",
    tags={
        "vgi.title": "quiver all-in-one example",
        "vgi.doc_llm": "numbers(n) generates the integers 0..n-1 in parallel; echo(TABLE) returns its input table; "
        "upper_case(s) upper-cases text with Unicode full case mapping; "
        "multiply(value, factor) multiplies two BIGINTs (an error on overflow).",
    },
)
worker.schema(
    "main",
    comment="The example functions",
    tags={"vgi.title": "Examples", "vgi.categories": CATEGORIES},
)


@worker.scalar(
    returns=pa.string(),
    args=[Arg("s", pa.string(), "The string to convert")],
    comment="Upper-cases text with Unicode full case mapping",
    tags={"vgi.category": "text"},
    categories=["text"],
    examples=[Example("SELECT allinone.main.upper_case('straße')", "STRASSE: full case mapping turns ß into SS")],
)
def upper_case(s: pa.Array) -> pa.Array:
    """Converts a string to upper case (Unicode full case mapping); NULL stays NULL."""
    # Full case mapping, as str.upper(), Rust's to_uppercase and Java's toUpperCase(Locale.ROOT):
    # 'ß' becomes 'SS' and 'ﬁ' 'FI'. pyarrow's utf8_upper maps one code point to one ('ß' to 'ẞ').
    if pc.all(pc.string_is_ascii(s)).as_py() is not False:
        return pc.ascii_upper(s)
    return pa.array([None if text is None else text.upper() for text in s.to_pylist()], pa.string())


@worker.scalar(
    returns=pa.int64(),
    args=[Arg("value", pa.int64(), "The number to multiply"), Arg("factor", pa.int64(), "The factor")],
    comment="Multiplies two integers, as DuckDB's * does",
    tags={"vgi.category": "math"},
    categories=["math"],
    examples=[Example("SELECT allinone.main.multiply(21, 2)", "21 times 2: 42")],
)
def multiply(value: pa.Array, factor: pa.Array) -> pa.Array:
    """Multiplies two BIGINTs; NULL when either is NULL; an error on overflow, as DuckDB's own * on BIGINT."""
    # One Arrow compute call over the whole batch; NULL slots are skipped, not checked.
    try:
        return pc.multiply_checked(value, factor)
    except pa.ArrowInvalid:
        pass
    # Arrow says only "overflow": name the row, as the Rust and Java workers do (the error path alone).
    for a, b in zip(value.to_pylist(), factor.to_pylist(), strict=True):
        if a is not None and b is not None and not -(1 << 63) <= a * b < 1 << 63:
            raise InvalidArgumentError(f"multiply(): BIGINT overflow ({a} * {b})")
    raise InvalidArgumentError("multiply(): BIGINT overflow")


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
    comment="The integers 0..n-1, generated in parallel",
    tags={"vgi.category": "generators"},
    categories=["generators"],
    examples=[Example("SELECT sum(n) FROM allinone.main.numbers(1000)", "The sum of 0..999: 499500")],
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
    comment="The integers 0..n-1, planned into splits that run in parallel",
    tags={"vgi.category": "generators"},
    categories=["generators"],
    examples=[
        Example("SELECT sum(n) FROM allinone.main.split_numbers(1000, splits := 8)", "The sum of 0..999: 499500")
    ],
)
def split_numbers(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    """The integers 0 .. n-1 as column n, planned into splits: each init reads one range."""
    lo, hi = SPLIT_RANGE.unpack(scan.split)
    for start in range(lo, hi, DEFAULT_BATCH_ROWS):
        end = min(hi, start + DEFAULT_BATCH_ROWS)
        yield pa.RecordBatch.from_arrays([pa.array(range(start, end), pa.int64())], schema=NUMBERS)


@worker.buffered_table(
    args=[Arg.table_input("data", "the rows to count")],
    output=ROW_COUNT,
    comment="Counts the rows of its whole input table",
    tags={"vgi.category": "tables"},
    categories=["tables"],
    examples=[
        Example("SELECT * FROM allinone.main.row_count((SELECT * FROM range(10)))", "Ten rows counted at once: 10")
    ],
)
def row_count(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    """One row: how many rows the whole input has (a buffered table function: it sees all of it)."""
    return pa.RecordBatch.from_arrays([pa.array([table.num_rows], pa.int64())], schema=ROW_COUNT)


@worker.table_in_out(
    args=[Arg.table_input("data", "the rows to pass through")],
    finalize=lambda args, state: [],
    comment="Returns its input table unchanged",
    tags={"vgi.category": "tables"},
    categories=["tables"],
    examples=[
        Example("SELECT count(*) FROM allinone.main.echo((SELECT * FROM range(10)))", "Ten rows passed through: 10")
    ],
)
def echo(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Returns its input table unchanged (finalize adds nothing)."""
    return batch


@worker.aggregate(
    name="sum_int",
    returns=pa.int64(),
    args=[Arg("x", pa.int64(), "the values to add")],
    comment="Adds up the non-NULL integers of a group",
    tags={"vgi.category": "aggregates"},
    categories=["aggregates"],
    examples=[Example("SELECT allinone.main.sum_int(x) FROM range(5) t(x)", "The sum of 0..4: 10")],
)
class SumInt:
    """Sum of the non-NULL values; NULL when there are none; an error on overflow."""

    def init(self, args: dict[str, Any]) -> int | None:
        return None

    def update(self, total: int | None, columns: list[pa.Array], rows: list[int], args: dict[str, Any]) -> int | None:
        values = [v for v in columns[0].take(pa.array(rows, pa.int64())).to_pylist() if v is not None]
        return total if not values else _checked((total or 0) + sum(values))

    def combine(self, total: int | None, other: int | None, args: dict[str, Any]) -> int | None:
        return total if other is None else _checked((total or 0) + other)

    def finalize(self, totals: list[int | None], args: dict[str, Any]) -> pa.Array:
        return pa.array(totals, pa.int64())


def _checked(total: int) -> int:
    if not -(1 << 63) <= total < 1 << 63:
        raise InvalidArgumentError("sum_int(): BIGINT overflow")
    return total


@worker.aggregate(
    name="avg_double",
    returns=pa.float64(),
    args=[Arg("x", pa.float64(), "the values to average")],
    comment="Averages the non-NULL doubles of a group",
    tags={"vgi.category": "aggregates"},
    categories=["aggregates"],
    examples=[Example("SELECT allinone.main.avg_double(x::DOUBLE) FROM range(5) t(x)", "The mean of 0..4: 2.0")],
)
class AvgDouble:
    """Mean of the non-NULL values; NULL when there are none."""

    def init(self, args: dict[str, Any]) -> tuple[float, int]:
        return (0.0, 0)

    def update(self, state: tuple[float, int], columns: list[pa.Array], rows: list[int], args: dict[str, Any]):
        total, count = state
        for value in columns[0].take(pa.array(rows, pa.int64())).to_pylist():
            if value is not None:
                total, count = total + value, count + 1
        return (total, count)

    def combine(self, state: tuple[float, int], other: tuple[float, int], args: dict[str, Any]):
        return (state[0] + other[0], state[1] + other[1])

    def finalize(self, states: list[tuple[float, int] | None], args: dict[str, Any]) -> pa.Array:
        return pa.array([s[0] / s[1] if s and s[1] else None for s in states], pa.float64())


@worker.aggregate(
    name="concat_agg",
    returns=pa.string(),
    args=[Arg("s", pa.string(), "the strings to join"), Arg("sep", pa.string(), "the separator", constant=True)],
    order_dependent=True,
    comment="Joins the strings of a group with a separator, in the order given",
    tags={"vgi.category": "aggregates"},
    categories=["aggregates"],
    examples=[
        Example(
            "SELECT allinone.main.concat_agg(s, '-' ORDER BY s) FROM (VALUES ('b'), ('a'), ('c')) t(s)",
            "The strings in order, joined by '-': a-b-c",
        )
    ],
)
class ConcatAgg:
    """The non-NULL strings joined by sep, in the order given (ORDER BY inside the call)."""

    def init(self, args: dict[str, Any]) -> list[str]:
        return []

    def update(self, parts: list[str], columns: list[pa.Array], rows: list[int], args: dict[str, Any]) -> list[str]:
        return parts + [v for v in columns[0].take(pa.array(rows, pa.int64())).to_pylist() if v is not None]

    def combine(self, parts: list[str], other: list[str], args: dict[str, Any]) -> list[str]:
        return parts + other

    def finalize(self, states: list[list[str] | None], args: dict[str, Any]) -> pa.Array:
        return pa.array([args["sep"].join(p) if p else None for p in states], pa.string())


if __name__ == "__main__":
    worker.main()
