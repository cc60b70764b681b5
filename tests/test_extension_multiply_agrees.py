"""The example workers' `multiply(value, factor)` means what DuckDB's own `value * factor` means on
BIGINT in every SDK: the same products, NULL when either side is NULL, and an error on overflow
(DuckDB's `*` raises "Overflow in multiplication"). The Rust, Python and Java workers are attached
side by side and asked the same values, checked against DuckDB's `*` in the same query.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from extension_support import attach_example_workers

BIGINT_MAX = (1 << 63) - 1
BIGINT_MIN = -(1 << 63)
# (value, factor) pairs that stay in range, NULLs on either side and both.
PAIRS = [
    (0, 2),
    (21, 2),
    (-21, 2),
    (BIGINT_MAX // 2, 2),
    (BIGINT_MIN // 2, 2),
    (BIGINT_MAX, 1),
    (BIGINT_MIN, 1),
    (BIGINT_MAX, -1),
    (-1, 0),
    (3037000499, 3037000499),  # the largest square below 2^63
    (None, 2),
    (7, None),
    (None, None),
]
SDKS = ["r", "p", "j"]


@pytest.fixture(scope="module")
def con(extension: Path, allinone: Path) -> duckdb.DuckDBPyConnection:
    connection = attach_example_workers(extension, allinone)
    connection.execute("CREATE TABLE pairs (value BIGINT, factor BIGINT)")
    connection.executemany("INSERT INTO pairs VALUES (?, ?)", PAIRS)
    yield connection
    connection.close()


def test_every_sdk_multiplies_as_duckdb_does(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT value, factor, value * factor, r.multiply(value, factor), p.multiply(value, factor), "
        "j.multiply(value, factor) FROM pairs"
    ).fetchall()
    assert len(rows) == len(PAIRS)
    for value, factor, duck, rust, python, java in rows:
        expected = None if value is None or factor is None else value * factor
        assert duck == expected, (value, factor)
        assert (rust, python, java) == (duck, duck, duck), (value, factor)


@pytest.mark.parametrize("sdk", SDKS)
def test_many_batches_agree_with_n_times_2(con: duckdb.DuckDBPyConnection, sdk: str) -> None:
    # Enough rows for several DataChunks on both threads, every seventh one NULL.
    query = (
        "SELECT count(*), count(m), sum(m), bool_and(m IS NOT DISTINCT FROM n * 2) FROM ("
        f"SELECT n, {sdk}.multiply(n, 2) AS m FROM (SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i - 50000 END AS n "
        "FROM range(100000) t(i)))"
    )
    rows, valid, total, agree = con.execute(query).fetchone()
    expected = con.execute("SELECT sum((i - 50000) * 2) FROM range(100000) t(i) WHERE i % 7 <> 0").fetchone()[0]
    assert (rows, valid, total, agree) == (100000, 100000 - 14286, expected, True)


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("value", "factor"), [(BIGINT_MAX, 2), (BIGINT_MIN, -1), (-(1 << 32), 1 << 32)])
def test_overflow_is_an_error_as_in_duckdb(con: duckdb.DuckDBPyConnection, sdk: str, value: int, factor: int) -> None:
    with pytest.raises(duckdb.OutOfRangeException, match="Overflow in multiplication"):
        con.execute("SELECT ?::BIGINT * ?::BIGINT", [value, factor]).fetchall()
    with pytest.raises(duckdb.InvalidInputException, match=rf"multiply\(\): BIGINT overflow \({value} \* {factor}\)"):
        con.execute(
            f"SELECT {sdk}.multiply(v, f) FROM (VALUES (1, 2), (?::BIGINT, ?::BIGINT)) t(v, f)", [value, factor]
        ).fetchall()
    # The connection goes on, and so does the worker.
    assert con.execute(f"SELECT {sdk}.multiply(21, 2)").fetchone() == (42,)


def test_an_overflow_under_a_null_is_no_error(con: duckdb.DuckDBPyConnection) -> None:
    # The factor is NULL, so the row is NULL whatever the value: DuckDB's * says so too.
    sql = "SELECT {}(v, f) FROM (VALUES (9223372036854775807::BIGINT, NULL::BIGINT), (3, 2)) t(v, f)"
    duck = con.execute(
        "SELECT v * f FROM (VALUES (9223372036854775807::BIGINT, NULL::BIGINT), (3, 2)) t(v, f)"
    ).fetchall()
    assert duck == [(None,), (6,)]
    for sdk in SDKS:
        assert con.execute(sql.format(f"{sdk}.multiply")).fetchall() == duck, sdk


def test_every_sdk_documents_it_alike(con: duckdb.DuckDBPyConnection) -> None:
    described = con.execute(
        "SELECT DISTINCT description, parameters, parameter_types, return_type FROM duckdb_functions() "
        "WHERE function_name = 'multiply' AND database_name IN ('r', 'p', 'j')"
    ).fetchall()
    assert described == [
        (
            "Multiplies two BIGINTs; NULL when either is NULL; an error on overflow, as DuckDB's own * on BIGINT.",
            ["value", "factor"],
            ["BIGINT", "BIGINT"],
            "BIGINT",
        )
    ]
