"""Workers that misbehave inside a call, attached from DuckDB (tests/misbehaving_worker.py, on
quiver's Python SDK): every fault is a typed DuckDB error carrying the
worker's words, and the same connection goes on. Also: what a foreign worker sends that the
reference engine accepts (a null under a field declared non-nullable), and where a worker's stderr
goes. A function of a kind the engine cannot call is tested in tests/test_extension_catalog.py.

Which error type: the worker's own exception is an error about the call's input, as a built-in
function's would be: InvalidInputException. A worker that breaks the protocol (a column of the wrong
type, a wrong row count) or dies is an external resource failing: IOException. Neither invalidates
the connection (an InternalException would).
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, connect, zombies

WORKER = f"{sys.executable} {ROOT / 'tests' / 'misbehaving_worker.py'}"

FAULTS = [
    # (query, exception, words the message must carry)
    ("SELECT w.boom('x')", duckdb.InvalidInputException, "ValueError: boom() failed on purpose"),
    ("SELECT w.wrong_type('x')", duckdb.IOException, "answered column 'result' as Int64 where its bind declared Utf8"),
    ("SELECT w.wrong_rows(s) FROM (VALUES ('a'), ('b')) t(s)", duckdb.IOException, "answered 1 rows for 2 input rows"),
    ("SELECT w.die('x')", duckdb.IOException, "killed by signal 9 (SIGKILL)"),
    ("SELECT * FROM w.t_boom()", duckdb.InvalidInputException, "ValueError: t_boom() failed on purpose"),
    ("SELECT * FROM w.t_wrong_type()", duckdb.IOException, "answered column 'n' as Utf8 where its bind declared Int64"),
    ("SELECT * FROM w.t_die()", duckdb.IOException, "killed by signal 9 (SIGKILL)"),
    ("SELECT * FROM w.io_boom((SELECT 1))", duckdb.InvalidInputException, "ValueError: io_boom() failed on purpose"),
    (
        "SELECT * FROM w.io_wrong_type((SELECT 1))",
        duckdb.IOException,
        "answered column 'n' as Utf8 where its bind declared Int64",
    ),
    ("SELECT * FROM w.io_die((SELECT 1))", duckdb.IOException, "killed by signal 9 (SIGKILL)"),
    ("SELECT * FROM w.b_boom((SELECT 1))", duckdb.InvalidInputException, "ValueError: b_boom() failed on purpose"),
    (
        "SELECT * FROM w.b_wrong_type((SELECT * FROM range(3)))",
        duckdb.IOException,
        "answered column 'n' as Utf8 where its bind declared Int64",
    ),
    ("SELECT * FROM w.b_die((SELECT 1))", duckdb.IOException, "killed by signal 9 (SIGKILL)"),
]


@pytest.fixture()
def con(extension: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    monkeypatch.delenv("QUIVER_WORKER_STDERR", raising=False)
    connection = connect(extension, threads="2")
    connection.execute(f"ATTACH '{WORKER}' AS w (TYPE quiver)")
    yield connection
    connection.close()


@pytest.mark.parametrize(("query", "error", "words"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_is_a_typed_error_and_the_connection_goes_on(
    con: duckdb.DuckDBPyConnection, query: str, error: type, words: str
) -> None:
    with pytest.raises(error) as failure:
        con.execute(query).fetchall()
    assert not isinstance(failure.value, duckdb.InternalException)
    assert words in str(failure.value), str(failure.value)
    assert con.execute("SELECT w.ok('still here')").fetchone() == ("still here",)
    assert con.execute("SELECT sum(n) FROM w.t_ok()").fetchone() == (6,)
    assert con.execute("SELECT sum(n) FROM w.io_ok((SELECT * FROM range(4)))").fetchone() == (6,)
    assert con.execute("SELECT n FROM w.b_ok((SELECT * FROM range(4)))").fetchall() == [(4,)]
    assert not zombies()


def test_a_raising_scalar_is_fallible_under_try(con: duckdb.DuckDBPyConnection) -> None:
    # TRY() only swallows errors of functions DuckDB knows can fail.
    assert con.execute("SELECT TRY(w.boom('x'))").fetchone() == (None,)


def test_a_null_under_a_non_nullable_header_field_is_accepted(extension: Path) -> None:
    # vgi-java 0.26 answers every init with opaque_data null where its schema says non-nullable.
    connection = connect(extension)
    connection.execute(f"ATTACH '{WORKER} --null-opaque-data' AS w (TYPE quiver)")
    assert connection.execute("SELECT w.ok('a')").fetchone() == ("a",)
    assert connection.execute("SELECT sum(n) FROM w.t_ok()").fetchone() == (6,)
    assert connection.execute("SELECT sum(n) FROM w.io_ok((SELECT * FROM range(4)))").fetchone() == (6,)


def test_worker_stderr_reaches_ours_line_by_line_named(
    con: duckdb.DuckDBPyConnection, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(duckdb.IOException) as failure:
        con.execute("SELECT * FROM w.t_die()").fetchall()
    # The error's tail waited for the worker's stderr to close, and lines are forwarded before it
    # closes: everything the worker wrote is already on ours.
    assert "misbehaving worker: about to be killed" in str(failure.value)
    assert "[w] misbehaving worker: about to be killed\n" in capfd.readouterr().err


def test_worker_stderr_forwarding_can_be_switched_off(
    extension: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIVER_WORKER_STDERR", "0")
    connection = connect(extension, threads="1")
    connection.execute(f"ATTACH '{WORKER}' AS w (TYPE quiver)")
    with pytest.raises(duckdb.IOException) as failure:
        connection.execute("SELECT * FROM w.t_die()").fetchall()
    assert "misbehaving worker: about to be killed" in str(failure.value)
    assert "about to be killed" not in capfd.readouterr().err
