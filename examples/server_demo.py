"""`./quiver demo`, second half: DuckDB as a database server (`./quiver server`) and its clients.

Starts `python -m quiver.serve` on a Unix socket and on TCP (with a token), bulk-inserts rows with
the Arrow inserter through shared memory, streams them back, shows that a second client over TCP
sees only committed rows, that bad input gets a typed error on a connection that keeps serving,
that an ADBC client reads and bulk-loads the same database through the Flight SQL front door (gRPC),
and stops the server with SIGTERM. `./quiver bench server` runs the measured version beside
in-process DuckDB, Hyper, Quack and PostgreSQL.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.compute as pc

import quiver

ROWS = 5_000_000
BATCH_ROWS = 500_000
START_TIMEOUT_S = 120


def measurements(start: int, count: int) -> pa.Table:
    """`measurements(id, sensor_id, value, timestamp)`, seed 002's schema and rows."""
    ids = pa.array(range(start, start + count), pa.int32())
    return pa.table(
        {
            "id": ids,
            "sensor_id": pc.subtract(ids, pc.multiply(pc.divide(ids, 10), 10)),
            "value": pc.multiply(pc.cast(ids, pa.float64()), 0.1),
            "timestamp": pc.add(pc.multiply(pc.cast(ids, pa.int64()), 1000), 1_700_000_000_000),
        }
    )


def start_server(socket_path: Path, token: str) -> tuple[subprocess.Popen[str], int, str]:
    command = [
        sys.executable,
        "-m",
        "quiver.serve",
        "--listen",
        f"unix://{socket_path}",
        "--listen",
        "tcp://127.0.0.1:0",
        "--listen",
        "grpc://127.0.0.1:0",
        "--watch-stdin",
    ]
    env = {**os.environ, "QUIVER_TOKEN": token}
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert server.stdout is not None
    port, flight_sql_uri = 0, ""
    deadline = time.monotonic() + START_TIMEOUT_S
    for line in server.stdout:
        line = line.strip()
        print(f"   server says {line}")
        if line.startswith("PORT:"):
            port = int(line[5:])
        if line.startswith("FLIGHT_SQL:"):
            flight_sql_uri = line.removeprefix("FLIGHT_SQL:")
        if line == "READY" or time.monotonic() > deadline:
            break
    if not port or not flight_sql_uri:
        server.kill()
        raise SystemExit("the server did not announce its TCP port and Flight SQL URI")
    return server, port, flight_sql_uri


def timed(label: str, rows: int, started: float) -> None:
    seconds = time.perf_counter() - started
    print(f"   {label:44s} {seconds * 1e3:8.1f} ms   {rows / seconds / 1e6:8.1f} Mrows/s")


def local_client(socket_path: Path) -> None:
    """Bulk insert and scans over the Unix socket, large batches through shared memory."""
    with quiver.connect(f"unix://{socket_path}") as conn:
        data = measurements(0, ROWS).to_reader(max_chunksize=BATCH_ROWS)
        started = time.perf_counter()
        conn.insert_arrow("measurements", data, mode="create")
        conn.commit()
        timed(f"insert_arrow {ROWS:,} rows (Unix socket + shm)", ROWS, started)
        cursor = conn.cursor()
        started = time.perf_counter()
        scanned = cursor.execute("SELECT * FROM measurements").fetch_arrow_table()
        timed(f"full scan -> Arrow, {scanned.num_rows:,} rows", scanned.num_rows, started)
        cursor.execute("SELECT sensor_id, count(*), round(sum(value)) FROM measurements GROUP BY 1 ORDER BY 1 LIMIT 3")
        print(f"   GROUP BY sensor_id (first 3): {cursor.fetchall()}")


def remote_client(port: int, token: str) -> None:
    """Another client over TCP with the token: it sees the committed rows; bad input is typed."""
    with quiver.connect(f"tcp://127.0.0.1:{port}", token=token) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT count(*) FROM measurements WHERE sensor_id = ?", [5])
        print(f"   over TCP with the token: rows with sensor_id = 5: {cursor.fetchone()[0]:,}")
        try:
            cursor.execute("SELEC 1")
        except quiver.client.ProgrammingError as error:
            print(f"   bad SQL -> {type(error).__name__}: {str(error).splitlines()[0]}")
            conn.rollback()  # the failed statement aborted the transaction it ran in
        cursor.execute("SELECT 42")
        print(f"   ... after ROLLBACK the connection keeps serving: {cursor.fetchone()[0]}")
    try:
        quiver.connect(f"tcp://127.0.0.1:{port}", token="wrong")
    except quiver.client.OperationalError as error:
        print(f"   a wrong token -> {error}")


def flight_sql_client(uri: str, token: str) -> None:
    """ADBC's Flight SQL driver on the same database: a scan, a bulk ingest, the catalog."""
    authorization = {"adbc.flight.sql.authorization_header": f"Bearer {token}"}
    with flight_sql.connect(uri, db_kwargs=authorization, autocommit=True) as conn, conn.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute("SELECT * FROM measurements")
        scanned = cursor.fetch_arrow_table()
        timed(f"Flight SQL (ADBC) scan, {scanned.num_rows:,} rows", scanned.num_rows, started)
        extra = measurements(ROWS, 1_000_000)
        started = time.perf_counter()
        # ADBC's driver sends each batch as one gRPC message of at most 16 MiB: batches of 500k rows.
        cursor.adbc_ingest("measurements_more", extra.to_reader(max_chunksize=BATCH_ROWS), mode="create")
        timed(f"Flight SQL (ADBC) adbc_ingest {extra.num_rows:,} rows", extra.num_rows, started)
        tables = [
            table["table_name"]
            for catalog in conn.adbc_get_objects(depth="tables").read_all().to_pylist()
            for schema in catalog["catalog_db_schemas"]
            for table in schema["db_schema_tables"]
        ]
        print(f"   adbc_get_objects: tables {sorted(tables)}")


def main() -> None:
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="quiver-demo-") as tmp:
        socket_path = Path(tmp) / "quiver.sock"
        print("quiver server: DuckDB 2.0.0 + quiver's extension serving quiver.server")
        server, port, flight_sql_uri = start_server(socket_path, token)
        try:
            local_client(socket_path)
            remote_client(port, token)
            flight_sql_client(flight_sql_uri, token)
        finally:
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=60)
            print(f"   SIGTERM -> exit {code}; socket removed: {not socket_path.exists()}")


if __name__ == "__main__":
    main()
