"""The server's Flight SQL front door driven by a real Flight SQL client: ADBC's DB-API
(``adbc-driver-flightsql`` over ``adbc-driver-manager``, the Go driver), against
``python -m quiver.serve --listen grpc://127.0.0.1:0`` (crates/quiver-server/src/flight_sql/).

Statements, prepared statements, transactions, ingest and the catalog; credentials and TLS are in
test_flight_sql_auth.py, dead clients, the stop and limits in test_flight_sql_faults.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.compute
import pytest

from flight_sql_support import connect, count, flight_sql_server, readings
from server_support import ServerProcess


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    yield from flight_sql_server(extension)


def test_create_insert_select(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE m1 (id INTEGER, name VARCHAR)")
        cur.execute("INSERT INTO m1 VALUES (1, 'a'), (2, 'b'), (3, NULL)")
        cur.execute("SELECT id, name FROM m1 ORDER BY id")
        assert cur.fetchall() == [(1, "a"), (2, "b"), (3, None)]
        conn.commit()


def test_a_sql_error_keeps_duckdb_message_and_the_server_serves_on(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as raised:
            cur.execute("SELECT * FROM no_such_table")
        assert "Catalog Error: Table with name no_such_table does not exist" in str(raised.value)
        conn.rollback()
        cur.execute("SELECT 42 AS answer")
        assert cur.fetchall() == [(42,)]


def test_an_update_counts_its_rows(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE m2 AS SELECT range::BIGINT AS n FROM range(10)")
        statement = cur.adbc_statement
        statement.set_sql_query("UPDATE m2 SET n = n + 1 WHERE n < 5")
        assert statement.execute_update() == 5
        # A statement not prepared: GetFlightInfo(CommandStatementQuery), then DoGet of its ticket.
        statement.set_sql_query("SELECT sum(n) AS total FROM m2")
        handle, _ = statement.execute_query()
        assert pa.RecordBatchReader.from_stream(handle).read_all().to_pylist() == [{"total": 50}]


def test_types_round_trip(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT 1::TINYINT AS i8, 2::SMALLINT AS i16, 3::INTEGER AS i32, 4::BIGINT AS i64, "
            "1.5::DOUBLE AS f64, 2.5::REAL AS f32, 'straße' AS text, true AS flag, "
            "DATE '2024-02-29' AS day, TIMESTAMP '2024-02-29 12:34:56.789' AS ts, "
            "12.34::DECIMAL(10, 2) AS money, '\\x00\\xff'::BLOB AS bytes, [1, 2, NULL] AS list, "
            "{'a': 1, 'b': 'x'} AS record, NULL::INTEGER AS missing"
        )
        table = cur.fetch_arrow_table()
    expected = {
        "i8": pa.int8(),
        "i16": pa.int16(),
        "i32": pa.int32(),
        "i64": pa.int64(),
        "f64": pa.float64(),
        "f32": pa.float32(),
        "flag": pa.bool_(),
        "day": pa.date32(),
        "money": pa.decimal128(10, 2),
        "list": pa.list_(pa.int32()),
    }
    for name, arrow_type in expected.items():
        assert table.schema.field(name).type == arrow_type, name
    row = table.to_pylist()[0]
    assert row["text"] == "straße" and row["flag"] is True and row["missing"] is None
    assert str(row["money"]) == "12.34" and row["list"] == [1, 2, None]
    assert row["record"] == {"a": 1, "b": "x"} and row["bytes"] == b"\x00\xff"
    assert row["ts"].isoformat() == "2024-02-29T12:34:56.789000"


def test_an_enum_arrives_as_the_dictionary_the_result_schema_names(server: ServerProcess) -> None:
    # The stream's schema must be GetFlightInfo's (ADBC checks): the dictionary is sent, not hydrated.
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT (['sad', 'ok', 'happy'])[1 + i % 3]::ENUM('sad', 'ok', 'happy') AS mood FROM range(300000) t(i)"
        )
        table = cur.fetch_arrow_table()
    assert pa.types.is_dictionary(table.schema.field("mood").type)
    assert table.num_rows == 300_000 and table.column("mood").to_pylist()[:4] == ["sad", "ok", "happy", "sad"]


def test_a_batch_over_the_message_size_is_split_and_whole(server: ServerProcess) -> None:
    # DuckDB's batches of this result are about 14 MB each; Flight messages stay within 4 MiB.
    rows = 300_000
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT repeat('x', 100) || i::VARCHAR AS s, i FROM range({rows}) t(i)")
        table = cur.fetch_arrow_table()
    assert table.num_rows == rows and len(table.to_batches()) > 3
    assert table.column("s")[rows - 1].as_py() == "x" * 100 + str(rows - 1)
    assert table.column("i").to_pylist() == list(range(rows))


def test_a_large_result_streams_in_batches(server: ServerProcess) -> None:
    rows = 3_000_000
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT range AS n, range * 2 AS twice FROM range({rows})")
        reader = cur.fetch_record_batch()
        seen = 0
        batches = 0
        total = 0
        for batch in reader:
            seen += batch.num_rows
            batches += 1
            total += pa.compute.sum(batch.column(0)).as_py() or 0
        assert seen == rows and batches > 1
        assert total == rows * (rows - 1) // 2


def test_prepared_query_with_parameters(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE p1 AS SELECT range::INTEGER AS id, 'v' || range AS name FROM range(100)")
        cur.execute("SELECT name FROM p1 WHERE id = ?", parameters=(42,))
        assert cur.fetchall() == [("v42",)]
        cur.execute("SELECT count(*) FROM p1 WHERE id < ? AND name <> ?", parameters=(10, "v3"))
        assert cur.fetchall() == [(9,)]


def test_prepared_update_runs_once_per_row(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE p2 (id INTEGER, name VARCHAR)")
        cur.executemany("INSERT INTO p2 VALUES (?, ?)", [(1, "a"), (2, "b"), (3, None)])
        cur.execute("SELECT id, name FROM p2 ORDER BY id")
        assert cur.fetchall() == [(1, "a"), (2, "b"), (3, None)]
        statement = cur.adbc_statement
        statement.set_sql_query("UPDATE p2 SET name = 'z' WHERE id >= ?")
        statement.prepare()
        statement.bind(pa.record_batch({"threshold": pa.array([2, 3], pa.int32())}))
        assert statement.execute_update() == 3  # 2 rows, then 1 row


def test_a_prepared_statement_tells_its_parameter_types(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE p3 (id INTEGER, name VARCHAR)")
        statement = cur.adbc_statement
        statement.set_sql_query("SELECT * FROM p3 WHERE id = ? AND name = ?")
        statement.prepare()
        schema = pa.schema(statement.get_parameter_schema())
        assert [field.type for field in schema] == [pa.int32(), pa.string()]
        statement.set_sql_query("SELECT ?")
        statement.prepare()
        assert [field.type for field in pa.schema(statement.get_parameter_schema())] == [pa.null()]


def test_commit_is_seen_by_another_connection_and_rollback_is_not(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE t1 (id INTEGER)")
    with connect(server) as writer, connect(server) as reader:
        with writer.cursor() as cur:
            cur.execute("INSERT INTO t1 VALUES (1)")
        with reader.cursor() as cur:
            cur.execute("SELECT count(*) FROM t1")
            assert cur.fetchone() == (0,)
        reader.rollback()
        writer.commit()
        with reader.cursor() as cur:
            cur.execute("SELECT count(*) FROM t1")
            assert cur.fetchone() == (1,)
        reader.rollback()
        with writer.cursor() as cur:
            cur.execute("INSERT INTO t1 VALUES (2)")
        writer.rollback()
        with reader.cursor() as cur:
            cur.execute("SELECT sum(id) FROM t1")
            assert cur.fetchone() == (1,)


def test_ingest_create_append_replace_create_append(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("ing1", readings(0, 1000), mode="create") == 1000
        assert cur.adbc_ingest("ing1", readings(1000, 500), mode="append") == 500
        assert count(cur, "ing1") == 1500
        assert cur.adbc_ingest("ing1", readings(0, 10), mode="replace") == 10
        assert count(cur, "ing1") == 10
        assert cur.adbc_ingest("ing1", readings(10, 5), mode="create_append") == 5
        assert cur.adbc_ingest("ing2", readings(0, 7), mode="create_append") == 7
        cur.execute("SELECT sum(id), sum(value) FROM ing1")
        assert cur.fetchone() == (sum(range(15)), sum(range(15)) / 2)
        cur.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'ing2'")
        assert cur.fetchall() == [("id", "BIGINT"), ("value", "DOUBLE")]


def test_ingest_errors_are_clear_and_change_nothing(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        cur.adbc_ingest("ing3", readings(0, 3), mode="create")
        with pytest.raises(adbc_driver_manager.Error) as exists:
            cur.adbc_ingest("ing3", readings(0, 3), mode="create")
        assert "already exists" in str(exists.value)
        with pytest.raises(adbc_driver_manager.Error) as missing:
            cur.adbc_ingest("no_such_ingest_table", readings(0, 3), mode="append")
        assert "Table with name no_such_ingest_table does not exist" in str(missing.value)
        wrong = pa.table({"id": [1], "price": [2.0]})
        with pytest.raises(adbc_driver_manager.Error) as renamed:
            cur.adbc_ingest("ing3", wrong, mode="append")
        assert "price" in str(renamed.value)
        assert count(cur, "ing3") == 3


def test_a_temporary_ingest_outside_a_transaction_is_refused(server: ServerProcess) -> None:
    # ADBC 1.13's Flight SQL driver sends an ingest without the connection's transaction id, so an
    # ingest is its own transaction there; a temporary table would vanish with the call's session.
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as refused:
            cur.adbc_ingest("ing4", readings(0, 5), mode="create", temporary=True)
        assert "temporary table" in str(refused.value) and "transaction" in str(refused.value)
        cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'ing4'")
        assert cur.fetchone() == (0,)


def test_an_ingest_in_a_transaction_is_not_undone_by_rollback_a_driver_limit(server: ServerProcess) -> None:
    # ADBC 1.13's driver sends adbc_ingest without the transaction id (docs/server.md, "Driver limits"): the
    # rows are committed on their own, and the connection's rollback cannot undo them.
    with connect(server) as conn, conn.cursor() as cur:
        cur.adbc_ingest("ing_rollback", readings(0, 3), mode="create")
        conn.rollback()
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        assert count(cur, "ing_rollback") == 3


def test_a_large_ingest_streams(server: ServerProcess) -> None:
    rows = 2_000_000
    batches = [readings(start, 100_000).to_batches()[0] for start in range(0, rows, 100_000)]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("ing5", reader, mode="create") == rows
        cur.execute("SELECT count(*), sum(id) FROM ing5")
        assert cur.fetchone() == (rows, rows * (rows - 1) // 2)


def test_get_objects_lists_catalog_schema_table_and_columns(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE objects_t (id INTEGER NOT NULL, name VARCHAR)")
            cur.execute("CREATE VIEW objects_v AS SELECT id FROM objects_t")
        objects = conn.adbc_get_objects(depth="all", table_name_filter="objects_%").read_all().to_pylist()
        catalogs = {entry["catalog_name"]: entry for entry in objects}
        assert "memory" in catalogs and "system" not in catalogs
        schemas = {schema["db_schema_name"]: schema for schema in catalogs["memory"]["catalog_db_schemas"]}
        tables = {table["table_name"]: table for table in schemas["main"]["db_schema_tables"]}
        assert tables["objects_t"]["table_type"] == "BASE TABLE"
        assert tables["objects_v"]["table_type"] == "VIEW"
        columns = [column["column_name"] for column in tables["objects_t"]["table_columns"]]
        assert columns == ["id", "name"]


def test_table_schema_and_table_types(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE schema_t (id INTEGER NOT NULL, amount DECIMAL(12, 3), seen TIMESTAMP)")
        schema = conn.adbc_get_table_schema("schema_t")
        assert schema.names == ["id", "amount", "seen"]
        assert schema.field("id").type == pa.int32() and not schema.field("id").nullable
        assert schema.field("amount").type == pa.decimal128(12, 3) and schema.field("amount").nullable
        assert schema.field("seen").type == pa.timestamp("us")
        assert sorted(conn.adbc_get_table_types()) == ["BASE TABLE", "LOCAL TEMPORARY", "VIEW"]
        with pytest.raises(adbc_driver_manager.Error):
            conn.adbc_get_table_schema("no_such_schema_t")


def readme_example() -> str:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = text.index("<!-- flight-sql-example -->")
    return text[start:].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_as_written(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = readme_example()
    assert len(code.strip().splitlines()) == 5, code
    assert '"grpc://127.0.0.1:8815"' in code
    monkeypatch.setenv("QUIVER_TOKEN", server.token or "")
    exec(compile(code.replace("grpc://127.0.0.1:8815", server.flight_sql or ""), "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "[(3, 4.5)]"


def test_any_duckdb_process_serves_flight_sql_with_one_sql_call(extension: Path) -> None:
    import duckdb

    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    con.execute("CREATE TABLE shared_over_flight AS SELECT 42 AS answer")
    listen = "tcp://127.0.0.1:0,grpc://127.0.0.1:0"
    rows = dict(con.execute(f"SELECT kind, value FROM quiver_serve('{listen}', token := 'f1')").fetchall())
    try:
        assert set(rows) == {"PORT", "FLIGHT_SQL"}
        db_kwargs = {"adbc.flight.sql.authorization_header": "Bearer f1"}
        with flightsql.connect(rows["FLIGHT_SQL"], db_kwargs=db_kwargs, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT answer FROM shared_over_flight")
            assert cur.fetchall() == [(42,)]
            cur.execute("INSERT INTO shared_over_flight VALUES (43)")
        assert con.execute("SELECT count(*) FROM shared_over_flight").fetchone() == (2,)
    finally:
        assert con.execute("SELECT * FROM quiver_serve_stop()").fetchone() == (True,)
    with pytest.raises(duckdb.Error, match="at most one Flight SQL listener"):
        con.execute("SELECT * FROM quiver_serve('grpc://127.0.0.1:0,grpc://127.0.0.1:0')").fetchall()
    with pytest.raises(duckdb.Error, match="tls_cert and tls_key are for a grpc"):
        con.execute("SELECT * FROM quiver_serve('grpc://127.0.0.1:0', tls_cert := 'c', tls_key := 'k')").fetchall()


def test_parameterized_changes_run_when_executed_not_when_read(server: ServerProcess) -> None:
    """DuckDB cannot infer these parameters' types at prepare, and calls each statement a query of an
    unknown column; the server must still run INSERT, UPDATE and DELETE at execute, in the transaction,
    whether or not the client reads a result. With RETURNING they are queries, and their rows arrive.
    """
    with connect(server, autocommit=False) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE pchanges (k INTEGER, v VARCHAR)")
        conn.commit()
        cur.execute("INSERT INTO pchanges SELECT ?::INTEGER + range, ? FROM range(3)", parameters=(10, "a"))
        cur.execute("UPDATE pchanges SET v = ? WHERE k = ?::INTEGER", parameters=("b", 11))
        cur.execute("DELETE FROM pchanges WHERE k = ?::INTEGER", parameters=(12,))
        conn.commit()
        cur.execute("SELECT k, v FROM pchanges ORDER BY k")
        assert cur.fetchall() == [(10, "a"), (11, "b")]
        cur.execute("INSERT INTO pchanges VALUES (?::INTEGER, ?) RETURNING k * 2", parameters=(21, "r"))
        assert cur.fetchall() == [(42,)]
        conn.rollback()
        assert count(cur, "pchanges") == 2


def test_a_prepared_statement_kept_across_commits_runs_in_the_next_transaction(server: ServerProcess) -> None:
    """ADBC's driver prepares a statement once and reuses it while the SQL is unchanged, across its
    commits and rollbacks (each begins the next transaction at once): every execution lands in the
    transaction open at that moment, so what is committed stays and what is rolled back goes.
    """
    insert = "INSERT INTO kept VALUES (?::INTEGER, ?)"
    with connect(server, autocommit=False) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE kept (round INTEGER, kind VARCHAR)")
        conn.commit()
        for r in range(4):
            cur.execute(insert, parameters=(r, "committed"))
            conn.commit()
            cur.execute(insert, parameters=(r, "rolled_back"))
            conn.rollback()
        cur.execute("SELECT kind, count(*) FROM kept GROUP BY kind")
        assert cur.fetchall() == [("committed", 4)]
