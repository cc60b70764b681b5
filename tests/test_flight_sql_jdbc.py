"""The quiver server's Flight SQL listener through a JVM client: the Arrow Flight SQL JDBC driver from
Maven Central (fetched by tools/setup_jdbc.sh), driven by the small Java program in
tests/flight_sql_jdbc/ (compiled here with the machine's JDK): a typed query, a large result streamed
row by row, a prepared INSERT sent with addBatch / executeBatch and read back through quiver's own
client, DatabaseMetaData (table types, catalogs, tables, columns) as a SQL tool reads it, bearer token and
user/password auth, a wrong token refused, a SQL error with DuckDB's message, ENUM / unsigned / zoned
timestamp values read as their values (the server's portable result types for Java clients), primary
keys as DatabaseMetaData reads them,
TLS with a self-signed certificate made here (trusted through the driver's tlsRootCerts, refused without).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from server_support import ROOT, WAIT_SECONDS, ServerProcess, query_table

JDBC_DIR = ROOT / "tests" / "flight_sql_jdbc"
DRIVER_JAR = JDBC_DIR / "build" / "flight-sql-jdbc-driver.jar"
PROGRAM = "FlightSqlJdbcCheck"
#: The program's exit status for a SQLException (printed as {"error": ...}).
EXIT_SQL_ERROR = 3
#: A JVM start plus the driver's first connection; generous for a loaded 2-core machine.
JVM_SECONDS = 4 * WAIT_SECONDS
#: Arrow's memory module reaches into java.nio; the shaded driver jar sits on the class path, so it is
#: the unnamed module that needs the opening. Timestamps without a zone print in the JVM's zone: fix it.
JVM_OPTIONS = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC"]


def _jdk_tool(name: str) -> str:
    """``$JAVA_HOME/bin/<name>`` when JAVA_HOME is set, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / name) if java_home else shutil.which(name)
    if not found or not Path(found).is_file():
        pytest.fail(f"no {name}: the Flight SQL JDBC test needs a JDK (>= 11) on PATH or in JAVA_HOME")
    return found


@pytest.fixture(scope="module")
def jdbc_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The program compiled into a temporary directory, beside the driver jar."""
    if not DRIVER_JAR.is_file():
        pytest.fail(f"{DRIVER_JAR} is missing; run tools/setup_jdbc.sh (./quiver test does)")
    classes = tmp_path_factory.mktemp("jdbc-classes")
    subprocess.run(
        [_jdk_tool("javac"), "-d", str(classes), str(JDBC_DIR / f"{PROGRAM}.java")],
        check=True,
        timeout=JVM_SECONDS,
    )
    return f"{classes}{os.pathsep}{DRIVER_JAR}"


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        "--listen",
        "tcp://127.0.0.1:0",
        "--listen",
        "grpc://127.0.0.1:0",
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM), made with openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("no openssl on PATH: the TLS case makes its certificate with it")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [openssl, *request, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
        timeout=WAIT_SECONDS,
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_server(extension: Path, certificate: tuple[Path, Path]) -> Iterator[ServerProcess]:
    cert, key = certificate
    process = ServerProcess(
        "--listen",
        "grpc+tls://127.0.0.1:0",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0


def jdbc_url(server: ServerProcess, **properties: str) -> str:
    """The driver's URL for the server's Flight SQL listener; TLS exactly when it is grpc+tls://."""
    assert server.flight_sql is not None, "the server announced no FLIGHT_SQL listener"
    address = urlsplit(server.flight_sql)
    assert address.scheme in ("grpc", "grpc+tls"), server.flight_sql
    encryption = "true" if address.scheme == "grpc+tls" else "false"
    query = "&".join(f"{key}={value}" for key, value in {"useEncryption": encryption, **properties}.items())
    return f"jdbc:arrow-flight-sql://{address.hostname}:{address.port}?{query}"


