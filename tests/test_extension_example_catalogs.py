"""The three example workers (Rust quiver-allinone, Python quiver.vgi.allinone, Java AllInOne)
declare the same catalog through their SDKs' declarations: the catalog's comment and tags, the
`main` schema's, each function's comment, tags, categories and example queries. DuckDB shows them
in duckdb_databases(), duckdb_schemas() and duckdb_functions(), and every example query runs as
written against every worker attached as `allinone`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, connect

JAVA = ROOT / "java" / "bin" / "quiver-allinone-java"


def locations(allinone: Path) -> dict[str, str]:
    if not (ROOT / "java" / "target" / "quiver-java-0.1.0.jar").is_file():
        pytest.fail("the Java worker is not built; run java/build.sh or ./quiver test")
    return {"rust": str(allinone), "python": f"{sys.executable} -m quiver.vgi.allinone", "java": str(JAVA)}


def declared(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    database = con.execute("SELECT comment, tags FROM duckdb_databases() WHERE database_name = 'allinone'").fetchone()
    schemas = con.execute(
        "SELECT schema_name, comment, tags FROM duckdb_schemas() WHERE database_name = 'allinone' AND NOT internal"
    ).fetchall()
    functions = con.execute(
        "SELECT function_name, comment, tags, categories, examples FROM duckdb_functions() "
        "WHERE database_name = 'allinone' ORDER BY function_name"
    ).fetchall()
    return {"database": database, "schemas": schemas, "functions": functions}


@pytest.fixture(scope="module")
def seen(extension: Path, allinone: Path) -> dict[str, dict[str, object]]:
    out = {}
    for sdk, location in locations(allinone).items():
        con = connect(extension, threads="2")
        con.execute(f"ATTACH '{location}' AS allinone (TYPE quiver)")
        out[sdk] = declared(con)
        examples = [sql for row in out[sdk]["functions"] for sql in row[4]]
        out[sdk]["answers"] = [con.execute(sql).fetchall() for sql in examples]
        con.close()
    return out


def test_the_rust_worker_declares_its_catalog(seen: dict[str, dict[str, object]]) -> None:
    rust = seen["rust"]
    comment, tags = rust["database"]
    assert comment.startswith("quiver's example VGI worker")
    assert tags["vgi.title"] == "quiver all-in-one example"
    assert rust["schemas"] == [
        (
            "main",
            "The example functions",
            {"vgi.title": "Examples", "vgi.categories": '["generators", "tables", "text"]'},
        )
    ]
    assert rust["functions"] == [
        (
            "echo",
            "Returns its input table unchanged",
            {"vgi.category": "tables"},
            ["tables"],
            ["SELECT * FROM allinone.echo((SELECT 42 AS answer))"],
        ),
        (
            "numbers",
            "The integers 0..n-1, generated in parallel",
            {"vgi.category": "generators"},
            ["generators"],
            ["SELECT sum(n) FROM allinone.numbers(1000)"],
        ),
        (
            "upper_case",
            "Upper-cases text with Unicode full case mapping",
            {"vgi.category": "text"},
            ["text"],
            ["SELECT allinone.upper_case('straße')"],
        ),
    ]
    assert rust["answers"] == [[(42,)], [(499500,)], [("STRASSE",)]]


@pytest.mark.parametrize("sdk", ["python", "java"])
def test_every_sdk_declares_the_same_catalog(seen: dict[str, dict[str, object]], sdk: str) -> None:
    assert seen[sdk] == seen["rust"]
