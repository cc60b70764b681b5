"""The quiver server end to end: statements, queries, prepared statements, inserts, the catalog,
transactions — driven with quiver's Python RPC client against ``python -m quiver.serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from quiver.rpc.client import RpcError
from server_support import (
    COMMIT,
    ServerProcess,
    parameters,
    query_table,
    schema_message,
    wait_until,
)


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    socket = tmp_path_factory.mktemp("server") / "q.sock"
    process = ServerProcess(
        "--listen", "tcp://127.0.0.1:0", "--listen", f"unix://{socket}", env={"QUIVER_EXTENSION": str(extension)}
    )
    yield process
    assert process.stop() == 0


def test_connect_reports_the_session(server: ServerProcess) -> None:
    client = server.raw_client()
    info = client.call("connect", token=server.token, client_name="t")
    assert len(info["session_id"]) == 32 and info["database"] == ":memory:"
    assert info["duckdb_version"].startswith("v2.0")
    client.close()


def test_execute_and_query(server: ServerProcess) -> None:
    client = server.client()
    assert client.call("execute", "CREATE TABLE t1 (a INTEGER, b VARCHAR)") is None
    assert client.call("execute", "INSERT INTO t1 VALUES (1, 'x'), (2, 'y'), (3, NULL)") == 3
    table = query_table(client, "SELECT a, b FROM t1 ORDER BY a")
    assert table.column("a").to_pylist() == [1, 2, 3]
    assert table.column("b").to_pylist() == ["x", "y", None]
    client.close()


def test_zero_row_query_has_its_schema(server: ServerProcess) -> None:
    client = server.client()
    with client.stream("query", "SELECT 1::INTEGER AS one WHERE false") as call:
        assert list(call) == []
    client.close()


def test_query_batches_respect_batch_rows(server: ServerProcess) -> None:
    client = server.client()
    with client.stream("query", "SELECT * FROM range(10000) r(i)", batch_rows=1000) as call:
        sizes = [item.batch.num_rows for item in call]
    assert sum(sizes) == 10000 and max(sizes) <= 1000
    client.close()


def test_parameters(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE p (a BIGINT, b VARCHAR)")
    rows = client.call("execute", "INSERT INTO p VALUES ($1, $2)", parameters(a=[1, 2, 3], b=["u", "v", "w"]))
    assert rows == 3
    table = query_table(client, "SELECT b FROM p WHERE a > $1 ORDER BY a", parameters=parameters(x=[1]))
    assert table.column("b").to_pylist() == ["v", "w"]
    client.close()


def test_prepared_statements(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE pr (a INTEGER)")
    insert = client.call("prepare", "INSERT INTO pr VALUES ($1)")
    assert insert["parameter_count"] == 1 and insert["result_schema"] is None
    assert client.call("execute_prepared", insert["statement_id"], parameters(v=[5, 6])) == 2
    select = client.call("prepare", "SELECT a FROM pr WHERE a >= $1 ORDER BY a")
    assert pa.ipc.read_schema(pa.py_buffer(select["result_schema"])).names == ["a"]
    with client.stream("query_prepared", select["statement_id"], parameters(v=[6])) as call:
        assert [item.batch.column(0).to_pylist() for item in call] == [[6]]
    client.call("close_prepared", insert["statement_id"])
    with pytest.raises(RpcError) as error:
        client.call("execute_prepared", insert["statement_id"], parameters(v=[7]))
    assert error.value.error_type == "NotFoundError"
    client.close()


def _insert(client, table: str, batches: list[pa.RecordBatch], mode: str, *, commit: bool = True) -> int:
    schema = batches[0].schema
    rows = 0
    with client.stream("insert", table, None, None, schema_message(schema), mode) as call:
        for index, batch in enumerate(batches):
            last = commit and index == len(batches) - 1
            rows = call.exchange(batch, COMMIT if last else None).batch.column(0)[0].as_py()
    return rows


def test_insert_creates_and_appends(server: ServerProcess) -> None:
    client = server.client()
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int32()), "v": pa.array([0.5, 1.5, 2.5])})
    assert _insert(client, "ins", [batch, batch], "create") == 6
    assert _insert(client, "ins", [batch], "append") == 3
    assert query_table(client, "SELECT count(*) AS n FROM ins").column("n").to_pylist() == [9]
    assert _insert(client, "ins", [batch], "replace") == 3
    assert query_table(client, "SELECT count(*) AS n FROM ins").column("n").to_pylist() == [3]
    client.close()


def test_insert_without_commit_leaves_no_rows(server: ServerProcess) -> None:
    client = server.client()
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int32())})
    _insert(client, "nocommit", [batch], "create")
    _insert(client, "nocommit", [batch, batch], "append", commit=False)
    assert query_table(client, "SELECT count(*) AS n FROM nocommit").column("n").to_pylist() == [2]
    client.close()


def test_insert_schema_mismatch_names_the_column(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE typed (id INTEGER, value DOUBLE)")
    batch = pa.record_batch({"id": pa.array([1], pa.int32()), "price": pa.array([1.0])})
    with pytest.raises(RpcError) as error:
        _insert(client, "typed", [batch], "append")
    assert error.value.error_type == "BinderException"
    assert "price" in error.value.error_message and "value" in error.value.error_message
    assert query_table(client, "SELECT 41 + 1 AS x").column("x").to_pylist() == [42]
    client.close()


def test_malformed_sql_is_a_typed_error_and_the_connection_lives(server: ServerProcess) -> None:
    client = server.client()
    with pytest.raises(RpcError) as error:
        client.call("execute", "SELEC nonsense")
    assert error.value.error_type == "ParserException"
    assert "syntax error" in error.value.error_message
    with pytest.raises(RpcError) as error:
        query_table(client, "SELECT * FROM no_such_table")
    assert error.value.error_type == "CatalogException"
    assert query_table(client, "SELECT 1 AS x").column("x").to_pylist() == [1]
    client.close()


def test_transactions_span_calls(server: ServerProcess) -> None:
    client, other = server.client(), server.client()
    client.call("execute", "CREATE TABLE tx (a INTEGER)")
    client.call("execute", "BEGIN")
    client.call("execute", "INSERT INTO tx VALUES (1)")
    batch = pa.record_batch({"a": pa.array([2, 3], pa.int32())})
    _insert(client, "tx", [batch], "append")
    assert query_table(other, "SELECT count(*) AS n FROM tx").column("n").to_pylist() == [0]
    assert query_table(client, "SELECT count(*) AS n FROM tx").column("n").to_pylist() == [3]
    client.call("execute", "ROLLBACK")
    assert query_table(client, "SELECT count(*) AS n FROM tx").column("n").to_pylist() == [0]
    client.call("execute", "BEGIN; INSERT INTO tx VALUES (4); COMMIT")
    assert query_table(other, "SELECT count(*) AS n FROM tx").column("n").to_pylist() == [1]
    client.close()
    other.close()


def test_catalog(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE cat_t (id INTEGER NOT NULL, name VARCHAR); CREATE VIEW cat_v AS SELECT 1 AS x")
    with client.stream("tables") as call:
        listing = pa.Table.from_batches([item.batch for item in call])
    rows = {(r["table_name"], r["table_type"], r["column_count"]) for r in listing.to_pylist()}
    assert ("cat_t", "BASE TABLE", 2) in rows and ("cat_v", "VIEW", 1) in rows
    schema = pa.ipc.read_schema(pa.py_buffer(client.call("table_schema", "cat_t")))
    assert schema.names == ["id", "name"] and schema.field("id").type == pa.int32()
    assert not schema.field("id").nullable and schema.field("name").nullable
    client.close()


def test_unix_socket(server: ServerProcess) -> None:
    client = server.client(unix=True)
    assert query_table(client, "SELECT 7 AS x").column("x").to_pylist() == [7]
    client.close()


def test_any_duckdb_process_serves_with_one_sql_call(extension: Path) -> None:
    import duckdb

    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    con.execute("CREATE TABLE shared_with_clients AS SELECT 42 AS answer")
    rows = dict(con.execute("SELECT kind, value FROM quiver_serve('tcp://127.0.0.1:0', token := 's3')").fetchall())
    assert set(rows) == {"PORT"}
    with pytest.raises(duckdb.Error, match="serving already"):
        con.execute("SELECT * FROM quiver_serve('tcp://127.0.0.1:0')").fetchall()
    from quiver.rpc.client import Client
    from quiver.transport.socket import connect_tcp
    from server_support import QuiverServer

    client = Client(QuiverServer, connect_tcp("127.0.0.1", int(rows["PORT"])))
    client.call("connect", token="s3")
    assert query_table(client, "SELECT answer FROM shared_with_clients").column(0).to_pylist() == [42]
    client.call("execute", "INSERT INTO shared_with_clients VALUES (43)")
    with pytest.raises(RpcError, match="cannot run in a session"):
        query_table(client, "SELECT * FROM quiver_serve_stop()")
    assert con.execute("SELECT count(*) FROM shared_with_clients").fetchone() == (2,)
    assert con.execute("SELECT * FROM quiver_serve_stop()").fetchone() == (True,)
    assert con.execute("SELECT * FROM quiver_serve_stop()").fetchone() == (False,)
    client.close()
    con.close()


def test_connections_over_the_maximum_are_busy(extension: Path) -> None:
    server = ServerProcess("--no-auth", "--max-connections", "1", env={"QUIVER_EXTENSION": str(extension)})
    try:
        first = server.client()
        second = server.raw_client()
        with pytest.raises(RpcError) as error:
            second.call("connect")
        assert error.value.error_type == "ServerBusyError"
        second.close()
        first.close()
        wait_until(lambda: _connects(server), "a free connection slot")
    finally:
        assert server.stop() == 0


def _connects(server: ServerProcess) -> bool:
    client = server.raw_client()
    try:
        client.call("connect")
        return True
    except RpcError:
        return False
    finally:
        client.close()


def test_threads_and_memory_limit_reach_duckdb(extension: Path) -> None:
    server = ServerProcess(
        "--no-auth", "--threads", "1", "--memory-limit", "512MB", env={"QUIVER_EXTENSION": str(extension)}
    )
    try:
        client = server.client()
        settings = query_table(
            client, "SELECT current_setting('threads') AS threads, current_setting('memory_limit') AS memory"
        ).to_pylist()[0]
        assert settings["threads"] == 1
        assert settings["memory"].replace(" ", "").upper().startswith(("512", "488"))
        client.close()
    finally:
        assert server.stop() == 0
