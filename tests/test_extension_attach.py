"""ATTACH '<location>' AS w (TYPE quiver): the three ways to reach a worker, its functions in the
catalog (and in duckdb_functions()), DETACH shutting it down, and attach errors that name the worker.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, zombies

SUM_1000 = 499_500


def functions(con: duckdb.DuckDBPyConnection, database: str = "w") -> dict[str, tuple]:
    rows = con.execute(
        "SELECT function_name, function_type, parameters, parameter_types, return_type, schema_name "
        "FROM duckdb_functions() WHERE database_name = ? ORDER BY function_name",
        [database],
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_stdio_worker_functions_are_listed_and_callable(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver)")
    assert functions(con) == {
        "avg_double": ("aggregate", ["x"], ["DOUBLE"], "DOUBLE", "main"),
        "concat_agg": ("aggregate", ["s", "sep"], ["VARCHAR", "VARCHAR"], "VARCHAR", "main"),
        "echo": ("table", ["data"], ["TABLE"], None, "main"),
        "multiply": ("scalar", ["value", "factor"], ["BIGINT", "BIGINT"], "BIGINT", "main"),
        "numbers": ("table", ["n", "batch_rows"], ["BIGINT", "BIGINT"], None, "main"),
        "row_count": ("table", ["data"], ["TABLE"], None, "main"),
        "split_numbers": ("table", ["n", "splits"], ["BIGINT", "BIGINT"], None, "main"),
        "sum_int": ("aggregate", ["x"], ["BIGINT"], "BIGINT", "main"),
        "upper_case": ("scalar", ["s"], ["VARCHAR"], "VARCHAR", "main"),
    }
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
    assert con.execute("SELECT sum(n) FROM w.main.numbers(1000)").fetchone() == (SUM_1000,)
    description = con.execute(
        "SELECT description FROM duckdb_functions() WHERE database_name = 'w' AND function_name = 'numbers'"
    ).fetchone()[0]
    assert "0..n-1" in description
    con.execute("DETACH w")
    assert not children(), "DETACH ends the stdio worker processes"


def test_launch_starts_one_shared_worker_and_detach_ends_it(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    con.execute(f"ATTACH 'launch:{allinone}' AS w (TYPE quiver)")
    launched = children()
    assert len(launched) == 1
    for _ in range(3):
        assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
    assert con.execute("SELECT w.upper_case('x')").fetchone() == ("X",)
    assert [pid for pid, _ in children()] == [launched[0][0]], "every call reached the same process"
    con.execute("DETACH w")
    assert not children() and not zombies()
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM w.numbers(1)")


def test_unix_socket_worker_run_by_someone_else(extension: Path, allinone: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="quiver-ext-") as directory:
        socket = Path(directory) / "w.sock"
        worker = subprocess.Popen(
            [str(allinone), "--unix", str(socket), "--idle-timeout", "30"],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert worker.stdout.readline().strip() == f"UNIX:{socket}"
            con = connect(extension)
            con.execute(f"ATTACH 'unix://{socket}' AS w (TYPE quiver)")
            assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
            con.execute("DETACH w")
            assert worker.poll() is None, "DETACH leaves a worker we did not start running"
        finally:
            worker.kill()
            worker.wait()


def test_attach_errors_name_the_worker(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    with pytest.raises(duckdb.Error, match=r"worker 'w' \(nonexistent-worker\).*cannot start"):
        con.execute("ATTACH '/nonexistent/nonexistent-worker' AS w (TYPE quiver)")
    with pytest.raises(duckdb.Error, match=r"(?s)worker 'w' \(sh\).*status 3.*bad config"):
        con.execute("ATTACH 'launch:sh -c \"echo bad config >&2; exit 3\"' AS w (TYPE quiver)")
    with pytest.raises(duckdb.Error, match="cannot connect"):
        con.execute("ATTACH 'unix:///nonexistent/w.sock' AS w (TYPE quiver)")
    with pytest.raises(duckdb.Error, match="unknown ATTACH option 'colour'"):
        con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver, COLOUR 'blue')")
    assert not children() and not zombies()
    # Still usable, and the same name attaches fine now.
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver, CATALOG 'allinone')")
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)


def test_two_attachments_and_bind_errors(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    con.execute(f"ATTACH '{allinone}' AS a (TYPE quiver)")
    con.execute(f"ATTACH 'launch:{allinone}' AS b (TYPE quiver)")
    assert con.execute("SELECT (SELECT sum(n) FROM a.numbers(10)), (SELECT sum(n) FROM b.numbers(100))").fetchone() == (
        45,
        4950,
    )
    with pytest.raises(duckdb.BinderException, match=r"bind of numbers\(\)"):
        con.execute("SELECT * FROM a.numbers(-1)")
    with pytest.raises(duckdb.Error, match="batch_rows"):
        con.execute("SELECT * FROM a.numbers(10, batch_rows := 0)")
    assert con.execute("SELECT sum(n) FROM a.numbers(10, batch_rows := 3)").fetchone() == (45,)
    con.close()
    deadline = time.monotonic() + 10
    while children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not children(), "closing the database ends every worker"
    assert not zombies()


def test_functions_survive_a_second_connection(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver)")
    other = con.cursor()
    assert other.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
