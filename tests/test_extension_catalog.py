"""The whole catalog as a worker declares it, seen through DuckDB's own catalog functions
(tests/catalog_worker.py, on quiver's Python SDK): every schema and no other, the default schema
after USE, comments and tags on the catalog, schemas and functions, example queries and
categories; a function of a kind the engine cannot call named at ATTACH and on call; the worker's
log records on the engine's stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, connect

WORKER = f"{sys.executable} {ROOT / 'tests' / 'catalog_worker.py'}"


@pytest.fixture()
def con(extension: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    monkeypatch.delenv("QUIVER_WORKER_STDERR", raising=False)
    connection = connect(extension, threads="1")
    connection.execute(f"ATTACH '{WORKER}' AS shelf (TYPE quiver)")
    yield connection
    connection.close()


def test_every_declared_schema_and_no_other(con: duckdb.DuckDBPyConnection) -> None:
    schemas = con.execute(
        "SELECT schema_name, comment, tags FROM duckdb_schemas() WHERE database_name = 'shelf' AND NOT internal "
        "ORDER BY schema_name"
    ).fetchall()
    assert schemas == [
        ("archive", "Kept for later", {"state": "empty"}),
        ("numbers", "Number functions", {}),
        ("text", "Text functions", {"vgi.title": "Text"}),
    ]
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM shelf.main.three()")


def test_use_lands_in_the_default_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("USE shelf")
    assert con.execute("SELECT current_schema()").fetchone() == ("text",)
    assert con.execute("SELECT shout('quiet')").fetchone() == ("QUIET",)
    assert con.execute("SELECT sum(n) FROM numbers.three()").fetchone() == (6,)


def test_the_catalog_comment_and_tags(con: duckdb.DuckDBPyConnection) -> None:
    row = con.execute("SELECT comment, tags FROM duckdb_databases() WHERE database_name = 'shelf'").fetchone()
    assert row == ("Functions over text and numbers", {"vgi.title": "Shelf", "vgi.author": "quiver"})


def test_function_comments_tags_examples_and_categories(con: duckdb.DuckDBPyConnection) -> None:
    shout_examples = con.execute(
        "SELECT tags['vgi.example_queries'] FROM duckdb_functions() WHERE database_name = 'shelf' "
        "AND function_name = 'shout'"
    ).fetchone()[0]
    rows = con.execute(
        "SELECT function_name, schema_name, description, comment, tags, examples, categories FROM duckdb_functions() "
        "WHERE database_name = 'shelf' AND function_name IN ('shout', 'three') ORDER BY function_name"
    ).fetchall()
    assert rows == [
        (
            "shout",
            "text",
            "The text in upper case.",
            "Upper-cases text",
            {"vgi.category": "text", "vgi.example_queries": shout_examples},
            ["SELECT shelf.shout('hi')", "SELECT shelf.text.shout('ß')"],
            ["string"],
        ),
        ("three", "numbers", "The numbers 1, 2, 3.", "One to three", {}, [], []),
    ]
    # What each example shows is in the vgi.example_queries tag, where VGI's tools read it.
    assert json.loads(shout_examples) == [
        {"sql": "SELECT shelf.shout('hi')", "description": "prints HI"},
        {"sql": "SELECT shelf.text.shout('ß')", "description": ""},
    ]
    # The example queries run as written.
    assert con.execute(rows[0][5][0]).fetchone() == ("HI",)


def test_a_kind_the_engine_cannot_call_is_named_at_attach_and_on_call(
    extension: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    connection = connect(extension, threads="1")
    connection.execute(f"ATTACH '{WORKER}' AS shelf (TYPE quiver)")
    notice = "[shelf] quiver: 1 function(s) of kinds this engine cannot call yet: shelf.later (future_kind)"
    assert notice in capfd.readouterr().err
    listed = connection.execute(
        "SELECT schema_name, tags['quiver.unsupported_kind'] FROM duckdb_functions() "
        "WHERE database_name = 'shelf' AND function_name = 'later'"
    ).fetchall()
    assert listed == [("numbers", "future_kind")]
    with pytest.raises(duckdb.NotImplementedException, match=r"shelf\.later is a function of kind 'future_kind'"):
        connection.execute("SELECT shelf.numbers.later(1)")
    assert connection.execute("SELECT shelf.shout('on')").fetchone() == ("ON",)


def test_worker_log_records_reach_the_engines_stderr(
    con: duckdb.DuckDBPyConnection, capfd: pytest.CaptureFixture[str]
) -> None:
    assert con.execute("SELECT shelf.shout(s) FROM (VALUES ('a'), ('b')) t(s)").fetchall() == [("A",), ("B",)]
    assert '[shelf] INFO: shout: 2 rows {"worker":"shelf"}' in capfd.readouterr().err


def test_worker_log_records_follow_the_stderr_switch(
    extension: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIVER_WORKER_STDERR", "0")
    connection = connect(extension, threads="1")
    connection.execute(f"ATTACH '{WORKER}' AS shelf (TYPE quiver)")
    assert connection.execute("SELECT shelf.shout('a')").fetchone() == ("A",)
    assert "shout: 1 rows" not in capfd.readouterr().err


def test_schema_by_schema_discovery_lists_aggregates_too(extension: Path) -> None:
    # A worker without catalog_contents is asked for each schema's functions by type: scalar,
    # table, and aggregate (which vgi-scikit-bio's 32 aggregates are listed under).
    connection = connect(extension, threads="1")
    connection.execute(f"ATTACH '{WORKER} --per-schema' AS shelf (TYPE quiver)")
    listed = connection.execute(
        "SELECT function_name, schema_name FROM duckdb_functions() WHERE database_name = 'shelf' ORDER BY 1"
    ).fetchall()
    assert listed == [("later", "numbers"), ("shout", "text"), ("tally", "numbers"), ("three", "numbers")]
    assert connection.execute("SELECT shelf.shout('x')").fetchone() == ("X",)
