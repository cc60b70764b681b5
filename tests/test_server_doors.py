"""The server's doors against hostile peers: connections that never authenticate (on spine TCP,
the Unix socket and Flight SQL alike), wrong tokens in bulk, and garbage before authentication.
Every wait is a condition polled with a generous deadline; the deadlines under test are set small
by flags.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from quiver.rpc.client import Client, RpcError
from quiver.transport.socket import SocketConnection
from server_support import WAIT_SECONDS, QuiverServer, ServerProcess, query_table, wait_until

TOKEN = "the-right-token-0123456789"
WRONG = "guess-0000-wrong"


@pytest.fixture
def env(extension: Path) -> dict[str, str]:
    return {"QUIVER_EXTENSION": str(extension), "QUIVER_TOKEN": TOKEN}


def serve(env: dict[str, str], tmp_path: Path, *flags: str) -> ServerProcess:
    """A server on every door: spine TCP, a Unix socket and Flight SQL."""
    listen = ["--listen", "tcp://127.0.0.1:0", "--listen", f"unix://{tmp_path / 'q.sock'}"]
    return ServerProcess(*listen, "--listen", "grpc://127.0.0.1:0", *flags, env=env)


@pytest.fixture
def stopped() -> Iterator[list[ServerProcess]]:
    servers: list[ServerProcess] = []
    yield servers
    for server in servers:
        server.kill()


def idle(server: ServerProcess, door: str) -> socket.socket:
    """A connection that never says a word."""
    if door == "unix":
        assert server.unix is not None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(server.unix)
        return sock
    port = server.port if door == "tcp" else int(str(server.flight_sql).rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS)


def closed_by_server(sock: socket.socket) -> bool:
    """Reads what the server sends (an HTTP/2 preface, say) until it closes; bounded."""
    sock.settimeout(WAIT_SECONDS)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def still_open(sock: socket.socket) -> bool:
    """Whether the server has not closed `sock` yet (what it sent is read and dropped)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return False
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False


def spine_client(server: ServerProcess, *, source: str = "127.0.0.1") -> Client[Any]:
    """A TCP client connected from `source` (any 127/8 address reaches a loopback listener)."""
    assert server.port is not None
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_SECONDS, source_address=(source, 0))
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Client(QuiverServer, SocketConnection(sock, peer=f"tcp:{source}"))


def adbc_select(server: ServerProcess, token: str = TOKEN) -> Any:
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {token}"}
    with flightsql.connect(server.flight_sql, db_kwargs=db_kwargs) as conn, conn.cursor() as cur:
        cur.execute("SELECT 42")
        return cur.fetchone()[0]


def test_idle_strangers_never_starve_clients_on_any_door(
    env: dict[str, str], tmp_path: Path, stopped: list[ServerProcess]
) -> None:
    # Far more silent connections than sessions and waiting room together, on every door: before
    # admission had its own pool, 64 of them locked every client out.
    server = serve(env, tmp_path, "--max-connections", "3")
    stopped.append(server)
    strangers = [idle(server, door) for door in ("tcp", "unix", "grpc") for _ in range(40)]
    tcp, unix = server.client(token=TOKEN), server.client(unix=True)
    assert query_table(tcp, "SELECT 1 AS x").column("x").to_pylist() == [1]
    assert query_table(unix, "SELECT 2 AS x").column("x").to_pylist() == [2]
    assert adbc_select(server) == 42
    # The silent ones made room: all but each door's newest 16 (the default waiting room) get closed.
    wait_until(lambda: sum(still_open(sock) for sock in strangers) <= 3 * 16, "the oldest strangers closed")
    tcp.close()
    unix.close()
    for sock in strangers:
        sock.close()


def test_connections_that_do_not_authenticate_in_time_are_closed(
    env: dict[str, str], tmp_path: Path, stopped: list[ServerProcess]
) -> None:
    server = serve(env, tmp_path, "--auth-deadline", "1")
    stopped.append(server)
    # Connected first, so by the time the strangers' deadline has passed, its own has too.
    early = server.client(token=TOKEN)
    strangers = {door: [idle(server, door) for _ in range(3)] for door in ("tcp", "unix", "grpc")}
    for door, socks in strangers.items():
        for sock in socks:
            assert closed_by_server(sock), door
            sock.close()
    # An authenticated session is not a stranger: it keeps its connection.
    assert query_table(early, "SELECT 3 AS x").column("x").to_pylist() == [3]
    early.close()
    server.stop()
    lines = [line for line in server.stderr_text.splitlines() if "connection_closed" in line]
    assert {door for door in ("tcp", "unix", "flight_sql") if any(f"door={door}" in x for x in lines)} == {
        "tcp",
        "unix",
        "flight_sql",
    }, lines
    assert all("reason=auth_deadline" in line for line in lines), lines


