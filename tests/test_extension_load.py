"""quiver's DuckDB extension loads into the PyPI duckdb==2.0.0 wheel and works end to end.

The extension is built (incrementally) by extension/build.sh into
target/extension/quiver.duckdb_extension; set QUIVER_EXTENSION to test a prebuilt file instead. The
bench flavour (QUIVER_BENCH_FUNCTIONS=1, target/extension/bench/; QUIVER_BENCH_EXTENSION for a
prebuilt one) adds quiver_numbers(n), the benchmark's in-process ceiling, which the product lacks.
Checks that must not be polluted by this process's own loads run in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_SOURCE_ID = "d54cbbe3df"
SOURCE_ID_SYMBOL = "_ZN6duckdb6DuckDB8SourceIDEv"


@pytest.fixture()
def con(extension: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    connection.execute(f"LOAD '{extension}'")
    return connection


def run_python(python: str | Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_host_is_the_pinned_duckdb() -> None:
    version, source_id, _ = duckdb.connect().execute("PRAGMA version").fetchone()
    assert (version, source_id) == ("v2.0.0", EXPECTED_SOURCE_ID)


def test_footer_declares_cpp_abi_for_v2_0_0(extension: Path) -> None:
    data = extension.read_bytes()
    footer = data[-534:]
    assert footer[:22] == b"\x00\x93\x04\x10duckdb_signature\x80\x04"
    fields = [footer[22 + 32 * i : 22 + 32 * (i + 1)].rstrip(b"\x00").decode() for i in range(8)]
    assert fields[::-1][:5] == ["4", "linux_amd64", "v2.0.0", "v0.1.0", "CPP"]
    assert footer[-256:] == bytes(256)


def test_version_comes_from_the_rust_core(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]


def test_the_product_does_not_ship_the_bench_function(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.CatalogException, match="quiver_numbers does not exist"):
        con.execute("SELECT * FROM quiver_numbers(3)")
    with pytest.raises(duckdb.CatalogException, match="quiver_arrow_drain does not exist"):
        con.execute("SELECT * FROM quiver_arrow_drain('SELECT 1', 10)")


def test_bench_flavour_drains_a_query_through_the_server_path(bench_extension: Path) -> None:
    # The rows and batches the server's own cursor produced; a failing query is DuckDB's error, and
    # the next drain runs (session and cursor released).
    result = run_python(
        sys.executable,
        f"""
        import duckdb
        con = duckdb.connect(config={{"allow_unsigned_extensions": "true"}})
        con.execute("LOAD '{bench_extension}'")
        con.execute("CREATE TABLE t AS SELECT range AS id FROM range(300000)")
        rows, batches = con.execute("SELECT * FROM quiver_arrow_drain('SELECT id FROM t', 1000)").fetchall()[0]
        assert rows == 300_000 and batches >= 300, (rows, batches)
        assert con.execute("SELECT * FROM quiver_arrow_drain('SELECT id FROM t WHERE id < 0', 1000)").fetchall() == [
            (0, 0)
        ]
        try:
            con.execute("SELECT * FROM quiver_arrow_drain('SELECT * FROM missing', 1000)").fetchall()
        except duckdb.InvalidInputException as error:
            assert "missing" in str(error) and "Catalog" in str(error), error
        else:
            raise AssertionError("a query of a missing table drained")
        assert con.execute("SELECT rows FROM quiver_arrow_drain('SELECT id FROM t', 131072)").fetchall() == [(300_000,)]
        for bad, why in (("0", "batch_rows must be in"), ("NULL", "must not be NULL")):
            try:
                con.execute(f"SELECT * FROM quiver_arrow_drain('SELECT 1', {{bad}})")
            except duckdb.BinderException as error:
                assert why in str(error), error
            else:
                raise AssertionError(bad)
        print("ok")
        """,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_bench_flavour_numbers_are_the_arithmetic_series(bench_extension: Path) -> None:
    # A fresh interpreter: this one has loaded the product, and DuckDB loads an extension once.
    result = run_python(
        sys.executable,
        f"""
        import duckdb
        con = duckdb.connect(config={{"allow_unsigned_extensions": "true"}})
        con.execute("LOAD '{bench_extension}'")
        n = 10_000_000
        row = con.execute(f"SELECT sum(n), count(*), min(n), max(n) FROM quiver_numbers({{n}})").fetchone()
        assert row == (n * (n - 1) // 2, n, 0, n - 1), row
        assert con.execute("DESCRIBE SELECT * FROM quiver_numbers(3)").fetchall()[0][:2] == ("n", "BIGINT")
        rows = con.execute("SELECT * FROM quiver_numbers(300000)").fetchall()
        assert [v for (v,) in rows] == list(range(300_000))  # many batches, in order
        assert con.execute("SELECT count(*) FROM quiver_numbers(0)").fetchone() == (0,)
        for bad, why in (("-1", "n must be >= 0"), ("NULL", "must not be NULL")):
            try:
                con.execute(f"SELECT * FROM quiver_numbers({{bad}})")
            except duckdb.BinderException as error:
                assert why in str(error), error
            else:
                raise AssertionError(bad)
        print("ok")
        """,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_loads_into_many_databases_and_through_install(extension: Path, tmp_path: Path) -> None:
    for _ in range(3):
        connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
        connection.execute(f"LOAD '{extension}'")
        assert connection.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]
    installed = duckdb.connect(
        config={"allow_unsigned_extensions": "true", "extension_directory": str(tmp_path / "extensions")}
    )
    installed.execute(f"INSTALL '{extension}'")
    installed.execute("LOAD quiver")
    assert installed.execute("SELECT * FROM quiver_version()").fetchone() == ("0.1.0",)


def test_plain_load_makes_nothing_global(extension: Path) -> None:
    """The host stays RTLD_LOCAL: the extension binds to it by name, DuckDB's symbols stay private."""
    result = run_python(
        sys.executable,
        f"""
        import ctypes, duckdb
        c = duckdb.connect(config={{"allow_unsigned_extensions": "true"}})
        c.execute("LOAD '{extension}'")
        assert c.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]
        print(hasattr(ctypes.CDLL(None), "{SOURCE_ID_SYMBOL}"))
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_host_path_too_long_for_the_placeholder_falls_back_to_rtld_global(extension: Path) -> None:
    """A host library path of 4000+ bytes does not fit the DT_NEEDED placeholder: the host is promoted."""
    site = str(Path(duckdb.__file__).parent.parent)
    long_site = site + "/." * ((4030 - len(site)) // 2)  # the same directory, spelled in 4000+ bytes
    result = run_python(
        sys.executable,
        f"""
        import ctypes, os, sys
        sys.path.insert(0, os.environ["LONG_SITE"])
        import duckdb, _duckdb
        assert len(_duckdb.__file__) > 4000, len(_duckdb.__file__)
        c = duckdb.connect(config={{"allow_unsigned_extensions": "true"}})
        c.execute("LOAD '{extension}'")
        assert c.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]
        print(hasattr(ctypes.CDLL(None), "{SOURCE_ID_SYMBOL}"))
        """,
        LONG_SITE=long_site,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "True"


@pytest.fixture(scope="session")
def haybarn_python() -> Path:
    """The haybarn host's venv, built by tools/setup.sh from tools/requirements-haybarn.txt."""
    python = Path(os.environ.get("QUIVER_HAYBARN_PYTHON", ROOT / ".venv-haybarn" / "bin" / "python"))
    if not python.exists():
        pytest.fail(f"no haybarn venv at {python}; run ./quiver setup")
    return python


def test_mismatched_host_is_refused_cleanly(extension: Path, haybarn_python: Path) -> None:
    result = run_python(
        haybarn_python,
        f"""
        import haybarn
        c = haybarn.connect(config={{"allow_unsigned_extensions": "true"}})
        assert c.execute("PRAGMA version").fetchone()[:2] == ("v2.0.0", "2dc3a8066b")
        try:
            c.execute("LOAD '{extension}'")
        except haybarn.Error as error:
            print(error)
        else:
            raise SystemExit("LOAD into haybarn succeeded")
        assert c.execute("SELECT 42").fetchone() == (42,)  # the host is unharmed
        """,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "needs DuckDB v2.0.0 with source id d54cbbe3df" in result.stdout
    assert "source id 2dc3a8066b" in result.stdout


def test_other_duckdb_builds_in_the_process_are_unaffected(extension: Path, haybarn_python: Path) -> None:
    """Loading quiver into duckdb, then importing haybarn (same symbol names), must not break haybarn."""
    site = Path(duckdb.__file__).parent.parent
    result = run_python(
        haybarn_python,
        f"""
        import sys
        sys.path.append({str(site)!r})
        import duckdb
        c = duckdb.connect(config={{"allow_unsigned_extensions": "true"}})
        c.execute("LOAD '{extension}'")
        assert c.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]
        import haybarn
        h = haybarn.connect()
        assert h.execute("SELECT sum(range) FROM range(1000)").fetchone() == (499500,)
        assert c.execute("SELECT * FROM quiver_version()").fetchall() == [("0.1.0",)]
        print("ok")
        """,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok"
