"""DuckDB with quiver's extension loaded, so VGI workers attach as catalogs.

.. code-block:: python

    import quiver

    con = quiver.connect(workers={"w": "launch:target/release/quiver-allinone"})
    con.sql("SELECT sum(n) FROM w.numbers(1000000)").show()
    con.sql("SELECT w.upper_case('hello')").show()

From a shell, ``python -m quiver.sql "<query>"`` (what ``./quiver sql`` runs) executes one or more
statements and prints the last result; the example worker is attached as ``w`` unless ``--attach``
names others.

The extension is found by :func:`quiver.extension.extension_path` (the installed package's, the
source tree's build, or ``$QUIVER_EXTENSION``). It is unsigned, so connections allow unsigned
extensions. Shared memory is switched on with ``VGI_RPC_SHM_SIZE_BYTES`` (read at ATTACH).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .extension import EXTENSION_ENV, extension_path, load, source_tree_target

if TYPE_CHECKING:
    import duckdb

__all__ = ["EXTENSION_ENV", "connect", "example_worker", "extension_path", "main"]


def example_worker() -> str:
    """The command of the example worker (numbers, echo, upper_case).

    The source tree's Rust ``quiver-allinone`` when it is built, else the Python one of this package.
    """
    built = source_tree_target() / "release" / "quiver-allinone"
    if built.is_file():
        return str(built)
    return shlex.join([sys.executable, "-m", "quiver.vgi.allinone"])


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def connect(
    database: str = ":memory:",
    *,
    workers: Mapping[str, str] | None = None,
    config: Mapping[str, str] | None = None,
    read_only: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with quiver loaded and ``workers`` (alias -> location) attached.

    A location is a command (its stdin/stdout carry the protocol, one process per connection),
    ``launch:<command>`` (one shared worker on a Unix socket) or ``unix://<path>``.
    """
    import duckdb

    settings = {"allow_unsigned_extensions": "true", **(config or {})}
    con = duckdb.connect(database, read_only=read_only, config=settings)
    try:
        load(con)
        for alias, location in (workers or {}).items():
            con.execute(f"ATTACH {_literal(location)} AS {_identifier(alias)} (TYPE quiver)")
    except BaseException:
        con.close()
        raise
    return con


def _parse_attach(values: Sequence[str]) -> dict[str, str]:
    workers: dict[str, str] = {}
    for value in values:
        alias, sep, location = value.partition("=")
        if not sep or not alias or not location:
            raise SystemExit(f"quiver sql: --attach wants NAME=LOCATION, got {value!r}")
        workers[alias] = location
    return workers


def main(argv: Sequence[str] | None = None) -> int:
    """``quiver sql "<query>"``: runs the statements, prints the last result."""
    parser = argparse.ArgumentParser(
        prog="quiver sql",
        description="Run SQL in DuckDB with quiver's extension loaded; prints the last statement's result.",
    )
    parser.add_argument("query", help="one or more SQL statements separated by ';'")
    parser.add_argument(
        "--attach",
        action="append",
        default=[],
        metavar="NAME=LOCATION",
        help="attach a worker (repeatable); default: the example worker as w (launch:quiver-allinone)",
    )
    parser.add_argument("--database", default=":memory:", help="DuckDB database file (default: in memory)")
    parser.add_argument("--max-rows", type=int, default=40, help="rows to print (default 40)")
    args = parser.parse_args(argv)
    workers = _parse_attach(args.attach) if args.attach else {"w": f"launch:{example_worker()}"}
    try:
        con = connect(args.database, workers=workers)
    except Exception as error:
        print(f"quiver sql: {error}", file=sys.stderr)
        return 1
    try:
        result = con.sql(args.query)
        if result is not None:
            result.show(max_rows=args.max_rows)
    except Exception as error:
        print(f"quiver sql: {error}", file=sys.stderr)
        return 1
    finally:
        con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
