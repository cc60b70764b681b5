"""Peer: PostgreSQL 15 (Debian's binaries, a throw-away cluster from pg_cluster.py), unix socket then TCP.

- COPY in: psycopg 3 `COPY m FROM STDIN (FORMAT BINARY)` with `write_row` over Python tuples that are
  built before the clock starts (psycopg encodes them to PostgreSQL's binary format).
- Arrow in: ADBC's PostgreSQL driver, `adbc_ingest(…, mode="append")` (it speaks binary COPY itself).
- Arrow out: ADBC `execute` + `fetch_arrow_table()`.
The N-connection variants give each thread its own connection and its own table.
"""

from __future__ import annotations

import adbc_driver_manager
import adbc_driver_postgresql
import adbc_driver_postgresql.dbapi as adbc
import psycopg
import pyarrow as pa
import rows as m
from common import (
    INSERT_ARROW,
    INSERT_COPY,
    QUERY_ONE,
    Case,
    in_threads,
    insert_arrow_n,
    parse_args,
    query_n,
    run_peer,
)
from pg_cluster import Cluster

PEER = "postgresql"
TRANSPORTS = ("unix", "tcp")
COPY_TYPES = ["int4", "int4", "float8", "int8"]


def recreate(con: psycopg.Connection, name: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute(f"CREATE TABLE {name} ({m.COLUMNS_DDL})")


def copy_rows(con: psycopg.Connection, name: str, tuples: list[tuple]) -> None:
    with con.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(COPY_TYPES)
        for row in tuples:
            copy.write_row(row)


def ingest(con, name: str, source: pa.Table) -> None:
    with con.cursor() as cur:
        cur.adbc_ingest(name, source, mode="append")
    con.commit()


def fetch(con, sql: str) -> pa.Table:
    with con.cursor() as cur:
        cur.execute(sql)
        result = cur.fetch_arrow_table()
    con.commit()
    return result


def checksum(con: psycopg.Connection, names: list[str]) -> m.Checksum:
    return m.of_sql_row(con.execute(m.checksum_sql(names)).fetchone())


def cases(pg: Cluster, args):
    source = m.table(args.rows)
    parts = m.worker_tables(args.rows, args.workers)
    tuples = [tuple(r.values()) for r in source.to_pylist()]
    for transport in TRANSPORTS:
        yield from transport_cases(pg, args, transport, source, parts, tuples)


def transport_cases(pg: Cluster, args, transport: str, source: pa.Table, parts: list[pa.Table], tuples: list):
    """Every case over one transport, on tables of its own connections' making."""
    rows, workers = args.rows, args.workers
    per = rows // workers
    tables = [f"m_{w}" for w in range(workers)]
    con = psycopg.connect(pg.conninfo(transport), autocommit=True)
    arrow = adbc.connect(pg.uri(transport))
    arrows = [adbc.connect(pg.uri(transport)) for _ in range(workers)]
    yield Case(
        "insert.bulk", INSERT_COPY, "sync", transport, "psycopg COPY FROM STDIN (FORMAT BINARY), write_row",
        prepare=lambda: recreate(con, "m"), run=lambda _s: copy_rows(con, "m", tuples),
        check=lambda _r: checksum(con, ["m"]).matches(m.expected(rows)), rows=rows, bytes_per_row=m.BYTES_PER_ROW,
        database="file", note="Python tuples built before the clock starts",
    )  # fmt: skip
    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", transport, "ADBC adbc_ingest(mode='append')",
        prepare=lambda: recreate(con, "m"), run=lambda _s: ingest(arrow, "m", source),
        check=lambda _r: checksum(con, ["m"]).matches(m.expected(rows)), rows=rows, bytes_per_row=m.BYTES_PER_ROW,
        database="file",
    )  # fmt: skip

    def prepare_n():
        for t in tables:
            recreate(con, t)

    def run_n(_s):
        in_threads([lambda c=c, t=t, p=p: ingest(c, t, p) for c, t, p in zip(arrows, tables, parts, strict=True)])

    yield Case(
        "insert.bulk", insert_arrow_n(workers), "parallel", transport, "N connections, ADBC adbc_ingest each",
        prepare=prepare_n, run=run_n, check=lambda _r: checksum(con, tables).matches(m.expected(per * workers)),
        rows=per * workers, bytes_per_row=m.BYTES_PER_ROW, connections=workers, database="file",
    )  # fmt: skip
    # The query workloads read tables loaded once here.
    recreate(con, "m")
    ingest(arrow, "m", source)
    prepare_n()
    run_n(None)
    con.execute("VACUUM ANALYZE")
    for workload, sql, nbytes in m.QUERY_SHAPES:
        yield Case(
            workload, QUERY_ONE, "sync", transport, "ADBC execute + fetch_arrow_table()",
            run=lambda _s, sql=sql: fetch(arrow, sql.format(table="m")),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
            bytes_per_row=nbytes, database="file",
        )  # fmt: skip

        def run_q(_s, sql=sql):
            return in_threads(
                [lambda c=c, t=t: fetch(c, sql.format(table=t)) for c, t in zip(arrows, tables, strict=True)]
            )

        yield Case(
            workload, query_n(workers), "parallel", transport, "N connections, ADBC fetch_arrow_table() each",
            run=run_q, check=lambda ps, w=workload: m.split_results_match(w, ps, per),
            rows=m.split_result_rows(workload, per, workers), bytes_per_row=nbytes, connections=workers, database="file",
        )  # fmt: skip
    for c in [arrow, *arrows]:
        c.close()
    con.close()


def main() -> int:
    args = parse_args(__doc__)
    notes = [
        "a fresh cluster per run: fsync, synchronous_commit and full_page_writes off, shared_buffers 1GB",
        "COPY's Python tuples are built before the clock starts; ADBC reads the Arrow table directly",
    ]
    with Cluster() as pg:
        versions = {
            "postgresql": pg.version(),
            "psycopg": psycopg.__version__,
            "adbc_driver_postgresql": adbc_driver_postgresql.__version__,
            "adbc_driver_manager": adbc_driver_manager.__version__,
            "pyarrow": pa.__version__,
        }
        return run_peer(PEER, args, versions, lambda: cases(pg, args), notes)


if __name__ == "__main__":
    raise SystemExit(main())
