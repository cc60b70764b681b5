"""The DB-API 2.0 surface of ``quiver.client`` against a running server (see server_client_support.py)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

import quiver
from quiver import client as dbapi
from quiver import server_protocol as sp

from .server_client_support import RunningServer, start_server

TOKEN = "test-token-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(tmp_path_factory.mktemp("server"), unix=True, tcp=True, token=TOKEN)
    yield running
    running.stop()


@pytest.fixture
def conn(server: RunningServer) -> Iterator[dbapi.Connection]:
    connection = quiver.connect(server.unix)
    yield connection
    connection.close()


def fresh_table(conn: dbapi.Connection, columns: str = "id INTEGER, name VARCHAR") -> str:
    name = "t_" + secrets.token_hex(6)
    conn.execute(f"CREATE TABLE {name} ({columns})")
    conn.commit()
    return name


def test_module_globals_and_exception_hierarchy() -> None:
    assert (dbapi.apilevel, dbapi.threadsafety, dbapi.paramstyle) == ("2.0", 1, "qmark")
    for klass in (
        dbapi.DataError,
        dbapi.OperationalError,
        dbapi.IntegrityError,
        dbapi.InternalError,
        dbapi.ProgrammingError,
        dbapi.NotSupportedError,
    ):
        assert issubclass(klass, dbapi.DatabaseError)
    assert issubclass(dbapi.DatabaseError, dbapi.Error) and issubclass(dbapi.InterfaceError, dbapi.Error)
    assert not issubclass(dbapi.Warning, dbapi.Error)


def test_connect_dispatches_on_the_scheme_and_opens_a_session(conn: dbapi.Connection) -> None:
    assert isinstance(conn, dbapi.Connection)
    assert sp.is_session_id(conn.session.session_id)
    assert conn.session.duckdb_version.startswith("v")
    assert conn.uses_shm, "shared memory is on by default over a Unix socket"
    with pytest.raises(dbapi.ProgrammingError, match="scheme"):
        dbapi.connect("http://127.0.0.1:1")


def test_execute_with_qmark_parameters_and_fetches(conn: dbapi.Connection) -> None:
    table = fresh_table(conn)
    cursor = conn.cursor()
    cursor.execute(f"INSERT INTO {table} VALUES (?, ?)", (1, "one"))
    assert cursor.rowcount == 1
    cursor.executemany(f"INSERT INTO {table} VALUES (?, ?)", [(i, f"n{i}") for i in range(2, 12)] + [(12, None)])
    assert cursor.rowcount == 11
    cursor.execute(f"SELECT id, name FROM {table} WHERE id >= ? ORDER BY id", [2])
    assert [d[0] for d in cursor.description] == ["id", "name"]
    assert cursor.description[0][1] == dbapi.NUMBER and cursor.description[1][1] == dbapi.STRING
    assert cursor.fetchone() == (2, "n2")
    cursor.arraysize = 3
    assert cursor.fetchmany() == [(3, "n3"), (4, "n4"), (5, "n5")]
    assert cursor.fetchmany(2) == [(6, "n6"), (7, "n7")]
    assert cursor.fetchall() == [(8, "n8"), (9, "n9"), (10, "n10"), (11, "n11"), (12, None)]
    assert cursor.fetchone() is None
    assert list(conn.execute(f"SELECT count(*) FROM {table}")) == [(12,)]


def test_fetch_without_a_result_is_a_programming_error(conn: dbapi.Connection) -> None:
    cursor = conn.cursor()
    with pytest.raises(dbapi.ProgrammingError):
        cursor.fetchone()
    cursor.execute("CREATE TEMP TABLE nothing_here (x INTEGER)")
    assert cursor.description is None
    with pytest.raises(dbapi.ProgrammingError):
        cursor.fetchall()


def test_commit_and_rollback_follow_pep_249(server: RunningServer) -> None:
    writer = quiver.connect(server.unix)
    reader = quiver.connect(server.unix, autocommit=True)
    try:
        table = fresh_table(writer)
        writer.execute(f"INSERT INTO {table} VALUES (1, 'a')")
        assert reader.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), "visible before commit"
        writer.rollback()
        assert writer.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        writer.execute(f"INSERT INTO {table} VALUES (2, 'b')")
        writer.commit()
        assert reader.execute(f"SELECT id FROM {table}").fetchall() == [(2,)]
        reader.execute(f"INSERT INTO {table} VALUES (3, 'c')")  # autocommit: visible at once
        assert writer.execute(f"SELECT count(*) FROM {table}").fetchone() == (2,)
    finally:
        writer.close()
        reader.close()


def test_context_manager_commits_on_success_and_rolls_back_on_error(server: RunningServer) -> None:
    with quiver.connect(server.unix) as conn:
        table = fresh_table(conn)
        conn.execute(f"INSERT INTO {table} VALUES (1, 'kept')")
    assert conn.closed
    with pytest.raises(RuntimeError), quiver.connect(server.unix) as conn:
        conn.execute(f"INSERT INTO {table} VALUES (2, 'dropped')")
        raise RuntimeError("leave the block")
    with quiver.connect(server.unix) as conn:
        assert conn.execute(f"SELECT name FROM {table}").fetchall() == [("kept",)]


@pytest.mark.parametrize(
    ("sql", "klass", "error_type", "words"),
    [
        ("SELEC 1", dbapi.ProgrammingError, "ParserException", "syntax error"),
        ("SELECT * FROM no_such_table", dbapi.ProgrammingError, "CatalogException", "no_such_table"),
        ("SELECT no_such_column FROM range(1)", dbapi.ProgrammingError, "BinderException", "no_such_column"),
        ("SELECT 'abc'::INTEGER", dbapi.DataError, "ConversionException", "abc"),
    ],
)
def test_sql_errors_map_to_dbapi_classes_with_duckdbs_message(
    conn: dbapi.Connection, sql: str, klass: type, error_type: str, words: str
) -> None:
    with pytest.raises(klass) as caught:
        conn.execute(sql)
    assert caught.value.error_type == error_type
    assert words in str(caught.value)
    assert not str(caught.value).startswith(error_type), "the message is DuckDB's, without the type"
    conn.rollback()
    assert conn.execute("SELECT 41 + 1").fetchone() == (42,), "the connection lives on"


def test_constraint_violation_is_an_integrity_error(conn: dbapi.Connection) -> None:
    table = fresh_table(conn, "id INTEGER PRIMARY KEY")
    conn.execute(f"INSERT INTO {table} VALUES (1)")
    conn.commit()
    with pytest.raises(dbapi.IntegrityError) as caught:
        conn.execute(f"INSERT INTO {table} VALUES (1)")
        conn.commit()
    assert caught.value.error_type == "ConstraintException"
    conn.rollback()
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)


def test_another_statement_discards_an_unread_result(conn: dbapi.Connection) -> None:
    first = conn.cursor().execute("SELECT * FROM range(1000000)")
    assert first.fetchone() == (0,)
    assert conn.execute("SELECT 7").fetchone() == (7,)
    with pytest.raises(dbapi.InterfaceError, match="another statement"):
        first.fetchall()


def test_named_parameters_are_not_supported(conn: dbapi.Connection) -> None:
    with pytest.raises(dbapi.NotSupportedError, match="qmark"):
        conn.execute("SELECT ?", {"x": 1})


def test_tcp_requires_the_token(server: RunningServer) -> None:
    for token in (None, "wrong-" + TOKEN):
        with pytest.raises(dbapi.OperationalError, match="authentication failed") as caught:
            quiver.connect(server.tcp, token=token)
        assert caught.value.error_type == sp.AUTHENTICATION_ERROR
    with quiver.connect(server.tcp, token=TOKEN) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert not conn.uses_shm, "TCP peers may be on other machines: no shared memory"


def readme_example(readme: Path) -> str:
    text = readme.read_text()
    start = text.index("<!-- server-client-example -->")
    return text[start:].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_as_written(server: RunningServer) -> None:
    python_dir = Path(__file__).resolve().parent.parent
    code = readme_example(python_dir / "README.md")
    assert readme_example(python_dir.parent / "README.md") == code, "the root README shows the same example"
    assert len(code.strip().splitlines()) == 5, code
    assert '"unix:///tmp/quiver.sock"' in code
    namespace: dict[str, object] = {}
    exec(compile(code.replace("unix:///tmp/quiver.sock", server.unix), "README.md", "exec"), namespace)
    with quiver.connect(server.unix) as conn:
        assert conn.execute("SELECT count(*), sum(value) FROM readings").fetchone() == (3, 4.5)
