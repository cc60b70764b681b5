"""A result a Flight SQL client never reads to its end does not fail its next statement.

ADBC's DB-API lets `execute(q2)` follow `execute(q1)` without fetching q1; the driver tears q1's
`DoGet` stream down while q2 already runs. DuckDB serves one open result per connection, and a
transaction's statements share one, so the server ends the result left open when the next statement
of the session comes (crates/quiver-server/src/flight_sql/lease.rs), as quiver's own protocol ends an
abandoned cursor. Each sequence runs many times and must never fail: a race that passed by luck
would fail some of the rounds. Sessions are bounded by `--max-connections`, so a leaked one would
make the last check wait forever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import adbc_driver_manager
import pytest

from flight_sql_support import connect, count
from server_support import ServerProcess, wait_until

ROUNDS = 200
#: Results of this size fill the server's stream (two messages) and the client's buffers, so the
#: server still holds them open when the next statement comes.
LARGE = "SELECT range AS n, range * 2 AS twice FROM range(2000000)"
SMALL = "SELECT 42 AS answer"
#: Few, so that a session left behind shows.
MAX_CONNECTIONS = 4


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        "--listen",
        "grpc://127.0.0.1:0",
        "--max-connections",
        str(MAX_CONNECTIONS),
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0


def _failures(rounds: int, step: Callable[[int], None]) -> list[str]:
    """The rounds whose step failed, with the driver's error."""
    failures = []
    for round_ in range(rounds):
        try:
            step(round_)
        except adbc_driver_manager.Error as error:
            failures.append(f"round {round_}: {error}")
    return failures


def _all_sessions_free(server: ServerProcess) -> None:
    """Waits until as many sessions as the server serves can run at once (none leaked)."""

    def free() -> bool:
        conns = [connect(server) for _ in range(MAX_CONNECTIONS)]
        try:
            for conn in conns:
                with conn.cursor() as cur:
                    cur.execute(SMALL)
                    assert cur.fetchone() == (42,)
            return True
        except adbc_driver_manager.Error as error:
            assert "max_connections" in str(error), error
            return False
        finally:
            for conn in conns:
                conn.close()

    wait_until(free, "every session to be free")


def test_in_a_transaction_the_next_statement_ends_an_unread_result(server: ServerProcess) -> None:
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE unread_in_tx AS SELECT 1 AS id")
        conn.commit()

        def step(round_: int) -> None:
            cur.execute(LARGE if round_ % 2 else SMALL)  # never fetched
            cur.execute(f"SELECT {round_} AS round")
            assert cur.fetchone() == (round_,)

        assert _failures(ROUNDS, step) == []
        conn.commit()
    _all_sessions_free(server)


def test_commit_and_rollback_end_an_unread_result(server: ServerProcess) -> None:
    # A failed commit leaves ADBC's connection without a transaction ("missing a valid transaction"
    # for every later statement): commit and rollback must not fail for an unread result.
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE unread_end (round INTEGER)")
        conn.commit()

        def step(round_: int) -> None:
            cur.execute(f"INSERT INTO unread_end VALUES ({round_})")
            cur.execute(LARGE)  # never fetched
            if round_ % 2:
                conn.commit()
            else:
                conn.rollback()

        assert _failures(ROUNDS // 4, step) == []
        cur.execute("SELECT count(*), sum(round) FROM unread_end")
        rounds = ROUNDS // 4
        kept = [r for r in range(rounds) if r % 2]
        assert cur.fetchone() == (len(kept), sum(kept))
        conn.commit()
    _all_sessions_free(server)


def test_outside_a_transaction_an_unread_result_fails_nothing(server: ServerProcess) -> None:
    with connect(server, autocommit=True) as conn, conn.cursor() as cur:

        def step(round_: int) -> None:
            cur.execute(LARGE if round_ % 2 else SMALL)  # never fetched
            cur.execute(f"SELECT {round_} AS round")
            assert cur.fetchone() == (round_,)

        assert _failures(ROUNDS, step) == []
    _all_sessions_free(server)


def test_a_superseded_result_read_later_says_why(server: ServerProcess) -> None:
    # Two cursors of one transaction: the second statement ends the first one's result, and reading
    # the first then names the cause instead of hanging or returning a truncated result.
    with connect(server) as conn, conn.cursor() as first, conn.cursor() as second:
        first.execute(LARGE)
        second.execute(SMALL)
        assert second.fetchone() == (42,)
        with pytest.raises(adbc_driver_manager.Error, match="ended by a later statement"):
            first.fetch_arrow_table()
        conn.rollback()
        assert count(second, "unread_in_tx") == 1
        conn.rollback()


def test_clients_in_parallel_leave_results_unread_and_count_exactly(extension: Path) -> None:
    # The load that once left a connection failing every statement ("missing a valid transaction"):
    # clients at once, each in its own transactions, inserting, leaving results unread, committing
    # and rolling back. Every round must succeed and the committed rows must be exactly the expected.
    clients, rounds = 8, 40
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", env={"QUIVER_EXTENSION": str(extension)})
    try:
        with connect(process, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE parallel_rounds (client INTEGER, round INTEGER)")

        def run(client: int) -> list[str]:
            with connect(process) as conn, conn.cursor() as cur:

                def step(round_: int) -> None:
                    cur.execute(f"INSERT INTO parallel_rounds VALUES ({client}, {round_})")
                    cur.execute(LARGE if round_ % 2 else SMALL)  # never fetched
                    cur.execute("SELECT count(*) FROM parallel_rounds")
                    assert cur.fetchone()[0] >= 1
                    if round_ % 3:
                        conn.commit()
                    else:
                        conn.rollback()

                return _failures(rounds, step)

        with ThreadPoolExecutor(clients) as pool:
            failures = [f for found in pool.map(run, range(clients)) for f in found]
        assert failures == []
        with connect(process, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*), count(DISTINCT client) FROM parallel_rounds")
            kept = len([r for r in range(rounds) if r % 3])
            assert cur.fetchone() == (clients * kept, clients)
    finally:
        assert process.stop() == 0
