"""Peers: quiver's server from Python, through the native module or the pure-Python client (quiver's .venv).

    --implementation native   peer "quiver python native": quiver_native (crates/quiver-python), the
                              Rust client; results reach pyarrow through the Arrow C stream interface
    --implementation python   peer "quiver python": quiver.client, the pure-Python DB-API client

The same server as quiver's Rust rows (`python -m quiver.serve`, a memory database, DuckDB 2.0.0 with
quiver's extension, listening on TCP and a Unix socket) and the same workloads, over "tcp" and
"unix+shm" (a shared-memory segment on the Unix socket), each statement its own transaction:

- Arrow in: `insert_arrow(table, reader, "create")` into a dropped table, the table cut into batches of
  rows.BATCH_ROWS as the Rust rows are.
- Arrow out: native `query(sql).read_all()` (a pyarrow Table) and `query(sql)` read batch by batch and let
  go (as the Rust client's timed runs read); pure `execute(sql).fetch_arrow_table()`.

bench/peers/server/targets.py sets the native rows against the Rust client's of the same transport.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import rows as m
from common import INSERT_ARROW, QUERY_ONE, Case, log, parse_args, run_peer

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

PEERS = {"native": "quiver python native", "python": "quiver python"}
TRANSPORTS = ("tcp", "unix+shm")
SERVER_START_TIMEOUT_S = 120
#: Announcement lines read before READY (one per listener, the token): a bound on a confused server.
ANNOUNCE_LINES_MAX = 16


class Server:
    """`python -m quiver.serve` on a free TCP port and a Unix socket; its addresses and token read."""

    def __init__(self, socket: Path) -> None:
        environment = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
        argv = [sys.executable, "-m", "quiver.serve", "--listen", "tcp://127.0.0.1:0"]
        argv += ["--listen", f"unix://{socket}", "--watch-stdin"]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment, text=True)
        self.addresses: dict[str, str] = {}
        self.token = ""
        assert self.process.stdout is not None
        for _ in range(ANNOUNCE_LINES_MAX):
            line = self.process.stdout.readline().strip()
            if line == "READY":
                break
            if not line:
                raise RuntimeError(f"the server ended before READY (exit {self.process.wait()})")
            kind, _, value = line.partition(":")
            if kind == "PORT":
                self.addresses["tcp"] = f"tcp://127.0.0.1:{value}"
            elif kind == "UNIX":
                self.addresses["unix+shm"] = f"unix://{value}"
            elif kind == "TOKEN":
                self.token = value
        else:
            raise RuntimeError(f"no READY in the server's first {ANNOUNCE_LINES_MAX} lines")
        if set(self.addresses) != set(TRANSPORTS) or not self.token:
            raise RuntimeError(f"the server announced {self.addresses} and token {bool(self.token)}")

    def stop(self) -> None:
        """End of stdin (the server's --watch-stdin), then a bounded wait; SIGKILL past it."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(SERVER_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def running_server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory(prefix="quiver-python-bench-") as scratch:
        server = Server(Path(scratch) / "q.sock")
        try:
            yield server
        finally:
            server.stop()


class Client:
    """The three calls a case makes, on either implementation."""

    def __init__(self, implementation: str, address: str, token: str) -> None:
        self.native = implementation == "native"
        if self.native:
            import quiver_native

            self.con: Any = quiver_native.connect(address, token, shm=True)
            self.api_in, self.api_out = "insert_arrow(reader, 'create')", "query(q).read_all()"
        else:
            from quiver.client import connect

            self.con = connect(address, token=token, autocommit=True)
            self.api_in, self.api_out = "insert_arrow(reader, 'create')", "execute(q).fetch_arrow_table()"

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def fetch(self, sql: str) -> pa.Table:
        if self.native:
            return self.con.query(sql).read_all()
        return self.con.execute(sql).fetch_arrow_table()

    def stream(self, sql: str) -> int:
        """The native result read batch by batch and let go, as the Rust client's timed runs read
        theirs; returns the rows seen.
        """
        return sum(batch.num_rows for batch in self.con.query(sql))

    def insert(self, name: str, reader: pa.RecordBatchReader) -> int:
        return self.con.insert_arrow(name, reader, "create")

    def checksum(self, name: str) -> m.Checksum:
        row = self.fetch(m.checksum_sql([name])).to_pylist()[0]
        return m.of_sql_row(tuple(row.values()))

    def close(self) -> None:
        self.con.close()


def batches(source: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=m.BATCH_ROWS))


def cases(connect: Callable[[str], Client], args: Any) -> Iterator[Case]:
    rows = args.rows
    source = m.table(rows)
    for transport in TRANSPORTS:
        con = connect(transport)

        def prepare_ingest(con: Client = con) -> pa.RecordBatchReader:
            con.execute("DROP TABLE IF EXISTS m")
            return batches(source)

        yield Case(
            "insert.bulk", INSERT_ARROW, "sync", transport, con.api_in,
            prepare=prepare_ingest, run=lambda reader, con=con: con.insert("m", reader),
            check=lambda count, con=con: count == rows and con.checksum("m").matches(m.expected(rows)), rows=rows,
            bytes_per_row=m.BYTES_PER_ROW,
        )  # fmt: skip
        # The query workloads read a table loaded once here.
        con.execute("DROP TABLE IF EXISTS m")
        con.insert("m", batches(source))
        for workload, sql, nbytes in m.QUERY_SHAPES:
            yield Case(
                workload, QUERY_ONE, "sync", transport, con.api_out,
                run=lambda _s, sql=sql, con=con: con.fetch(sql.format(table="m")),
                check=lambda t, w=workload: m.result_matches(w, t, rows), rows=m.result_rows(workload, rows),
                bytes_per_row=nbytes,
            )  # fmt: skip
            if con.native:
                # The result streamed and let go, batch by batch (read_all keeps the whole table, whose
                # fresh pages a streamed read never touches); checked by reading it once more, whole.
                want = m.result_rows(workload, rows)
                yield Case(
                    workload, QUERY_ONE, "stream", transport, "query(q), batch by batch",
                    run=lambda _s, sql=sql, con=con: con.stream(sql.format(table="m")),
                    check=lambda n, w=workload, sql=sql, con=con, want=want: (
                        n == want and m.result_matches(w, con.fetch(sql.format(table="m")), rows)
                    ),
                    rows=want, bytes_per_row=nbytes,
                )  # fmt: skip
        con.close()


def main() -> int:
    implementation = "native"
    if len(sys.argv) > 2 and sys.argv[1] == "--implementation":
        implementation = sys.argv[2]
        del sys.argv[1:3]
    if implementation not in PEERS:
        sys.exit(f"quiver_python: --implementation is one of {sorted(PEERS)}, not {implementation!r}")
    peer = PEERS[implementation]
    args = parse_args(__doc__)
    versions = {"pyarrow": pa.__version__}
    if implementation == "native":
        import quiver_native

        versions["quiver_native"] = quiver_native.__version__
    notes = [
        f"{peer}: quiver's server (python -m quiver.serve) on TCP and a Unix socket with shared memory",
        f"inserts send batches of {m.BATCH_ROWS:,} rows; a scan returns the server's own batches",
    ]
    with running_server() as server:
        log(peer, f"server on {server.addresses}")

        def connect(transport: str) -> Client:
            return Client(implementation, server.addresses[transport], server.token)

        return run_peer(peer, args, versions, lambda: cases(connect, args), notes)


if __name__ == "__main__":
    raise SystemExit(main())
