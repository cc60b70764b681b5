"""Peer: Hyper, seed 002's own engine, through its public Python API (PyPI tableauhyperapi, whose
wheel ships hyperd) and pantab (an Arrow bridge to the same hyperd).

Hyper has no in-memory database: every table lives in a .hyper file. Its public paths:

- row API: `Inserter.add_rows` of Python tuples, capped at ROW_API_ROWS (≈0.2 M rows/s here; the
  full size would take minutes per run). The tuples are built before the clock starts.
- Arrow in, its fastest path: the client writes an Arrow IPC stream file and hyperd reads it with
  `INSERT … SELECT * FROM external(file, FORMAT => 'arrowstream', COLUMNS => DESCRIPTOR(…))`; the
  timing includes writing the file (on /dev/shm: the fastest place this machine has).
- Arrow out, its fastest path: `COPY (query) TO file WITH (FORMAT arrowstream)`, then pyarrow reads the
  file; its row iterator (`execute_query`) runs at ≈0.3 M rows/s and is not measured at full size.
- pantab 5.3.0: `frame_to_hyper` / `frame_from_hyper_query(return_type="pyarrow")`, each call starting
  its own hyperd on its own file (that start is inside the timing: it is what the call costs).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pantab
import pyarrow as pa
import pyarrow.ipc as ipc
import rows as m
import tableauhyperapi
from common import (
    INSERT_ARROW,
    INSERT_ROWS,
    QUERY_ONE,
    Case,
    in_threads,
    insert_arrow_n,
    log,
    parse_args,
    query_n,
    run_peer,
)
from tableauhyperapi import Connection, CreateMode, HyperProcess, Inserter, Telemetry

PEER = "hyper"
ROW_API_ROWS = 1_000_000
# hyperd listens where `listen_connection` says; pantab starts hyperds of its own (measured once).
LISTEN = {"unix": None, "tcp": "tab.tcp://127.0.0.1:auto"}
PANTAB_TRANSPORT = "unix"
DESCRIPTOR = "DESCRIPTOR(id INT, sensor_id INT, value DOUBLE PRECISION, timestamp BIGINT)"


def transfer_dir() -> Path:
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    return Path(tempfile.mkdtemp(prefix="quiver-bench-hyper-", dir=base))


def recreate(con: Connection, name: str) -> None:
    con.execute_command(f"DROP TABLE IF EXISTS {name}")
    con.execute_command(f"CREATE TABLE {name} ({m.COLUMNS_DDL})")


def insert_external(con: Connection, name: str, source: pa.Table, path: Path) -> int:
    with ipc.new_stream(str(path), m.SCHEMA) as writer:
        for batch in source.to_batches(m.BATCH_ROWS):
            writer.write_batch(batch)
    count = con.execute_command(
        f"INSERT INTO {name} SELECT * FROM external('{path}', FORMAT => 'arrowstream', COLUMNS => {DESCRIPTOR})"
    )
    path.unlink()
    return count


def copy_out(con: Connection, sql: str, path: Path) -> pa.Table:
    con.execute_command(f"COPY ({sql}) TO '{path}' WITH (FORMAT arrowstream)")
    with ipc.open_stream(str(path)) as reader:
        result = reader.read_all()
    path.unlink()
    return result


def checksum(con: Connection, names: list[str]) -> m.Checksum:
    return m.of_sql_row(con.execute_list_query(m.checksum_sql(names))[0])


def pantab_checksum(path: Path) -> m.Checksum:
    result = pantab.frame_from_hyper_query(path, m.CHECKSUM_SQL.format(table="m"), return_type="pyarrow")
    return m.of_sql_row(tuple(result.to_pylist()[0].values()))


def insert_cases(con: Connection, cons: list[Connection], scratch: Path, xfer: Path, args, transport: str):
    rows, workers = args.rows, args.workers
    source = m.table(rows)
    parts = m.worker_tables(rows, workers)
    tables = [f"m_{w}" for w in range(workers)]
    row_rows = min(rows, ROW_API_ROWS)

    def prepare_rows():
        recreate(con, "m")
        return [tuple(r.values()) for r in m.table(row_rows).to_pylist()]

    def run_rows(tuples):
        with Inserter(con, "m") as inserter:
            inserter.add_rows(tuples)
            inserter.execute()

    yield Case(
        "insert.bulk", INSERT_ROWS, "sync", transport, "Inserter.add_rows (Python tuples)",
        prepare=prepare_rows, run=run_rows, check=lambda _r: checksum(con, ["m"]).matches(m.expected(row_rows)),
        rows=row_rows, bytes_per_row=m.BYTES_PER_ROW, database="file",
        note=f"capped at {ROW_API_ROWS:,} rows",
    )  # fmt: skip
    yield Case(
        "insert.bulk", INSERT_ARROW, "sync", transport, "external() over an Arrow IPC stream file",
        prepare=lambda: recreate(con, "m"), run=lambda _s: insert_external(con, "m", source, xfer / "in.arrows"),
        check=lambda _r: checksum(con, ["m"]).matches(m.expected(rows)), rows=rows,
        bytes_per_row=m.BYTES_PER_ROW, database="file",
    )  # fmt: skip

    def prepare_n():
        for t in tables:
            recreate(con, t)

    def run_n(_s):
        in_threads(
            [
                lambda c=c, t=t, p=p: insert_external(c, t, p, xfer / f"{t}.arrows")
                for c, t, p in zip(cons, tables, parts, strict=True)
            ]
        )

    yield Case(
        "insert.bulk", insert_arrow_n(workers), "parallel", transport, "N connections, external() each",
        prepare=prepare_n, run=run_n, check=lambda _r: checksum(con, tables).matches(m.expected(len(parts) * parts[0].num_rows)),
        rows=parts[0].num_rows * workers, bytes_per_row=m.BYTES_PER_ROW, connections=workers, database="file",
    )  # fmt: skip
    pantab_file = scratch / "pantab.hyper"
    if transport == PANTAB_TRANSPORT:
        yield Case(
            "insert.bulk", INSERT_ARROW, "sync", "unix", "pantab.frame_to_hyper (own hyperd per call)",
            prepare=lambda: pantab_file.unlink(missing_ok=True),
            run=lambda _s: pantab.frame_to_hyper(source, pantab_file, table="m"),
            check=lambda _r: pantab_checksum(pantab_file).matches(m.expected(rows)),
            rows=rows, bytes_per_row=m.BYTES_PER_ROW, database="file",
        )  # fmt: skip
    # The query workloads read tables loaded once here.
    recreate(con, "m")
    insert_external(con, "m", source, xfer / "in.arrows")
    prepare_n()
    run_n(None)


def query_cases(con: Connection, cons: list[Connection], scratch: Path, xfer: Path, args, transport: str):
    rows, workers = args.rows, args.workers
    per = rows // workers
    tables = [f"m_{w}" for w in range(workers)]
    pantab_file = scratch / "pantab.hyper"
    for workload, sql, nbytes in m.QUERY_SHAPES:
        yield Case(
            workload, QUERY_ONE, "sync", transport, "COPY (q) TO file (FORMAT arrowstream), pyarrow reads it",
            run=lambda _s, sql=sql: copy_out(con, sql.format(table="m"), xfer / "out.arrows"),
            check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
            bytes_per_row=nbytes, database="file",
        )  # fmt: skip
        if transport == PANTAB_TRANSPORT:
            yield Case(
                workload, QUERY_ONE, "sync", "unix", "pantab.frame_from_hyper_query (own hyperd per call)",
                run=lambda _s, sql=sql: pantab.frame_from_hyper_query(pantab_file, sql.format(table="m"), return_type="pyarrow"),
                check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
                bytes_per_row=nbytes, database="file",
            )  # fmt: skip

        def run_n(_s, sql=sql):
            return in_threads(
                [
                    lambda c=c, t=t: copy_out(c, sql.format(table=t), xfer / f"{t}.out.arrows")
                    for c, t in zip(cons, tables, strict=True)
                ]
            )

        yield Case(
            workload, query_n(workers), "parallel", transport, "N connections, COPY TO arrowstream each",
            run=run_n, check=lambda parts, w=workload: m.split_results_match(w, parts, per),
            rows=m.split_result_rows(workload, per, workers), bytes_per_row=nbytes, connections=workers, database="file",
        )  # fmt: skip


def cases(args):
    scratch = Path(tempfile.mkdtemp(prefix="quiver-bench-hyper-"))
    xfer = transfer_dir()
    try:
        for transport, listen in LISTEN.items():
            yield from transport_cases(args, transport, listen, scratch, xfer)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(xfer, ignore_errors=True)


def transport_cases(args, transport: str, listen: str | None, scratch: Path, xfer: Path):
    """Every case against one hyperd listening on `transport`, with a database of its own."""
    parameters = {"log_dir": str(scratch)}
    if listen:
        parameters["listen_connection"] = listen
    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters=parameters) as hp:
        log(PEER, f"hyperd at {hp.endpoint.connection_descriptor}")
        db = str(scratch / f"bench-{transport}.hyper")
        with Connection(hp.endpoint, db, CreateMode.CREATE_AND_REPLACE) as con:
            cons = [Connection(hp.endpoint, db) for _ in range(args.workers)]
            try:
                yield from insert_cases(con, cons, scratch, xfer, args, transport)
                yield from query_cases(con, cons, scratch, xfer, args, transport)
            finally:
                for c in cons:
                    c.close()


def main() -> int:
    args = parse_args(__doc__)
    versions = {
        "tableauhyperapi": tableauhyperapi.__version__,
        "pantab": pantab.__version__,
        "pyarrow": pa.__version__,
    }
    notes = [
        f"row API capped at {ROW_API_ROWS:,} rows; Hyper's row iterator (≈0.3 M rows/s) is not measured",
        "every case runs against a hyperd on its unix domain socket (tableauhyperapi's default on Linux), "
        "then on TCP loopback; pantab's calls start hyperds of their own and run once",
        "Arrow files for external() and COPY TO live on /dev/shm; writing/reading them is timed",
    ]
    return run_peer(PEER, args, versions, lambda: cases(args), notes)


if __name__ == "__main__":
    raise SystemExit(main())