def test_a_burst_of_wrong_tokens_locks_its_peer_out_and_no_one_else(
    env: dict[str, str], tmp_path: Path, stopped: list[ServerProcess]
) -> None:
    server = serve(env, tmp_path)
    stopped.append(server)
    for _ in range(30):
        guesser = spine_client(server)
        with pytest.raises(RpcError, match="authentication failed"):
            guesser.call("connect", token=WRONG)
        guesser.close()
    # The guesser's address is locked out: even the right token is refused from it, on every door.
    locked = spine_client(server)
    with pytest.raises(RpcError, match="authentication failed"):
        locked.call("connect", token=TOKEN)
    locked.close()
    with pytest.raises(Exception, match="authentication failed"):
        adbc_select(server)
    # Everyone else is served: another address, and the Unix socket.
    other = spine_client(server, source="127.0.0.2")
    other.call("connect", token=TOKEN)
    assert query_table(other, "SELECT 4 AS x").column("x").to_pylist() == [4]
    other.close()
    unix = server.client(unix=True)
    assert query_table(unix, "SELECT 5 AS x").column("x").to_pylist() == [5]
    unix.close()
    server.stop()
    failures = [line for line in server.stderr_text.splitlines() if "auth_failed" in line]
    # Logged while compared (ten free tries, then once per lockout), never a line per try.
    assert 1 <= len(failures) < 30, failures
    assert all("peer=127.0.0.1:" in line for line in failures), failures
    assert any("locked_out_ms=" in line for line in failures), failures
    assert WRONG not in server.stderr_text and TOKEN not in server.stderr_text


def test_flight_sql_guesses_are_throttled_too(
    env: dict[str, str], tmp_path: Path, stopped: list[ServerProcess]
) -> None:
    server = serve(env, tmp_path)
    stopped.append(server)
    client = flight.FlightClient(server.flight_sql)
    wrong = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {WRONG}".encode())])
    for _ in range(30):
        with pytest.raises(flight.FlightUnauthenticatedError, match="authentication failed"):
            list(client.list_actions(options=wrong))
    right = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])
    with pytest.raises(flight.FlightUnauthenticatedError, match="authentication failed"):
        list(client.list_actions(options=right))
    client.close()
    other = spine_client(server, source="127.0.0.2")
    other.call("connect", token=TOKEN)
    other.close()
    server.stop()
    failures = [line for line in server.stderr_text.splitlines() if "auth_failed" in line]
    assert failures and all("door=flight_sql" in line and "peer=127.0.0.1:" in line for line in failures)
    assert WRONG not in server.stderr_text


def error_records(sock: socket.socket) -> list[dict[bytes, bytes]]:
    """The metadata of every batch of the one reply stream the server sends."""
    reader = pa.ipc.open_stream(sock.makefile("rb"))
    records = []
    while True:
        try:
            _, metadata = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            return records
        records.append(dict(metadata.to_dict()) if metadata is not None else {})


def ipc_stream(table: pa.Table, metadata: dict[str, str] | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches():
            writer.write_batch(batch, custom_metadata=metadata)
    return sink.getvalue().to_pybytes()


GARBAGE = {
    "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    # A readable request that names no method.
    "no method": ipc_stream(pa.table({"x": [1]})),
    # A method of no protocol the server hosts, with the right framing.
    "unknown method": ipc_stream(
        pa.table({"x": [1]}),
        {"vgi_rpc.method": "dump_everything", "vgi_rpc.request_version": "1", "vgi_rpc.protocol": "quiver.server"},
    ),
    # `connect` whose parameters are not connect's.
    "bad parameters": ipc_stream(
        pa.table({"token": [7]}),
        {"vgi_rpc.method": "connect", "vgi_rpc.request_version": "1", "vgi_rpc.protocol": "quiver.server"},
    ),
    # A message announcing a 300 kB body: over the 64 KiB a stranger may send.
    "oversized": ipc_stream(pa.table({"x": pa.array([b"x" * 300_000], pa.binary())}))[:4096],
}


@pytest.mark.parametrize("door", ["tcp", "unix"])
@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_before_authentication_learns_only_that_it_failed(
    env: dict[str, str], tmp_path: Path, stopped: list[ServerProcess], door: str, kind: str
) -> None:
    if not stopped:
        stopped.append(serve(env, tmp_path))
    server = stopped[0]
    sock = idle(server, door)
    sock.settimeout(WAIT_SECONDS)
    sock.sendall(GARBAGE[kind])
    if kind == "oversized":
        sock.shutdown(socket.SHUT_WR)
    records = error_records(sock)
    assert closed_by_server(sock)
    sock.close()
    assert len(records) == 1, records
    (record,) = records
    assert record.get(b"vgi_rpc.log_message", b"").endswith(b"authentication failed"), record
    assert b"vgi_rpc.server_id" not in record and b"vgi_rpc.request_id" not in record, record
    text = b" ".join(record.values())
    for revealing in (b"quiver-server", b"quiver.server", b"limit", b"bytes", b"method", b"protocol"):
        assert revealing not in text, (revealing, record)
