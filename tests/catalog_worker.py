"""A VGI worker on quiver's Python SDK that declares a whole catalog, for the engine's catalog tests.

- three schemas: ``text`` (its default, with a function), ``numbers`` (with a function) and
  ``archive`` (declared, empty); no ``main``;
- comments and tags on the catalog, on each schema and on the functions; example queries and
  categories on the functions;
- ``later``: a function declared with a kind no engine knows yet (``FUTURE_KIND``), which the
  engine must list and refuse by name;
- ``shout`` sends one log record (INFO) on the wire per call, as a worker's log reaches its engine.

``--per-schema``: the worker has no ``catalog_contents`` (as vgi-python before 0.39), so the engine
lists each schema's functions by type; ``tally`` is then listed as an aggregate only
(``AGGREGATE_FUNCTION``), where it is otherwise a scalar.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from quiver.vgi import Arg, Example, Worker, wire
from quiver.vgi import catalog as vgi_catalog
from quiver.vgi import init as vgi_init

worker = Worker(
    "shelf",
    "a catalog declared in full",
    default_schema="text",
    comment="Functions over text and numbers",
    tags={"vgi.title": "Shelf", "vgi.author": "quiver"},
)
worker.schema("text", comment="Text functions", tags={"vgi.title": "Text"})
worker.schema("numbers", comment="Number functions")
worker.schema("archive", comment="Kept for later", tags={"state": "empty"})


@worker.scalar(
    returns=pa.string(),
    args=[Arg("s", pa.string())],
    comment="Upper-cases text",
    tags={"vgi.category": "text"},
    examples=[Example("SELECT shelf.shout('hi')", "prints HI"), "SELECT shelf.text.shout('ß')"],
    categories=["string"],
)
def shout(s: pa.Array) -> pa.Array:
    """The text in upper case."""
    return pc.utf8_upper(s)


@worker.table(output=pa.schema([pa.field("n", pa.int64())]), schema="numbers", comment="One to three")
def three(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    """The numbers 1, 2, 3."""
    yield pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64())], names=["n"])


@worker.scalar(returns=pa.int64(), args=[Arg("x", pa.int64())], schema="numbers")
def later(x: pa.Array) -> pa.Array:
    """Declared with a kind no engine calls yet."""
    return x


@worker.scalar(returns=pa.int64(), args=[Arg("x", pa.int64())], schema="numbers")
def tally(x: pa.Array) -> pa.Array:
    """Declared as an aggregate with --per-schema."""
    return x


_function_info = vgi_catalog.function_info
_DECLARED = {"later": "FUTURE_KIND"}


def _declared_kind(function: Any) -> dict[str, Any]:
    row = _function_info(function)
    row["function_type"] = _DECLARED.get(function.name, row["function_type"])
    return row


_functions = vgi_catalog.CatalogMethods._functions
_attach = vgi_catalog.CatalogMethods.catalog_attach


def _by_type(self: Any, wanted: str | None, path: list[str] | None = None) -> list[Any]:
    """``tally`` listed under AGGREGATE_FUNCTION alone."""
    if wanted == "AGGREGATE_FUNCTION":
        return [f for f in _functions(self, None, path) if f.name == "tally"]
    return [f for f in _functions(self, wanted, path) if f.name != "tally"]


def _attach_without_contents(self: Any, request: bytes) -> bytes:
    answer = wire.read_row(_attach(self, request))
    answer["supports_catalog_contents"] = False
    return wire.row_bytes(wire.CATALOG_ATTACH_RESULT, answer)


_process = vgi_init._ScalarState.process


def _process_logged(self: Any, input: Any, out: Any, ctx: Any) -> None:
    ctx.log("INFO", f"{self.bound.function.name}: {input.batch.num_rows} rows", worker="shelf")
    _process(self, input, out, ctx)


if __name__ == "__main__":
    vgi_catalog.function_info = _declared_kind
    vgi_init._ScalarState.process = _process_logged
    argv = sys.argv[1:]
    if "--per-schema" in argv:
        argv.remove("--per-schema")
        _DECLARED["tally"] = "AGGREGATE"
        vgi_catalog.CatalogMethods._functions = _by_type
        vgi_catalog.CatalogMethods.catalog_attach = _attach_without_contents
    worker.main(argv)
