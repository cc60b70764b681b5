"""Peer: Quack, DuckDB's own client/server protocol (duckdb 1.5.5 + its quack and httpfs extensions).

The server is a second process of this venv (`quack.py serve PORT TOKEN`): a memory database serving
`quack_serve('quack:127.0.0.1:PORT', token => …)` on a free port until its stdin closes. The client
attaches it (`ATTACH 'quack:…' AS r`), inserts from Arrow with `INSERT INTO r.m SELECT * FROM
<arrow table>` and reads with `quack_query(uri, sql)`, which runs the SQL on the server and streams
the result back (a query over the attached table would pull every row and filter on the client).
The extensions are LOADed from their files in site-packages: the wheel cannot INSTALL offline.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import rows as m
from common import (
    INSERT_ARROW,
    QUERY_ONE,
    Case,
    free_port,
    in_threads,
    insert_arrow_n,
    log,
    parse_args,
    query_n,
    run_peer,
)

PEER = "quack"
TRANSPORT = "tcp (HTTP)"
SERVER_START_TIMEOUT_S = 60


def extension_files() -> list[Path]:
    """Httpfs first: quack's client and server both need it loaded."""
    site = Path(duckdb.__file__).resolve().parents[1]
    version = duckdb.__version__
    files = [
        site / f"duckdb_extension_{name}" / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
        for name in ("httpfs", "quack")
    ]
    for f in files:
        assert f.exists(), f"missing {f} (run tools/setup_bench_peers.sh)"
    return files


def open_duckdb() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for f in extension_files():
        con.execute(f"LOAD '{f}'")
    return con


def serve(port: int, token: str) -> None:
    con = open_duckdb()
    con.execute(f"CALL quack_serve('quack:127.0.0.1:{port}', token => '{token}')").fetchall()
    print("READY", flush=True)
    # Serve until the client process closes our stdin (it exits or dies).
    sys.stdin.read()


class Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.uri = f"quack:127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        argv = [sys.executable, __file__, "serve", str(self.port), self.token]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "READY":
            self.__exit__()
            raise RuntimeError(f"the quack server did not start (said {line!r})")
        log(PEER, f"server on {self.uri}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(SERVER_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def client(self) -> duckdb.DuckDBPyConnection:
        con = open_duckdb()
        con.execute(f"CREATE SECRET (TYPE quack, TOKEN '{self.token}')")
        con.execute(f"ATTACH '{self.uri}' AS r")
        return con


def recreate(con: duckdb.DuckDBPyConnection, name: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS r.{name}")
    con.execute(f"CREATE TABLE r.{name} ({m.COLUMNS_DDL})")


def insert(con: duckdb.DuckDBPyConnection, name: str, source: pa.Table) -> None:
    con.register("source", source)
    con.execute(f"INSERT INTO r.{name} SELECT * FROM source").fetchall()
    con.unregister("source")


def remote(con: duckdb.DuckDBPyConnection, uri: str, sql: str) -> pa.Table:
    quoted = sql.replace("'", "''")
    return con.sql(f"SELECT * FROM quack_query('{uri}', '{quoted}')").to_arrow_table()


def checksum(con: duckdb.DuckDBPyConnection, uri: str, names: list[str]) -> m.Checksum:
    return m.of_sql_row(tuple(remote(con, uri, m.checksum_sql(names)).to_pylist()[0].values()))


def cases(server: Server, args):
    rows, workers = args.rows, args.workers
    uri = server.uri
    source = m.table(rows)
    parts = m.worker_tables(rows, workers)
    per = rows // workers
    tables = [f"m_{w}" for w in range(workers)]
    con = server.client()
    cons = [server.client() for _ in range(workers)]
    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", TRANSPORT, "INSERT INTO r.m SELECT * FROM arrow_table",
        prepare=lambda: recreate(con, "m"), run=lambda _s: insert(con, "m", source),
        check=lambda _r: checksum(con, uri, ["m"]).matches(m.expected(rows)), rows=rows,
        bytes_per_row=m.BYTES_PER_ROW,
    )  # fmt: skip

    def prepare_n():
        # Each client creates its own table: a client's catalog of the server is cached at ATTACH.
        for c, t in zip(cons, tables, strict=True):
            recreate(c, t)

    def run_n(_s):
        in_threads([lambda c=c, t=t, p=p: insert(c, t, p) for c, t, p in zip(cons, tables, parts, strict=True)])

    yield Case(
        "insert.bulk", insert_arrow_n(workers), "parallel", TRANSPORT, "N clients, INSERT … SELECT each",
        prepare=prepare_n, run=run_n, check=lambda _r: checksum(con, uri, tables).matches(m.expected(per * workers)),
        rows=per * workers, bytes_per_row=m.BYTES_PER_ROW, connections=workers,
    )  # fmt: skip
    # The query workloads read tables loaded once here.
    recreate(con, "m")
    insert(con, "m", source)
    prepare_n()
    run_n(None)
    for workload, sql, nbytes in m.QUERY_SHAPES:
        yield Case(
            workload, QUERY_ONE, "sync", TRANSPORT, "quack_query(uri, q) → to_arrow_table()",
            run=lambda _s, sql=sql: remote(con, uri, sql.format(table="m")),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
            bytes_per_row=nbytes,
        )  # fmt: skip

        def run_q(_s, sql=sql):
            return in_threads(
                [lambda c=c, t=t: remote(c, uri, sql.format(table=t)) for c, t in zip(cons, tables, strict=True)]
            )

        yield Case(
            workload, query_n(workers), "parallel", TRANSPORT, "N clients, quack_query each",
            run=run_q, check=lambda ps, w=workload: m.split_results_match(w, ps, per),
            rows=m.split_result_rows(workload, per, workers), bytes_per_row=nbytes, connections=workers,
        )  # fmt: skip


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
        return 0
    args = parse_args(__doc__)
    versions = {"duckdb": duckdb.__version__, "quack": duckdb.__version__, "pyarrow": pa.__version__}
    notes = ["server and client are two processes of duckdb 1.5.5; the server holds a memory database"]

    def all_cases():
        with Server() as server:
            yield from cases(server, args)

    return run_peer(PEER, args, versions, all_cases, notes)


if __name__ == "__main__":
    raise SystemExit(main())
