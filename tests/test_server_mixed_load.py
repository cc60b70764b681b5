"""Sixteen clients at once on every door of one server (the spine over Unix and TCP, Flight SQL through
ADBC): inserts, scans, parameterized queries, transactions committed and rolled back, results left
undrained. The short form of ``./quiver bench soak`` (bench/peers/server/mixed_load.py is the load).

It counts, it does not time: every statement must succeed, the server's table must hold exactly the
rows the clients committed and none they rolled back, and the server must go on serving and stop
cleanly afterwards.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_support import ServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "peers" / "server"))
import mixed_load

CLIENTS = 16
ROUNDS = 6
#: A bound on the server's growth over the run: a leak of a result, a session or an insert per round
#: would pass it by far; the working set of 16 sessions stays well below.
RSS_GROWTH_BYTES_MAX = 512 * 1024 * 1024


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("mixed-load")
    process = ServerProcess(
        "--database",
        str(directory / "load.db"),
        "--listen",
        f"unix://{directory / 'quiver.sock'}",
        "--listen",
        "tcp://127.0.0.1:0",
        "--listen",
        "grpc://127.0.0.1:0",
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0, process.stderr_text


def doors(server: ServerProcess) -> mixed_load.Doors:
    assert server.unix and server.port and server.flight_sql and server.token
    return mixed_load.Doors(unix=server.unix, tcp_port=server.port, flight_sql=server.flight_sql, token=server.token)


def test_sixteen_clients_on_every_door_leave_exact_counts(server: ServerProcess) -> None:
    load = doors(server)
    mixed_load.prepare(load)
    rss_first = server.rss_bytes()
    tally = mixed_load.run(load, CLIENTS, rounds=ROUNDS, rows=500)
    rss_last = server.rss_bytes()
    assert tally.errors == [], "\n".join(map(str, tally.errors))
    assert mixed_load.verify(load, tally) == []
    # Every role ran, and every writer committed what its rounds say.
    assert set(tally.statements) == set(mixed_load.ROLES)
    writers = [n for n in range(CLIENTS) if mixed_load.ROLES[n % len(mixed_load.ROLES)] in mixed_load.WRITERS]
    assert sorted(tally.committed) == writers
    assert all(rows == ROUNDS * 500 for rows in tally.committed.values())
    assert rss_last - rss_first < RSS_GROWTH_BYTES_MAX, (rss_first, rss_last)
    # The server serves on: a fresh client on each door.
    with load.spine(over_unix=False) as conn:
        assert conn.execute("SELECT 42").fetchone() == (42,)
    with load.flight() as conn, conn.cursor() as cur:
        cur.execute("SELECT 43")
        assert cur.fetchone() == (43,)