def run_program(classpath: str, *args: str) -> tuple[int, dict[str, Any]]:
    """The program's exit status and the JSON object it printed last."""
    completed = subprocess.run(
        [_jdk_tool("java"), *JVM_OPTIONS, "-cp", classpath, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=JVM_SECONDS,
    )
    lines = completed.stdout.strip().splitlines()
    assert lines, f"no output (exit {completed.returncode}): {completed.stderr[-4000:]}"
    return completed.returncode, json.loads(lines[-1])


def run_ok(classpath: str, *args: str) -> dict[str, Any]:
    status, result = run_program(classpath, *args)
    assert status == 0, result
    return result


def test_query_types_and_values(server: ServerProcess, jdbc_classpath: str) -> None:
    sql = (
        "SELECT 42::INTEGER AS i, 9007199254740993::BIGINT AS big, 'straße'::VARCHAR AS s, "
        "1.5::DOUBLE AS d, true AS b, DATE '2024-02-29' AS day, "
        "TIMESTAMP '2024-02-29 12:34:56.789' AS ts, 12.34::DECIMAL(10, 2) AS price, NULL::INTEGER AS nothing"
    )
    result = run_ok(jdbc_classpath, "query", jdbc_url(server, token=server.token), sql, "10")
    columns = [(column["name"], column["type"]) for column in result["columns"]]
    assert columns == [
        ("i", "INTEGER"),
        ("big", "BIGINT"),
        ("s", "VARCHAR"),
        ("d", "DOUBLE"),
        ("b", "BOOLEAN"),
        ("day", "DATE"),
        ("ts", "TIMESTAMP"),
        ("price", "DECIMAL"),
        ("nothing", "INTEGER"),
    ]
    assert result["classes"] == [
        "java.lang.Integer",
        "java.lang.Long",
        "java.lang.String",
        "java.lang.Double",
        "java.lang.Boolean",
        "java.sql.Date",
        "java.sql.Timestamp",
        "java.math.BigDecimal",
        None,
    ]
    assert result["rows"] == [
        ["42", "9007199254740993", "straße", "1.5", "true", "2024-02-29", "2024-02-29 12:34:56.789", "12.34", None]
    ]
    assert result["row_count"] == 1


def test_large_result_streams_every_row(server: ServerProcess, jdbc_classpath: str) -> None:
    rows = 2_000_000
    result = run_ok(
        jdbc_classpath, "query", jdbc_url(server, token=server.token), f"SELECT range AS n FROM range({rows})", "1"
    )
    assert result["row_count"] == rows
    assert result["first_column_sum"] == rows * (rows - 1) // 2
    assert result["rows"] == [["0"]]


def test_prepared_insert_batch_is_read_back(server: ServerProcess, jdbc_classpath: str) -> None:
    rows = 5_000
    result = run_ok(jdbc_classpath, "ingest", jdbc_url(server, token=server.token), "jdbc_ingest", str(rows))
    # The parameter types come from the server's parameter schema; JDBC's setLong / setString /
    # setDouble bind through them.
    assert result["parameter_types"] == ["BIGINT", "VARCHAR", "DOUBLE"]
    assert sum(result["batch_counts"]) == rows
    names = rows - len(range(0, rows, 7))
    assert (result["count"], result["id_sum"], result["name_count"]) == (rows, rows * (rows - 1) // 2, names)
    assert result["value_sum"] == pytest.approx(0.5 * rows * (rows - 1) / 2)
    assert result["lookup"] == [[rows - 1, f"name-{rows - 1}", 0.5 * (rows - 1)]]
    # The rows are committed in the server's database, visible to quiver's own client on the spine.
    client = server.client()
    table = query_table(
        client, "SELECT count(*) AS n, count(name) AS names, max(id) AS top FROM jdbc_ingest WHERE id % 7 <> 0"
    )
    client.close()
    assert table.to_pylist() == [{"n": names, "names": names, "top": rows - 1}]


def test_database_metadata_lists_tables_and_columns(server: ServerProcess, jdbc_classpath: str) -> None:
    # Made through quiver's own client on the spine, listed through JDBC: one database, two front doors.
    client = server.client()
    client.call("execute", "CREATE TABLE jdbc_meta (id INTEGER NOT NULL, label VARCHAR, seen TIMESTAMP)")
    client.call("execute", "CREATE VIEW jdbc_meta_view AS SELECT id, label FROM jdbc_meta")
    client.close()
    result = run_ok(jdbc_classpath, "metadata", jdbc_url(server, token=server.token), "jdbc_meta%")
    assert sorted(result["table_types"]) == ["BASE TABLE", "LOCAL TEMPORARY", "VIEW"]
    assert result["catalogs"] == ["memory"]
    assert sorted(result["tables"]) == [
        ["memory", "main", "jdbc_meta", "BASE TABLE"],
        ["memory", "main", "jdbc_meta_view", "VIEW"],
    ]
    assert sorted(result["columns"]) == [
        ["jdbc_meta", "id", "INTEGER", 1, "NO"],
        ["jdbc_meta", "label", "VARCHAR", 2, "YES"],
        ["jdbc_meta", "seen", "TIMESTAMP", 3, "YES"],
        ["jdbc_meta_view", "id", "INTEGER", 1, "YES"],
        ["jdbc_meta_view", "label", "VARCHAR", 2, "YES"],
    ]


def test_enum_unsigned_and_zoned_values_read_as_values(server: ServerProcess, jdbc_classpath: str) -> None:
    # The 18.3 driver reads a dictionary as its indices, an unsigned integer as the signed one of its
    # width and throws on getObject for a zoned timestamp: a Java client's results arrive in portable
    # types (crates/quiver-server/src/flight_sql/result_types.rs), every value kept.
    sql = (
        "SELECT 'happy'::ENUM('sad', 'happy') AS mood, ['sad'::ENUM('sad', 'happy')] AS moods, "
        "255::UTINYINT AS u8, 65535::USMALLINT AS u16, 4294967295::UINTEGER AS u32, "
        "18446744073709551615::UBIGINT AS u64, TIMESTAMPTZ '2024-02-29 12:34:56.789+05:00' AS at"
    )
    result = run_ok(jdbc_classpath, "query", jdbc_url(server, token=server.token), sql, "1")
    assert [(column["name"], column["type"]) for column in result["columns"]] == [
        ("mood", "VARCHAR"),
        ("moods", "ARRAY"),
        ("u8", "SMALLINT"),
        ("u16", "INTEGER"),
        ("u32", "BIGINT"),
        ("u64", "DECIMAL"),
        ("at", "TIMESTAMP"),
    ]
    assert result["classes"][6] == "java.sql.Timestamp"
    assert result["rows"] == [
        ["happy", '["sad"]', "255", "65535", "4294967295", "18446744073709551615", "2024-02-29 07:34:56.789"]
    ]
    # getColumns tells the same types the values arrive in.
    client = server.client()
    client.call("execute", "CREATE TABLE jdbc_portable (m ENUM('sad', 'happy'), u UBIGINT, t TIMESTAMPTZ)")
    client.close()
    listed = run_ok(jdbc_classpath, "metadata", jdbc_url(server, token=server.token), "jdbc_portable")
    assert [column[1:3] for column in listed["columns"]] == [["m", "VARCHAR"], ["u", "DECIMAL"], ["t", "TIMESTAMP"]]


def test_arrow_result_types_on_request(server: ServerProcess, jdbc_classpath: str) -> None:
    # A URL property travels as a header: a Java client may ask for DuckDB's own Arrow types.
    url = jdbc_url(server, token=server.token, **{"quiver-result-types": "arrow"})
    result = run_ok(jdbc_classpath, "query", url, "SELECT 'happy'::ENUM('sad', 'happy') AS mood", "1")
    assert result["rows"] == [["1"]]  # the dictionary's index: what the driver makes of a dictionary
    status, refused = run_program(
        jdbc_classpath, "query", jdbc_url(server, token=server.token, **{"quiver-result-types": "x"}), "SELECT 1", "1"
    )
    assert status == EXIT_SQL_ERROR and "quiver-result-types" in refused["error"], refused


def test_primary_keys_and_the_drivers_empty_type_info(server: ServerProcess, jdbc_classpath: str) -> None:
    client = server.client()
    client.call(
        "execute", "CREATE TABLE jdbc_keys (region VARCHAR, id INTEGER, note VARCHAR, PRIMARY KEY (region, id))"
    )
    client.close()
    result = run_ok(jdbc_classpath, "keys", jdbc_url(server, token=server.token), "jdbc_keys")
    assert result["primary_keys"] == [
        ["jdbc_keys", "region", 1, "jdbc_keys_region_id_pkey"],
        ["jdbc_keys", "id", 2, "jdbc_keys_region_id_pkey"],
    ]
    # The 18.3 driver's getTypeInfo is Avatica's empty default: it never asks the server
    # (GetXdbcTypeInfo, which tests/test_flight_sql_dbapi.py reads). A driver limit, in docs/server.md.
    assert result["types"] == []


def test_rollback_with_autocommit_off_is_a_no_op_a_driver_limit(server: ServerProcess, jdbc_classpath: str) -> None:
    # The 18.3 driver never begins a Flight SQL transaction: with autocommit off each statement still
    # commits on its own and rollback() does nothing (docs/server.md, "Driver limits").
    client = server.client()
    client.call("execute", "CREATE TABLE jdbc_rollback (id INTEGER)")
    client.close()
    result = run_ok(jdbc_classpath, "rollback", jdbc_url(server, token=server.token), "jdbc_rollback")
    assert result["rows_after_rollback"] == 1


def test_user_and_password_handshake(server: ServerProcess, jdbc_classpath: str) -> None:
    # Basic auth: any user name, the server token as the password; the handshake answers a bearer token.
    url = jdbc_url(server, user="jdbc", password=server.token)
    result = run_ok(jdbc_classpath, "query", url, "SELECT 7::INTEGER AS seven", "1")
    assert result["rows"] == [["7"]]


@pytest.mark.parametrize("credentials", [{"token": "0" * 64}, {"user": "jdbc", "password": "wrong"}])
def test_wrong_credentials_are_refused(server: ServerProcess, jdbc_classpath: str, credentials: dict[str, str]) -> None:
    status, result = run_program(jdbc_classpath, "query", jdbc_url(server, **credentials), "SELECT 1", "1")
    assert status == EXIT_SQL_ERROR, result
    assert "UNAUTHENTICATED: authentication failed" in result["error"]
    assert server.token is not None and server.token not in result["error"]


def test_sql_error_carries_duckdb_message(server: ServerProcess, jdbc_classpath: str) -> None:
    url = jdbc_url(server, token=server.token)
    status, result = run_program(jdbc_classpath, "query", url, "SELECT * FROM no_such_table", "1")
    assert status == EXIT_SQL_ERROR, result
    assert "Catalog Error" in result["error"] and "no_such_table" in result["error"]
    # The server keeps serving.
    assert run_ok(jdbc_classpath, "query", url, "SELECT 1::INTEGER AS one", "1")["rows"] == [["1"]]


def test_tls_with_a_trusted_self_signed_certificate(
    tls_server: ServerProcess, jdbc_classpath: str, certificate: tuple[Path, Path]
) -> None:
    url = jdbc_url(tls_server, token=tls_server.token, tlsRootCerts=str(certificate[0]))
    assert run_ok(jdbc_classpath, "query", url, "SELECT 1::INTEGER AS one", "1")["rows"] == [["1"]]
    # Without the certificate among its roots the driver refuses the server.
    status, result = run_program(jdbc_classpath, "query", jdbc_url(tls_server, token=tls_server.token), "SELECT 1", "1")
    assert status == EXIT_SQL_ERROR, result
    assert "UNAVAILABLE" in result["error"]
