"""The example workers' `upper_case` means one thing in every SDK: Unicode full case mapping (as
Python's str.upper, Rust's to_uppercase, Java's toUpperCase(Locale.ROOT)), NULL kept. The Rust,
Python and Java workers are attached side by side and asked the same tricky strings.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from extension_support import attach_example_workers

TRICKY = [
    "straße",  # ß -> SS (one code point to two)
    "ﬁne ﬂow",  # ligatures -> FI, FL
    "ǆemal",  # a digraph with a title-case form -> Ǆ
    "ŉ",  # -> ʼN
    "ΐ",  # Greek with two diacritics -> three code points
    "istanbul İ ı",  # no Turkish rules: i -> I, ı -> I, İ stays
    "ünïcödé ☃ 😀",  # accents, symbols and a non-BMP character
    "mixed ASCII and ß",
    "",
    "plain ascii 123",
]


@pytest.fixture()
def con(extension: Path, allinone: Path) -> duckdb.DuckDBPyConnection:
    connection = attach_example_workers(extension, allinone)
    connection.execute(
        "CREATE TABLE words AS SELECT * FROM (VALUES " + ", ".join(["(?)"] * (len(TRICKY) + 1)) + ") t(s)",
        [*TRICKY, None],
    )
    yield connection
    connection.close()


def test_every_sdk_upper_cases_alike(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT s, r.upper_case(s), p.upper_case(s), j.upper_case(s) FROM words").fetchall()
    assert len(rows) == len(TRICKY) + 1
    for text, rust, python, java in rows:
        expected = None if text is None else text.upper()
        assert (rust, python, java) == (expected, expected, expected), text
    assert dict((r[0], r[1]) for r in rows)["straße"] == "STRASSE"


def test_every_sdk_documents_it_alike(con: duckdb.DuckDBPyConnection) -> None:
    described = con.execute(
        "SELECT DISTINCT description FROM duckdb_functions() "
        "WHERE function_name = 'upper_case' AND database_name IN ('r', 'p', 'j')"
    ).fetchall()
    assert described == [("Converts a string to upper case (Unicode full case mapping); NULL stays NULL.",)]
