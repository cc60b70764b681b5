"""A VGI worker on quiver's Python SDK: the one docs/python-worker.md walks through.

Run it under DuckDB: quiver.connect(workers={"w": "python examples/vgi_worker.py"}).
"""

import sys
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Example, Worker

worker = Worker(
    "shop",
    "a small shop's functions",
    default_schema="text",
    comment="Functions of a small shop",
    tags={"vgi.title": "Shop"},
)
worker.schema("text", comment="Text functions")
worker.schema("stock", comment="What is on the shelves")


@worker.scalar(
    returns=pa.string(),
    args=[Arg("s", pa.string(), "the text to shout")],
    comment="Upper-cases text",
    examples=[Example("SELECT w.shout('hello')", "HELLO")],
)
def shout(s: pa.Array) -> pa.Array:
    """The text in upper case; NULL stays NULL."""
    return pc.utf8_upper(s)


@worker.scalar(returns=pa.float64(), args=[Arg("price", pa.float64()), Arg("rate", pa.float64())])
def with_tax(price: pa.Array, rate: pa.Array) -> pa.Array:
    """The price with tax at rate (0.2 is 20 %)."""
    if pc.any(pc.less(rate, 0)).as_py():
        raise ValueError("a tax rate is never negative")
    return pc.round(pc.multiply(price, pc.add(rate, 1)), 2)


ITEMS = pa.schema([pa.field("item", pa.string()), pa.field("count", pa.int64())])


@worker.table(
    output=ITEMS,
    args=[Arg("at_least", pa.int64(), "the smallest count listed", named=True, default=0)],
    schema="stock",
    comment="The items in stock",
)
def shelves(args: dict, scan: object) -> Iterator[pa.RecordBatch]:
    """Every item on the shelves and how many there are."""
    print(f"shelves: listing items with at least {args['at_least']}", file=sys.stderr, flush=True)
    items = [("apples", 12), ("pears", 0), ("plums", 7)]
    kept = [(item, count) for item, count in items if count >= args["at_least"]]
    yield pa.RecordBatch.from_pylist([{"item": i, "count": c} for i, c in kept], schema=ITEMS)


@worker.table_in_out(
    args=[Arg.table_input("data", "the rows to number")],
    output=lambda input_schema, args: pa.schema([pa.field("line", pa.int64()), *input_schema]),
    initial_state=lambda args: {"next": 1},
    schema="stock",
)
def numbered(args: dict, state: dict, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Its input with a first column, line: 1, 2, 3... across the whole input."""
    line = pa.array(range(state["next"], state["next"] + batch.num_rows), pa.int64())
    state["next"] += batch.num_rows
    return pa.RecordBatch.from_arrays([line, *batch.columns], names=["line", *batch.schema.names])


if __name__ == "__main__":
    worker.main()
