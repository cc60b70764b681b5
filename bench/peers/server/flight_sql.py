"""Peer: quiver's server through its Flight SQL front door, with the ADBC Python client (quiver's .venv).

The same server as quiver's spine rows (`python -m quiver.serve`, a memory database, DuckDB 2.0.0 with
quiver's extension), started here with one gRPC listener on a free loopback port; the client is
`adbc_driver_flightsql.dbapi` with the announced token as a bearer header, autocommit on (each call
its own transaction, as the spine's insert and query are):

- Arrow in: `cursor.adbc_ingest(name, reader, mode="create")` into a dropped table (Flight SQL's
  `CommandStatementIngest`), the table cut into batches of rows.BATCH_ROWS as the spine's rows are.
- Arrow out: `cursor.execute(q)` + `fetch_arrow_table()`.

Its records carry peer "quiver flight sql" and transport "grpc"; bench/peers/server/targets.py sets them
beside the spine's rows of the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa
import rows as m
from common import INSERT_ARROW, QUERY_ONE, Case, log, parse_args, run_peer

PEER = "quiver flight sql"
TRANSPORT = "grpc"
ROOT = Path(__file__).resolve().parents[3]
SERVER_START_TIMEOUT_S = 120
#: Announcement lines read before READY (one per listener, the token): a bound on a confused server.
ANNOUNCE_LINES_MAX = 16


class Server:
    """`python -m quiver.serve --listen grpc://127.0.0.1:0 --watch-stdin`, its URI and token read."""

    def __init__(self) -> None:
        environment = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "quiver.serve", "--listen", "grpc://127.0.0.1:0", "--watch-stdin"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            text=True,
        )
        self.uri = ""
        self.token = ""
        assert self.process.stdout is not None
        for _ in range(ANNOUNCE_LINES_MAX):
            line = self.process.stdout.readline().strip()
            if line == "READY":
                break
            if not line:
                raise RuntimeError(f"the server ended before READY (exit {self.process.wait()})")
            kind, _, value = line.partition(":")
            if kind == "FLIGHT_SQL":
                self.uri = value
            elif kind == "TOKEN":
                self.token = value
        else:
            raise RuntimeError(f"no READY in the server's first {ANNOUNCE_LINES_MAX} lines")
        if not self.uri or not self.token:
            raise RuntimeError(f"the server announced no FLIGHT_SQL URI or no TOKEN (uri {self.uri!r})")

    def connect(self):
        return flight_sql.connect(
            self.uri,
            db_kwargs={adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {self.token}"},
            autocommit=True,
        )

    def stop(self) -> None:
        """End of stdin (the server's --watch-stdin), then a bounded wait; SIGKILL past it."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            status = self.process.wait(SERVER_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        if status != 0:
            log(PEER, f"the server exited {status}")


@contextmanager
def running_server() -> Iterator[Server]:
    server = Server()
    try:
        yield server
    finally:
        server.stop()


def drop(con, name: str) -> None:
    with con.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {name}")


def batches(source: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=m.BATCH_ROWS))


def ingest(con, name: str, reader: pa.RecordBatchReader) -> int:
    with con.cursor() as cur:
        return cur.adbc_ingest(name, reader, mode="create")


def fetch(con, sql: str) -> pa.Table:
    with con.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def checksum(con, name: str) -> m.Checksum:
    with con.cursor() as cur:
        cur.execute(m.checksum_sql([name]))
        return m.of_sql_row(cur.fetchone())


def cases(server: Server, args):
    rows = args.rows
    source = m.table(rows)
    con = server.connect()

    def prepare_ingest() -> pa.RecordBatchReader:
        drop(con, "m")
        return batches(source)

    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", TRANSPORT, "ADBC adbc_ingest(mode='create')",
        prepare=prepare_ingest, run=lambda reader: ingest(con, "m", reader),
        check=lambda count: count == rows and checksum(con, "m").matches(m.expected(rows)), rows=rows,
        bytes_per_row=m.BYTES_PER_ROW,
    )  # fmt: skip
    # The query workloads read a table loaded once here.
    drop(con, "m")
    ingest(con, "m", batches(source))
    for workload, sql, nbytes in m.QUERY_SHAPES:
        yield Case(
            workload, QUERY_ONE, "sync", TRANSPORT, "ADBC execute + fetch_arrow_table()",
            run=lambda _s, sql=sql: fetch(con, sql.format(table="m")),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
            bytes_per_row=nbytes,
        )  # fmt: skip
    con.close()


def main() -> int:
    args = parse_args(__doc__)
    versions = {
        "adbc_driver_flightsql": adbc_driver_flightsql.__version__,
        "adbc_driver_manager": adbc_driver_manager.__version__,
        "pyarrow": pa.__version__,
    }
    notes = [
        "quiver's server (python -m quiver.serve) with a gRPC listener only; ADBC's Flight SQL driver, autocommit on",
        f"ingest sends batches of {m.BATCH_ROWS:,} rows; a scan returns DuckDB's own batches",
    ]
    with running_server() as server:
        return run_peer(PEER, args, versions, lambda: cases(server, args), notes)


if __name__ == "__main__":
    raise SystemExit(main())
