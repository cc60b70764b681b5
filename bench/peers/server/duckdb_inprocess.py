"""Peer: in-process DuckDB 2.0.0 (quiver's own venv), the ceiling of `./quiver bench server`.

No server, no wire: Arrow in with `INSERT INTO m SELECT * FROM <arrow table>` (a memory database, and a
file database whose timing includes CHECKPOINT). Arrow out four ways, each a labelled record, so the
ceiling is the fastest of them in the same run (bench/peers/server/targets.py takes the best):

- `con.sql(q).to_arrow_table()`: the Python API's whole table.
- `con.sql(q).to_arrow_reader(b)`: DuckDB's streaming result, read batch by batch and let go.
- `pa.RecordBatchReader.from_stream(con.sql(q))`: the same through the Arrow C stream (PyCapsule).
- `quiver_arrow_drain(q, b)`: the bench flavour of quiver's extension runs q through the server's own
  operations (a session's connection, DuckDB's parallel Arrow result stream, one batch per cursor
  step, extension/src/arrow_drain_function.cpp) and releases each batch in process: the result the
  server produces for a client, with no wire and no client.

b is the server's default rows per batch. quiver's server runs the same DuckDB; whatever it loses
against the fastest of these is its transport and its client.
"""

from __future__ import annotations

import os
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
ROOT = Path(__file__).resolve().parents[3]
# The bench flavour of the extension (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh, which
# ./quiver bench server runs first): the product plus quiver_arrow_drain.
EXTENSION = Path(
    os.environ.get("QUIVER_EXTENSION", ROOT / "target" / "extension" / "bench" / "quiver.duckdb_extension")
)
# The server's default rows per result batch (quiver-server-protocol's BATCH_ROWS_DEFAULT).
BATCH_ROWS = 1 << 17
DRAIN_API = f"quiver_arrow_drain(q, {BATCH_ROWS}): the server's Arrow result stream, drained in process"


def connect() -> tuple[duckdb.DuckDBPyConnection, str]:
    """A memory database with the bench extension loaded when it is built (else the reason it is not)."""
    if not EXTENSION.exists():
        return duckdb.connect(), f"no bench extension at {EXTENSION} (QUIVER_BENCH_FUNCTIONS=1 extension/build.sh)"
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{EXTENSION}'")
    return con, ""


def read_batches(reader: pa.RecordBatchReader) -> int:
    """Every batch read and let go; the rows counted."""
    return sum(batch.num_rows for batch in reader)


def drain(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    # fetchall: the one-row result read to its end, so the connection is free for the next statement.
    ((rows, batches),) = con.execute("SELECT * FROM quiver_arrow_drain(?, ?)", [sql, BATCH_ROWS]).fetchall()
    assert rows == 0 or batches >= 1, f"{rows} rows in {batches} batches"
    return rows


def missing(reason: str):
    def run(_s):
        raise FileNotFoundError(reason)

    return run


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


def query_cases(con, tables: list[str], workers: int, rows: int, no_drain: str):
    """Full scan, filtered, aggregation on one connection (each Arrow path), then N in parallel (one
    table each). A streamed path's check reads the same path once more, untimed, keeping the batches.
    """
    per = rows // workers
    cursors = [con.cursor() for _ in tables]
    for workload, sql, nbytes in m.QUERY_SHAPES:
        q = sql.format(table="m")
        want = m.result_rows(workload, rows)
        yield Case(
            workload, QUERY_ONE, "sync", TRANSPORT, "con.sql(q).to_arrow_table()",
            run=lambda _s, q=q: con.sql(q).to_arrow_table(),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=want, bytes_per_row=nbytes,
        )  # fmt: skip
        for api, open_reader in (
            (
                f"con.sql(q).to_arrow_reader({BATCH_ROWS}), batch by batch",
                lambda q=q: con.sql(q).to_arrow_reader(BATCH_ROWS),
            ),
            (
                "Arrow C stream (RecordBatchReader.from_stream), batch by batch",
                lambda q=q: pa.RecordBatchReader.from_stream(con.sql(q)),
            ),
        ):
            yield Case(
                workload,
                QUERY_ONE,
                "stream",
                TRANSPORT,
                api,
                run=lambda _s, o=open_reader: read_batches(o()),
                check=lambda n, o=open_reader, w=workload, want=want: (
                    n == want and m.result_matches(w, o().read_all(), rows)
                ),
                rows=want,
                bytes_per_row=nbytes,
            )
        yield Case(
            workload, QUERY_ONE, "stream", TRANSPORT, DRAIN_API,
            run=missing(no_drain) if no_drain else lambda _s, q=q: drain(con, q),
            check=lambda n, want=want: n == want, rows=want, bytes_per_row=nbytes,
            note="each batch is released where DuckDB made it: checked by row count",
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

        def drain_n(_s, sql=sql):
            return sum(
                in_threads(
                    [lambda c=c, t=t: drain(c, sql.format(table=t)) for c, t in zip(cursors, tables, strict=True)]
                )
            )

        want_n = m.split_result_rows(workload, per, workers)
        yield Case(
            workload, query_n(workers), "parallel", TRANSPORT, "N cursors, quiver_arrow_drain each",
            run=missing(no_drain) if no_drain else drain_n, check=lambda n, want_n=want_n: n == want_n,
            rows=want_n, bytes_per_row=nbytes, connections=workers,
            note="each batch is released where DuckDB made it: checked by row count",
        )  # fmt: skip


def cases(args):
    rows, workers = args.rows, args.workers
    source = m.table(rows)
    parts = m.worker_tables(rows, workers)
    tables = [f"m_{w}" for w in range(workers)]
    con, no_drain = connect()
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
    yield from query_cases(con, tables, workers, rows, no_drain)


def main() -> int:
    args = parse_args(__doc__)
    versions = {"duckdb": duckdb.__version__, "pyarrow": pa.__version__}
    notes = [
        "the query ceiling is the fastest in-process Arrow path of the run (to_arrow_table, to_arrow_reader, "
        f"the Arrow C stream, quiver_arrow_drain), {BATCH_ROWS:,} rows per batch where a path takes a size",
    ]
    return run_peer(PEER, args, versions, lambda: cases(args), notes)


if __name__ == "__main__":
    raise SystemExit(main())
