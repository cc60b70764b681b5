"""Where quiver's DuckDB extension is, and loading it into a DuckDB connection.

The extension ships as DuckDB's Python packages ship theirs: the platform wheel ``quiver-native``
installs it at ``<site-packages>/.duckdb_extensions/v<DuckDB version>/<platform>/quiver.duckdb_extension``
(DuckDB's own extension directory layout, so that directory also serves ``SET extension_directories``).
The file used is the first of:

1. ``$QUIVER_EXTENSION``, when set (an override, e.g. another build);
2. the installed one, beside the ``quiver_native`` module;
3. the one a source checkout builds, ``target/extension/quiver.duckdb_extension``
   (``$CARGO_TARGET_DIR`` when set).

The extension is unsigned: DuckDB loads it into a connection opened with
``allow_unsigned_extensions`` (a setting fixed when the database starts).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["EXTENSION_ENV", "extension_path", "extensions_dir", "load", "source_tree_target"]

EXTENSION_ENV = "QUIVER_EXTENSION"
EXTENSION_FILE = "quiver.duckdb_extension"
#: The directory, beside the native module, that holds DuckDB's extension layout.
EXTENSIONS_DIR = ".duckdb_extensions"
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def source_tree_target() -> Path:
    """The Cargo target directory of the source checkout this module may live in."""
    return Path(os.environ.get("CARGO_TARGET_DIR", _SOURCE_ROOT / "target"))


def extensions_dir() -> Path | None:
    """The installed ``.duckdb_extensions`` directory, or ``None`` when ``quiver-native`` is not installed."""
    spec = importlib.util.find_spec("quiver_native")
    if spec is None or spec.origin is None:
        return None
    # quiver_native is a package (quiver_native/__init__.py) or a bare module: its site-packages either way.
    site = Path(spec.origin).parent
    if spec.submodule_search_locations is not None:
        site = site.parent
    directory = site / EXTENSIONS_DIR
    return directory if directory.is_dir() else None


def _installed() -> Path | None:
    directory = extensions_dir()
    if directory is None:
        return None
    import duckdb

    # One wheel carries one platform; the version directory keeps a DuckDB upgrade from loading it.
    found = sorted((directory / f"v{duckdb.__version__}").glob(f"*/{EXTENSION_FILE}"))
    return found[0] if found else None


def extension_path() -> Path:
    """The extension file: ``$QUIVER_EXTENSION``, else the installed one, else the source tree's build."""
    named = os.environ.get(EXTENSION_ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise FileNotFoundError(f"{EXTENSION_ENV} names {path}, which is not a file")
        return path
    installed = _installed()
    if installed is not None:
        return installed
    built = source_tree_target() / "extension" / EXTENSION_FILE
    if built.is_file():
        return built
    raise FileNotFoundError(
        "quiver's DuckDB extension is not installed for this DuckDB "
        "(pip install the quiver-native wheel built for it), nor built in a source checkout "
        f"(./quiver setup builds {built}); {EXTENSION_ENV} may name the file"
    )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def load(connection: duckdb.DuckDBPyConnection) -> None:
    """Load quiver's extension into ``connection``, opened with ``allow_unsigned_extensions``.

    >>> con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    >>> quiver.load(con)
    """
    import duckdb

    path = extension_path()
    try:
        connection.execute(f"LOAD {_literal(str(path))}")
    except duckdb.IOException as error:
        if "allow_unsigned_extensions" not in str(error):
            raise
        raise duckdb.IOException(
            f"quiver's extension is unsigned: open the connection with "
            f'duckdb.connect(..., config={{"allow_unsigned_extensions": "true"}}) ({error})'
        ) from error
