"""``quiver``: the installed package's command, one subcommand per program.

``quiver sql "<query>"`` (:mod:`quiver.sql`), ``quiver server ...`` (:mod:`quiver.serve`, also the
``quiver-server`` command) and ``quiver gateway ...`` (the ``quiver-gateway`` binary of the
``quiver-native`` wheel, or a source checkout's build).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .extension import source_tree_target

__all__ = ["gateway_binary", "main"]

USAGE = """usage: quiver COMMAND [ARGS...]

commands:
  sql "<query>"     run SQL in DuckDB with quiver's extension loaded (quiver sql --help)
  server ...        DuckDB as a quiver.server and Flight SQL server (quiver server --help)
  gateway ...       read-only HTTP APIs over DuckDB snapshots (quiver gateway --help)
  --version         print the version
"""


def gateway_binary() -> Path | None:
    """``quiver-gateway`` beside this interpreter's scripts, else on ``PATH``, else the source tree's build."""
    for candidate in (
        shutil.which("quiver-gateway", path=sysconfig.get_path("scripts")),
        shutil.which("quiver-gateway"),
        source_tree_target() / "release" / "quiver-gateway",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _gateway(argv: Sequence[str]) -> int:
    binary = gateway_binary()
    if binary is None:
        print("quiver gateway: no quiver-gateway binary: pip install the quiver-native wheel", file=sys.stderr)
        return 2
    os.execv(binary, [str(binary), *argv])


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``quiver COMMAND ...`` to the program of that name."""
    args = list(sys.argv[1:] if argv is None else argv)
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "sql":
        from .sql import main as sql_main

        return sql_main(rest)
    if command == "server":
        from .serve import main as serve_main

        return serve_main(rest)
    if command == "gateway":
        return _gateway(rest)
    if command == "--version":
        print(f"quiver {__version__}")
        return 0
    if command in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    print(USAGE if not command else f"quiver: unknown command {command!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
