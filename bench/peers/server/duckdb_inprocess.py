"""Peer: in-process DuckDB 2.0.0 (quiver's own venv), the ceiling of `./quiver bench server`.

No server, no wire: Arrow in with `INSERT INTO m SELECT * FROM <arrow table>` (a memory database, and a
file database whose timing includes CHECKPOINT), Arrow out with `to_arrow_table()`. quiver's server
runs the same DuckDB; whatever it loses against these figures is its transport and its client.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import rows as m
from common import (
    INSERT_ARROW,
    QUERY_ONE,
    Case,
    in_threads,
    insert_arrow_n,
    parse_args,
    query_n,
    run_peer,
)

PEER = "duckdb in-process"
TRANSPORT = "in-process"


def recreate(con: duckdb.DuckDBPyConnection, name: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute(f"CREATE TABLE {name} ({m.COLUMNS_DDL})")


def insert(con: duckdb.DuckDBPyConnection, name: str, source: pa.Table, checkpoint: bool = False) -> None:
    con.register("source", source)
    con.execute(f"INSERT INTO {name} SELECT * FROM source").fetchall()
    con.unregister("source")
    if checkpoint:
        con.execute("CHECKPOINT")


def server_checksum(con: duckdb.DuckDBPyConnection, names: list[str]) -> m.Checksum:
    return m.of_sql_row(con.execute(m.checksum_sql(names)).fetchall()[0])


def query_cases(con, tables: list[str], workers: int, rows: int):
    """Full scan, filtered, aggregation on one connection, then N in parallel (one table each)."""
    per = rows // workers
    cursors = [con.cursor() for _ in tables]
    for workload, sql, nbytes in m.QUERY_SHAPES:
        yield Case(
            workload, QUERY_ONE, "sync", TRANSPORT, "con.sql(q).to_arrow_table()",
            run=lambda _s, sql=sql: con.sql(sql.format(table="m")).to_arrow_table(),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
            bytes_per_row=nbytes,
        )  # fmt: skip

        def run_n(_s, sql=sql):
            return in_threads(
                [
                    lambda c=c, t=t: c.sql(sql.format(table=t)).to_arrow_table()
                    for c, t in zip(cursors, tables, strict=True)
                ]
            )

        yield Case(
            workload, query_n(workers), "parallel", TRANSPORT, "N cursors, to_arrow_table() each",
            run=run_n, check=lambda ps, w=workload: m.split_results_match(w, ps, per),
            rows=m.split_result_rows(workload, per, workers), bytes_per_row=nbytes, connections=workers,
        )  # fmt: skip


def cases(args):
    rows, workers = args.rows, args.workers
    source = m.table(rows)
    parts = m.worker_tables(rows, workers)
    tables = [f"m_{w}" for w in range(workers)]
    con = duckdb.connect()
    scratch = Path(tempfile.mkdtemp(prefix="quiver-bench-duckdb-"))
    file_con = duckdb.connect(str(scratch / "bench.duckdb"))
    want = m.expected(rows)
    want_parts = m.expected(rows // workers * workers)

    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", TRANSPORT, "INSERT INTO m SELECT * FROM arrow_table",
        prepare=lambda: recreate(con, "m"), run=lambda _s: insert(con, "m", source),
        check=lambda _r: server_checksum(con, ["m"]).matches(want), rows=rows, bytes_per_row=m.BYTES_PER_ROW,
    )  # fmt: skip
    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", TRANSPORT, "INSERT INTO m SELECT * FROM arrow_table; CHECKPOINT",
        prepare=lambda: recreate(file_con, "m"), run=lambda _s: insert(file_con, "m", source, checkpoint=True),
        check=lambda _r: server_checksum(file_con, ["m"]).matches(want), rows=rows,
        bytes_per_row=m.BYTES_PER_ROW, database="file",
    )  # fmt: skip
    file_con.close()
    shutil.rmtree(scratch, ignore_errors=True)
    cursors = [con.cursor() for _ in tables]

    def prepare_n():
        for t in tables:
            recreate(con, t)

    def run_n(_s):
        in_threads([lambda c=c, t=t, p=p: insert(c, t, p) for c, t, p in zip(cursors, tables, parts, strict=True)])

    yield Case(
        "insert.bulk", insert_arrow_n(workers), "parallel", TRANSPORT, "N cursors, INSERT … SELECT each",
        prepare=prepare_n, run=run_n, check=lambda _r: server_checksum(con, tables).matches(want_parts),
        rows=rows // workers * workers, bytes_per_row=m.BYTES_PER_ROW, connections=workers,
    )  # fmt: skip
    # The query workloads read tables loaded once here, whatever the insert cases left behind.
    recreate(con, "m")
    insert(con, "m", source)
    prepare_n()
    run_n(None)
    yield from query_cases(con, tables, workers, rows)


def main() -> int:
    args = parse_args(__doc__)
    versions = {"duckdb": duckdb.__version__, "pyarrow": pa.__version__}
    return run_peer(PEER, args, versions, lambda: cases(args))


if __name__ == "__main__":
    raise SystemExit(main())
