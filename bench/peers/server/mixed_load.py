"""A mixed load on one quiver server: many clients at once on every door, with exact counts at the end.

Each client plays one role for all its rounds, the roles taking turns over the client numbers:

    spine_insert        DB-API over the Unix socket (shared memory): insert_arrow, commit
    spine_rollback      DB-API over TCP: insert_arrow and commit, then insert_arrow and rollback
    spine_prepared      DB-API over TCP: a parameterized query, answer checked against its closed form
    spine_scan          DB-API over the Unix socket: a full scan of the fixed table to Arrow, checked
    flight_ingest       ADBC (Flight SQL): adbc_ingest in append mode, autocommit
    flight_transaction  ADBC (Flight SQL), autocommit off: INSERT ... SELECT, commit; again, rollback;
                        a parameterized query left undrained before the next statement

Every committed row is counted by the client that wrote it, every rolled-back row carries the kind
``rolled_back``; :func:`verify` then compares the server's table with those counts, exactly. A failed
statement is recorded with its client, role and round (never raised through the threads), so a run
reports every error it met. The driver knows a server only by its addresses (:class:`Doors`), so the
tests and the soak command start servers their own way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

import quiver

#: The fixed table the readers check: ids 0..FIXED_ROWS-1, value = id * 0.5.
FIXED_ROWS = 100_000
EVENTS = "load_events"
FIXED = "load_fixed"
ROLES = (
    "spine_insert",
    "spine_rollback",
    "spine_prepared",
    "spine_scan",
    "flight_ingest",
    "flight_transaction",
)
#: The roles that commit rows to the events table.
WRITERS = ("spine_insert", "spine_rollback", "flight_ingest", "flight_transaction")


@dataclass(frozen=True)
class Doors:
    """Where one server listens, and its token."""

    unix: str
    tcp_port: int
    flight_sql: str
    token: str

    def spine(self, over_unix: bool) -> Any:
        if over_unix:
            return quiver.connect(f"unix://{self.unix}")
        return quiver.connect(f"tcp://127.0.0.1:{self.tcp_port}", token=self.token)

    def flight(self, autocommit: bool = True) -> Any:
        import adbc_driver_flightsql.dbapi as flightsql

        db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {self.token}"}
        return flightsql.connect(self.flight_sql, db_kwargs=db_kwargs, autocommit=autocommit)


@dataclass
class Tally:
    """What a run did: committed rows per client, statements, errors (client, role, round, message)."""

    committed: dict[int, int] = field(default_factory=dict)
    statements: dict[str, int] = field(default_factory=dict)
    errors: list[tuple[int, str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_rows(self, client: int, rows: int) -> None:
        with self.lock:
            self.committed[client] = self.committed.get(client, 0) + rows

    def add_statements(self, role: str, n: int) -> None:
        with self.lock:
            self.statements[role] = self.statements.get(role, 0) + n

    def add_error(self, client: int, role: str, round_number: int, error: BaseException) -> None:
        with self.lock:
            self.errors.append((client, role, round_number, f"{type(error).__name__}: {error}"))


def prepare(doors: Doors) -> None:
    """The tables every run starts from: the fixed table and an empty events table."""
    with doors.spine(over_unix=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {EVENTS}")
        conn.execute(f"CREATE TABLE {EVENTS} (client INTEGER, round INTEGER, seq BIGINT, kind VARCHAR)")
        conn.execute(f"DROP TABLE IF EXISTS {FIXED}")
        conn.execute(f"CREATE TABLE {FIXED} AS SELECT range AS id, range * 0.5 AS value FROM range({FIXED_ROWS})")
        conn.commit()


def events(client: int, round_number: int, rows: int, kind: str) -> pa.Table:
    return pa.table(
        {
            "client": pa.array([client] * rows, pa.int32()),
            "round": pa.array([round_number] * rows, pa.int32()),
            "seq": pa.array(range(rows), pa.int64()),
            "kind": pa.array([kind] * rows, pa.string()),
        }
    )


def expect(what: str, got: Any, want: Any) -> None:
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def fixed_prefix(limit: int) -> tuple[int, float]:
    """count(*), sum(value) over ids below ``limit`` in the fixed table (closed form)."""
    n = max(0, min(limit, FIXED_ROWS))
    return n, n * (n - 1) / 2 * 0.5


class Client:
    """One client: a connection of its role, opened once, used for every round."""

    def __init__(self, number: int, doors: Doors, tally: Tally, rows: int) -> None:
        self.number = number
        self.role = ROLES[number % len(ROLES)]
        self.doors = doors
        self.tally = tally
        self.rows = rows
        self.conn: Any = None

    def open(self) -> None:
        if self.role in ("spine_insert", "spine_scan"):
            self.conn = self.doors.spine(over_unix=True)
        elif self.role in ("spine_rollback", "spine_prepared"):
            self.conn = self.doors.spine(over_unix=False)
        else:
            self.conn = self.doors.flight(autocommit=self.role == "flight_ingest")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def round(self, r: int) -> None:
        getattr(self, self.role)(r)

    def spine_insert(self, r: int) -> None:
        self.conn.insert_arrow(EVENTS, events(self.number, r, self.rows, "committed"))
        self.conn.commit()
        self.tally.add_rows(self.number, self.rows)
        self.tally.add_statements(self.role, 2)

    def spine_rollback(self, r: int) -> None:
        self.conn.insert_arrow(EVENTS, events(self.number, r, self.rows, "committed"))
        self.conn.commit()
        self.tally.add_rows(self.number, self.rows)
        self.conn.insert_arrow(EVENTS, events(self.number, r, self.rows, "rolled_back"))
        self.conn.rollback()
        self.tally.add_statements(self.role, 4)

    def spine_prepared(self, r: int) -> None:
        limit = (r * 7919 + self.number) % FIXED_ROWS
        row = self.conn.execute(f"SELECT count(*), sum(value) FROM {FIXED} WHERE id < ?", [limit]).fetchone()
        want = fixed_prefix(limit)
        expect("prepared count", row[0], want[0])
        expect("prepared sum", float(row[1] or 0.0), want[1])
        self.conn.rollback()
        self.tally.add_statements(self.role, 1)

    def spine_scan(self, r: int) -> None:
        table = self.conn.execute(f"SELECT id, value FROM {FIXED}").fetch_arrow_table()
        expect("scan rows", table.num_rows, FIXED_ROWS)
        expect("scan sum", pa.compute.sum(table["value"]).as_py(), fixed_prefix(FIXED_ROWS)[1])
        self.conn.rollback()
        self.tally.add_statements(self.role, 1)

    def flight_ingest(self, r: int) -> None:
        with self.conn.cursor() as cur:
            cur.adbc_ingest(EVENTS, events(self.number, r, self.rows, "committed"), mode="append")
        self.tally.add_rows(self.number, self.rows)
        self.tally.add_statements(self.role, 1)

    def flight_transaction(self, r: int) -> None:
        insert = f"INSERT INTO {EVENTS} SELECT ?::INTEGER, ?::INTEGER, range, ? FROM range({self.rows})"
        with self.conn.cursor() as cur:
            # A result left undrained: the next statement on the session must end it, not fail.
            cur.execute(f"SELECT id FROM {FIXED} WHERE id < ?", parameters=(1000 + r,))
            cur.execute(insert, parameters=(self.number, r, "committed"))
            self.conn.commit()
            self.tally.add_rows(self.number, self.rows)
            cur.execute(insert, parameters=(self.number, r, "rolled_back"))
            self.conn.rollback()
            limit = (r * 104729 + self.number) % FIXED_ROWS
            cur.execute(f"SELECT count(*) FROM {FIXED} WHERE id < ?", parameters=(limit,))
            expect("flight count", cur.fetchone()[0], fixed_prefix(limit)[0])
            self.conn.commit()
        self.tally.add_statements(self.role, 4)


def run(
    doors: Doors,
    clients: int,
    *,
    rounds: int | None = None,
    duration_s: float | None = None,
    rows: int = 1000,
    on_round: Callable[[int], None] | None = None,
) -> Tally:
    """Runs ``clients`` clients at once, each for ``rounds`` rounds or until ``duration_s`` has passed.

    A client whose round fails records the error, reopens its connection and goes on (so one failure
    cannot hide the next). ``on_round`` is called with the number of rounds done so far (progress).
    """
    if (rounds is None) == (duration_s is None):
        raise ValueError("give exactly one of rounds and duration_s")
    tally = Tally()
    deadline = time.monotonic() + duration_s if duration_s is not None else None
    done = [0]
    done_lock = threading.Lock()

    def body(number: int) -> None:
        client = Client(number, doors, tally, rows)
        r = 0
        try:
            client.open()
            while (rounds is not None and r < rounds) or (deadline is not None and time.monotonic() < deadline):
                try:
                    client.round(r)
                except Exception as error:  # every failure is a finding, recorded
                    tally.add_error(number, client.role, r, error)
                    client.close()
                    client.open()
                r += 1
                with done_lock:
                    done[0] += 1
                    total = done[0]
                if on_round is not None:
                    on_round(total)
        except Exception as error:
            tally.add_error(number, client.role, r, error)
        finally:
            client.close()

    threads = [threading.Thread(target=body, args=(n,), name=f"load-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def verify(doors: Doors, tally: Tally) -> list[str]:
    """Differences between the server's events table and what the clients committed (empty: exact)."""
    problems = []
    with doors.spine(over_unix=True) as conn:
        rows = conn.execute(f"SELECT client, kind, count(*) FROM {EVENTS} GROUP BY ALL ORDER BY ALL").fetchall()
    seen = {(client, kind): n for client, kind, n in rows}
    for (client, kind), n in sorted(seen.items()):
        if kind != "committed":
            problems.append(f"client {client}: {n} rows of kind {kind!r} are visible")
    for client in sorted(set(tally.committed) | {c for c, _ in seen}):
        want = tally.committed.get(client, 0)
        got = seen.get((client, "committed"), 0)
        if got != want:
            problems.append(f"client {client}: {got} committed rows on the server, {want} committed by the client")
    return problems
