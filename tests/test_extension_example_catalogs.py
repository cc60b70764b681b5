"""The three example workers (Rust quiver-allinone, Python quiver.vgi.allinone, Java AllInOne)
declare the same catalog through their SDKs' declarations: the catalog's comment and tags, the
`main` schema's, each function's comment, tags, categories and example queries. DuckDB shows them
in duckdb_databases(), duckdb_schemas() and duckdb_functions(), and every example query runs as
written against every worker attached as `allinone`.
"""

from __future__ import annotations

import json
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


EXPECTED_FUNCTIONS = {
    # name: (comment, category, example query, what it shows, its answer)
    "avg_double": (
        "Averages the non-NULL doubles of a group",
        "aggregates",
        "SELECT allinone.main.avg_double(x::DOUBLE) FROM range(5) t(x)",
        "The mean of 0..4: 2.0",
        [(2.0,)],
    ),
    "concat_agg": (
        "Joins the strings of a group with a separator, in the order given",
        "aggregates",
        "SELECT allinone.main.concat_agg(s, '-' ORDER BY s) FROM (VALUES ('b'), ('a'), ('c')) t(s)",
        "The strings in order, joined by '-': a-b-c",
        [("a-b-c",)],
    ),
    "echo": (
        "Returns its input table unchanged",
        "tables",
        "SELECT count(*) FROM allinone.main.echo((SELECT * FROM range(10)))",
        "Ten rows passed through: 10",
        [(10,)],
    ),
    "multiply": (
        "Multiplies two integers, as DuckDB's * does",
        "math",
        "SELECT allinone.main.multiply(21, 2)",
        "21 times 2: 42",
        [(42,)],
    ),
    "numbers": (
        "The integers 0..n-1, generated in parallel",
        "generators",
        "SELECT sum(n) FROM allinone.main.numbers(1000)",
        "The sum of 0..999: 499500",
        [(499500,)],
    ),
    "row_count": (
        "Counts the rows of its whole input table",
        "tables",
        "SELECT * FROM allinone.main.row_count((SELECT * FROM range(10)))",
        "Ten rows counted at once: 10",
        [(10,)],
    ),
    "split_numbers": (
        "The integers 0..n-1, planned into splits that run in parallel",
        "generators",
        "SELECT sum(n) FROM allinone.main.split_numbers(1000, splits := 8)",
        "The sum of 0..999: 499500",
        [(499500,)],
    ),
    "sum_int": (
        "Adds up the non-NULL integers of a group",
        "aggregates",
        "SELECT allinone.main.sum_int(x) FROM range(5) t(x)",
        "The sum of 0..4: 10",
        [(10,)],
    ),
    "upper_case": (
        "Upper-cases text with Unicode full case mapping",
        "text",
        "SELECT allinone.main.upper_case('straße')",
        "STRASSE: full case mapping turns ß into SS",
        [("STRASSE",)],
    ),
}


def test_the_rust_worker_declares_its_catalog(seen: dict[str, dict[str, object]]) -> None:
    rust = seen["rust"]
    comment, tags = rust["database"]
    assert comment.startswith("quiver's example VGI worker")
    assert tags["vgi.title"] == "quiver all-in-one example"
    [(schema, schema_comment, schema_tags)] = rust["schemas"]
    assert (schema, schema_comment, schema_tags["vgi.title"]) == ("main", "The example functions", "Examples")
    registry = [c["name"] for c in json.loads(schema_tags["vgi.categories"])]
    assert registry == ["aggregates", "generators", "math", "tables", "text"]
    assert [f[0] for f in rust["functions"]] == sorted(EXPECTED_FUNCTIONS)
    for name, comment, tags, categories, examples in rust["functions"]:
        said, category, sql, shows, _ = EXPECTED_FUNCTIONS[name]
        assert (comment, tags["vgi.category"], categories, examples) == (said, category, [category], [sql])
        # The engine carries what each example shows in the vgi.example_queries tag.
        assert json.loads(tags["vgi.example_queries"]) == [{"sql": sql, "description": shows}]
    assert rust["answers"] == [EXPECTED_FUNCTIONS[name][4] for name in sorted(EXPECTED_FUNCTIONS)]


@pytest.mark.parametrize("sdk", ["python", "java"])
def test_every_sdk_declares_the_same_catalog(seen: dict[str, dict[str, object]], sdk: str) -> None:
    assert seen[sdk] == seen["rust"]
