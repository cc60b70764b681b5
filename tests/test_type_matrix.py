"""Type fidelity as a matrix: every DuckDB type (extremes, NULLs, nested) and the Arrow types DuckDB
has no type of its own for, through each client, in both directions.

Query: a column of the type on the server, read by the DB-API client, quiver_native, the Node package
(through apache-arrow, ``node/test/arrow_relay.js``) and ADBC (Flight SQL). The Arrow a client
receives must be what DuckDB itself produces in process (quiver changes nothing on the way); its
values are then read back into DuckDB and compared with the originals.
Insert: the same values as DuckDB's Arrow (and the Arrow-only cases) inserted by the DB-API client,
quiver_native and the Node package into a new table, compared on the server with the originals.

Each cell is ``exact``, ``converted`` (values equal under another type), ``lossy``, ``invalid`` (an
Arrow array that fails validation) or ``error`` (a clear error). The expectations are in
``type_matrix_cases.py``; docs/types.md is rendered from what this test observed and must match
(``QUIVER_WRITE_TYPES_DOC=1`` rewrites it).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import quiver
from flight_sql_support import connect as adbc_connect
from server_support import ServerProcess
from type_matrix_cases import ARROW_CASES, DUCK_CASES, ArrowCase, DuckCase

DOC = Path(__file__).resolve().parent.parent / "docs" / "types.md"
QUERY_CLIENTS = ("dbapi", "quiver_native", "node", "adbc")
LOSSLESS_CLIENTS = ("dbapi", "quiver_native", "node")
INSERT_CLIENTS = ("dbapi", "quiver_native", "node")
NODE_RELAY = Path(__file__).resolve().parent.parent / "node" / "test" / "arrow_relay.js"
LOSSLESS = "SET arrow_lossless_conversion = true"


@dataclass(frozen=True)
class Cell:
    category: str
    text: str


# -- the clients ------------------------------------------------------------------------------


class NodeError(Exception):
    """An error the Node package threw, with its ``code`` and ``errorType``."""

    def __init__(self, reply: dict[str, Any]) -> None:
        super().__init__(reply["message"])
        self.code = reply["code"]
        self.error_type = reply["errorType"]


class NodeClient:
    """The Node package driven through ``node/test/arrow_relay.js``: apache-arrow Tables both ways."""

    def __init__(self, address: str) -> None:
        self.process = subprocess.Popen(
            ["node", str(NODE_RELAY), address], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def request(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the Node relay ended (exit {self.process.poll()})"
        reply = json.loads(line)
        if "error" in reply:
            raise NodeError(reply["error"])
        return reply

    def query(self, sql: str) -> pa.Table:
        ipc = base64.b64decode(self.request(op="query", sql=sql)["ipc"])
        return pa.ipc.open_stream(ipc).read_all()

    def execute(self, sql: str) -> None:
        self.request(op="execute", sql=sql)

    def insert(self, table: str, data: pa.Table) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        self.request(op="insert", table=table, ipc=base64.b64encode(sink.getvalue().to_pybytes()).decode())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


class Clients:
    """One connection per client to the same server; each can query into Arrow and insert Arrow."""

    def __init__(self, server: ServerProcess) -> None:
        import quiver_native

        self.native_module = quiver_native
        self.dbapi = quiver.connect(f"unix://{server.unix}", autocommit=True)
        self.native = quiver_native.connect(f"unix://{server.unix}")
        self.adbc = adbc_connect(server, autocommit=True)
        self.node = NodeClient(f"unix://{server.unix}")

    def close(self) -> None:
        self.dbapi.close()
        self.native.close()
        self.adbc.close()
        self.node.close()

    def execute(self, sql: str) -> None:
        self.dbapi.execute(sql)

    def query(self, client: str, sql: str) -> pa.Table:
        if client == "dbapi":
            table = self.dbapi.execute(sql).fetch_arrow_table()
            self.dbapi.execute(sql).fetchall()  # the rows convert too
            return table
        if client == "quiver_native":
            return self.native.query(sql).read_all()
        if client == "node":
            return self.node.query(sql)
        with self.adbc.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetch_arrow_table()

    def set_lossless(self, client: str, on: bool) -> None:
        sql = LOSSLESS if on else "RESET arrow_lossless_conversion"
        if client == "dbapi":
            self.dbapi.execute(sql)
        elif client == "node":
            self.node.execute(sql)
        else:
            self.native.execute(sql)

    def insert(self, client: str, table: str, data: pa.Table) -> None:
        if client == "dbapi":
            self.dbapi.insert_arrow(table, data, mode="create")
        elif client == "node":
            self.node.insert(table, data)
        else:
            self.native.insert_arrow(table, data, "create")


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    socket = tmp_path_factory.mktemp("types") / "q.sock"
    process = ServerProcess(
        "--listen",
        f"unix://{socket}",
        "--listen",
        "grpc://127.0.0.1:0",
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0


@pytest.fixture(scope="module")
def clients(server: ServerProcess) -> Iterator[Clients]:
    opened = Clients(server)
    yield opened
    opened.close()


# -- the SQL of a case ------------------------------------------------------------------------


def table_name(prefix: str, case_name: str) -> str:
    return prefix + "_" + re.sub(r"[^a-z0-9]+", "_", case_name.lower()).strip("_")


def values_sql(case: DuckCase) -> str:
    literals = [*case.literals, "NULL"]
    rows = ", ".join(f"({i}, CAST({literal} AS {case.sql_type}))" for i, literal in enumerate(literals, 1))
    return f"SELECT * FROM (VALUES {rows}) t(i, v)"


def reference(lossless: bool = False) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    if lossless:
        connection.execute(LOSSLESS)
    return connection


def same_values(duck: duckdb.DuckDBPyConnection, original: str, back: str, sql_type: str) -> bool | None:
    """Whether ``back``'s values equal ``original``'s under ``sql_type``; ``None`` when they do not cast."""
    try:
        row = duck.execute(
            f"SELECT count(*) = (SELECT count(*) FROM {original}), "
            f"bool_and(o.v IS NOT DISTINCT FROM CAST(b.v AS {sql_type})) "
            f"FROM {original} o JOIN {back} b USING (i)"
        ).fetchone()
    except duckdb.Error:
        return None
    assert row is not None
    return bool(row[0]) and bool(row[1])


def same_arrow(left: pa.ChunkedArray, right: pa.ChunkedArray) -> bool:
    """Equal type and values, NaN equal to NaN (Arrow's ``equals`` says no) and -0.0 apart from 0.0."""
    if left.type != right.type:
        return False
    if left.equals(right):
        return True
    return pa.types.is_floating(left.type) and [repr(v) for v in left.to_pylist()] == [
        repr(v) for v in right.to_pylist()
    ]


def type_of(duck: duckdb.DuckDBPyConnection, table: str) -> str:
    return duck.execute(f"SELECT column_type FROM (DESCRIBE {table}) WHERE column_name = 'v'").fetchone()[0]  # type: ignore[index]


def verdict(same: bool | None, original_type: str, back_type: str) -> Cell:
    if same is None or not same:
        return Cell("lossy", f"lossy (reads back as {back_type})")
    if back_type == original_type:
        return Cell("exact", "exact")
    return Cell("converted", f"as {back_type}")


def failure(error: BaseException) -> Cell:
    kind = getattr(error, "error_type", None) or type(error).__name__
    return Cell("error", f"error: {kind}")


# -- query --------------------------------------------------------------------------------------


def query_cell(clients: Clients, client: str, case: DuckCase, lossless: bool) -> tuple[Cell, str]:
    """The outcome of reading the case's table through ``client``, and the Arrow type it received."""
    name = table_name("q", case.name)
    sql = f"SELECT i, v FROM {name} ORDER BY i"
    duck = reference(lossless)
    duck.execute(f"CREATE TABLE original AS {values_sql(case)}")
    expected = duck.sql("SELECT i, v FROM original ORDER BY i").to_arrow_table()
    try:
        received = clients.query(client, sql)
    except Exception as error:  # the client's own error class is what the cell records
        return failure(error), str(expected.schema.field("v").type)
    arrow_type = str(received.schema.field("v").type)
    try:
        received.validate(full=True)
    except pa.ArrowInvalid:
        return Cell("invalid", "invalid Arrow"), arrow_type
    # quiver hands on DuckDB's own Arrow: type and values as DuckDB produces them in process.
    if not same_arrow(received.column("v"), expected.column("v")):
        return Cell("differs", f"differs from DuckDB's Arrow ({expected.schema.field('v').type})"), arrow_type
    duck.register("back", received)
    return verdict(
        same_values(duck, "original", "back", case.sql_type), type_of(duck, "original"), type_of(duck, "back")
    ), arrow_type


# -- insert -------------------------------------------------------------------------------------


def insert_duck_cell(clients: Clients, client: str, case: DuckCase) -> Cell:
    """Inserts DuckDB's Arrow of the case's values; compares the new table with the original on the server."""
    data = reference().sql(values_sql(case)).to_arrow_table()
    target = table_name(f"i_{client}", case.name)
    try:
        clients.insert(client, target, data)
    except Exception as error:
        return failure(error)
    original = table_name("q", case.name)
    back_type = server_type(clients, target)
    same = server_same(clients, original, target, case.sql_type)
    return verdict(same, server_type(clients, original), back_type)


def server_type(clients: Clients, table: str) -> str:
    rows = clients.dbapi.execute(f"SELECT column_type FROM (DESCRIBE {table}) WHERE column_name = 'v'").fetchall()
    return str(rows[0][0])


def server_same(clients: Clients, original: str, back: str, sql_type: str) -> bool | None:
    try:
        row = clients.dbapi.execute(
            f"SELECT count(*) = (SELECT count(*) FROM {original}), "
            f"bool_and(o.v IS NOT DISTINCT FROM CAST(b.v AS {sql_type})) "
            f"FROM {original} o JOIN {back} b USING (i)"
        ).fetchone()
    except quiver.client.Error:
        return None
    assert row is not None
    return bool(row[0]) and bool(row[1])


def insert_arrow_cell(clients: Clients, client: str, case: ArrowCase) -> tuple[Cell, str]:
    """Inserts an Arrow-only column; reads it back through the same client and compares with what was sent."""
    sent = pa.table({"i": pa.array(range(1, len(case.array) + 1), pa.int32()), "v": case.array})
    target = table_name(f"a_{client}", case.name)
    try:
        clients.insert(client, target, sent)
    except Exception as error:
        return failure(error), ""
    duck_type = server_type(clients, target)
    # Read back in DuckDB's lossless form, so an extension type (arrow.uuid) can come back as itself.
    clients.set_lossless(client, True)
    try:
        back_table = clients.query(client, f"SELECT i, v FROM {target} ORDER BY i")
    finally:
        clients.set_lossless(client, False)
    back, expected = back_table.column("v"), sent.column("v")
    if back.type == expected.type:
        return (Cell("exact", "exact") if same_arrow(back, expected) else Cell("lossy", "lossy")), duck_type
    try:
        same: bool | None = same_arrow(back.cast(expected.type), expected)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # No Arrow cast between the two (duration and interval, list_view and list): compare as DuckDB reads them.
        duck = reference()
        duck.register("sent", sent)
        duck.register("back", back_table)
        same = same_values(duck, "sent", "back", type_of(duck, "sent"))
    if not same:
        return Cell("lossy", f"lossy (back as {back.type})"), duck_type
    return Cell("converted", f"as {back.type}"), duck_type


# -- the matrix ---------------------------------------------------------------------------------


@dataclass
class Observed:
    duck: dict[str, dict[str, Any]]
    arrow: dict[str, dict[str, Any]]


def observe(clients: Clients) -> Observed:
    for case in DUCK_CASES:
        clients.execute(f"CREATE TABLE {table_name('q', case.name)} AS {values_sql(case)}")
    duck: dict[str, dict[str, Any]] = {}
    for case in DUCK_CASES:
        row: dict[str, Any] = {}
        for client in QUERY_CLIENTS:
            row[f"query {client}"], row["arrow"] = query_cell(clients, client, case, lossless=False)
        if case.lossless:
            for client in LOSSLESS_CLIENTS:
                clients.set_lossless(client, True)
                try:
                    row[f"lossless {client}"], row["arrow lossless"] = query_cell(clients, client, case, lossless=True)
                finally:
                    clients.set_lossless(client, False)
        for client in INSERT_CLIENTS:
            row[f"insert {client}"] = insert_duck_cell(clients, client, case)
        duck[case.name] = row
    arrow: dict[str, dict[str, Any]] = {}
    for acase in ARROW_CASES:
        row = {}
        for client in INSERT_CLIENTS:
            row[f"insert {client}"], row["duckdb"] = insert_arrow_cell(clients, client, acase)
        arrow[acase.name] = row
    return Observed(duck, arrow)


def test_the_type_matrix_holds_and_is_documented(clients: Clients) -> None:
    observed = observe(clients)
    mismatches: list[str] = []
    for case in DUCK_CASES:
        row = observed.duck[case.name]
        for client in QUERY_CLIENTS:
            expect(mismatches, f"{case.name} query {client}", case.expected_query(client), row[f"query {client}"])
        if case.lossless:
            for client in LOSSLESS_CLIENTS:
                expect(mismatches, f"{case.name} lossless {client}", case.lossless_query, row[f"lossless {client}"])
        for client in INSERT_CLIENTS:
            expect(mismatches, f"{case.name} insert {client}", case.insert, row[f"insert {client}"])
    for acase in ARROW_CASES:
        for client in INSERT_CLIENTS:
            expect(
                mismatches,
                f"{acase.name} insert {client}",
                acase.expected_insert(client),
                observed.arrow[acase.name][f"insert {client}"],
            )
    assert not mismatches, "\n".join(mismatches)

    text = render(observed)
    if os.environ.get("QUIVER_WRITE_TYPES_DOC") == "1":
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/types.md differs from what was observed: rerun with QUIVER_WRITE_TYPES_DOC=1"


def expect(mismatches: list[str], where: str, category: str, cell: Cell) -> None:
    if cell.category != category:
        mismatches.append(f"{where}: expected {category}, observed {cell.text}")


# -- docs/types.md ------------------------------------------------------------------------------

DOC_HEAD = """# Types through quiver's clients

Generated by `tests/test_type_matrix.py` from what it observed against a real server (DuckDB 2.0.0);
do not edit by hand (`QUIVER_WRITE_TYPES_DOC=1 .venv/bin/python -m pytest tests/test_type_matrix.py`
rewrites it). The cases and their expectations are in `tests/type_matrix_cases.py`.

- **exact**: the values come back equal, under the same DuckDB type (read back into DuckDB).
- **as T**: the values come back equal under another type T (a documented conversion).
- **lossy**: some values change; **invalid Arrow**: an array that fails Arrow's validation;
  **error: E**: refused with a clear error of class E.

Query results are DuckDB's own Arrow (the test checks every client receives exactly what DuckDB
produces in process). Each session can choose DuckDB's Arrow settings with SQL, for example
`SET arrow_lossless_conversion = true` (the *lossless* columns), `SET produce_arrow_string_view = true`,
`SET arrow_large_buffer_size = true`, `SET arrow_output_list_view = true`, `SET TimeZone = 'Europe/Paris'`.
The DB-API client reads DuckDB's lossless HUGEINT/UHUGEINT as `int` and TIMETZ as `datetime.time` with
its offset in `fetch*`.
"""


def render(observed: Observed) -> str:
    lines = [DOC_HEAD, "## DuckDB types: query and insert", ""]
    head = ["DuckDB type", "Arrow (query)"]
    head += [f"query {c}" for c in QUERY_CLIENTS]
    head += ["Arrow (lossless)"] + [f"lossless {c}" for c in LOSSLESS_CLIENTS]
    head += [f"insert {c}" for c in INSERT_CLIENTS]
    lines += table_lines(head)
    for case in DUCK_CASES:
        row = observed.duck[case.name]
        cells = [f"{case.name} (`{case.sql_type}`)", f"`{row['arrow']}`"]
        cells += [row[f"query {c}"].text for c in QUERY_CLIENTS]
        cells.append(f"`{row['arrow lossless']}`" if case.lossless else "same")
        cells += [row[f"lossless {c}"].text if case.lossless else "" for c in LOSSLESS_CLIENTS]
        cells += [row[f"insert {c}"].text for c in INSERT_CLIENTS]
        lines.append(cell_line(cells))
    lines += ["", "Why, where a row is not exact:", ""]
    lines += [f"- **{case.name}**: {case.why}" for case in DUCK_CASES if case.why]
    lines += ["", "## Arrow types without a DuckDB type of their own: insert", ""]
    lines += table_lines(["Arrow type", "DuckDB column"] + [f"insert {c}" for c in INSERT_CLIENTS])
    for acase in ARROW_CASES:
        row = observed.arrow[acase.name]
        lines.append(cell_line([f"`{acase.name}`", row["duckdb"]] + [row[f"insert {c}"].text for c in INSERT_CLIENTS]))
    lines += ["", "Why, where a row is not exact:", ""]
    lines += [f"- **{acase.name}**: {acase.why}" for acase in ARROW_CASES if acase.why]
    return "\n".join(lines) + "\n"


def table_lines(head: list[str]) -> list[str]:
    return [cell_line(head), cell_line(["---"] * len(head))]


def cell_line(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
