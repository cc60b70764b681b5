"""The quiver server under bad input and faults: tokens, limits, cancel, killed clients and
servers, SIGTERM on a file database, the stdin dead-man switch, slow consumers, concurrency, and
shared memory. Every wait is a bounded poll.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import quiver.client as quiver_client
from quiver.conformance.client_describe import describe
from quiver.rpc.client import RpcError
from quiver.wire.error import ConnectionClosed
from server_support import (
    COMMIT,
    ROOT,
    WAIT_SECONDS,
    ServerProcess,
    query_table,
    schema_message,
    wait_until,
)


@pytest.fixture
def env(extension: Path) -> dict[str, str]:
    return {"QUIVER_EXTENSION": str(extension)}


@pytest.fixture
def server(env: dict[str, str], tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess("--listen", "tcp://127.0.0.1:0", "--listen", f"unix://{tmp_path / 'q.sock'}", env=env)
    yield process
    process.kill()


def count(client, table: str) -> int:
    return query_table(client, f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()


def test_wrong_token_is_refused_with_nothing_revealed_then_closed(env: dict[str, str]) -> None:
    server = ServerProcess(env={**env, "QUIVER_TOKEN": "right-token"})
    try:
        assert server.token is None  # given, so not announced
        client = server.raw_client()
        with pytest.raises(RpcError) as error:
            client.call("connect", token="wrong-token")
        assert error.value.error_type == "AuthenticationError"
        assert error.value.error_message.endswith("authentication failed")
        with pytest.raises((ConnectionClosed, OSError)):  # the server hung up after its one answer
            client.call("connect", token="right-token")
        client.close()
        missing = server.raw_client()
        with pytest.raises(RpcError) as error:
            missing.call("connect")
        assert error.value.error_message.endswith("authentication failed")
        missing.close()
        good = server.client(token="right-token")
        assert query_table(good, "SELECT 1 AS x").num_rows == 1
        good.close()
    finally:
        server.stop()


def test_calls_before_connect_are_unauthenticated(server: ServerProcess) -> None:
    client = server.raw_client()
    for call in (lambda: client.call("execute", "SELECT 1"), lambda: query_table(client, "SELECT 1")):
        with pytest.raises(RpcError) as error:
            call()
        assert error.value.error_type == "AuthenticationError"
    client.call("connect", token=server.token)
    assert client.call("execute", "SELECT 1") is None
    client.close()


def test_reflection_is_for_connected_sessions_only(server: ServerProcess) -> None:
    # vgi_rpc.Reflection.v1 would list the methods; before `connect` it gets the one answer too.
    stranger = server.raw_client()
    refused = describe(stranger)
    assert refused.get("error", {}).get("error_type") == "AuthenticationError", refused
    assert refused["error"]["error_message"].endswith("authentication failed"), refused
    stranger.close()
    client = server.client()
    described = describe(client)["describe"]
    assert described["protocol_name"] == "quiver.server"
    assert {m["name"] for m in described["methods"]} >= {"connect", "query", "insert", "cancel"}
    client.close()


def test_generated_token_and_unix_without_token(server: ServerProcess) -> None:
    assert server.token is not None and re.fullmatch(r"[0-9a-f]{32}", server.token)
    client = server.raw_client(unix=True)
    client.call("connect")  # the socket file is 0600: no token
    assert oct(os.stat(server.unix).st_mode & 0o777) == "0o600"
    client.close()


def test_no_auth_is_refused_on_a_non_loopback_listener(env: dict[str, str]) -> None:
    with pytest.raises(AssertionError, match="loopback"):
        ServerProcess("--listen", "tcp://0.0.0.0:0", "--no-auth", env=env)


def test_no_auth_on_loopback(env: dict[str, str]) -> None:
    server = ServerProcess("--no-auth", env=env)
    try:
        client = server.client()
        assert query_table(client, "SELECT 2 AS x").column("x").to_pylist() == [2]
        client.close()
    finally:
        assert server.stop() == 0


def test_oversized_message_is_refused_and_the_server_serves_on(env: dict[str, str]) -> None:
    server = ServerProcess("--max-message-bytes", "100000", env=env)
    try:
        client = server.client()
        with pytest.raises((RpcError, ConnectionClosed, OSError), match=r"(?i)limit|exceed|large"):
            client.call("execute", "SELECT '" + "x" * 200_000 + "'")
        client.close()
        other = server.client()
        assert query_table(other, "SELECT 3 AS x").column("x").to_pylist() == [3]
        other.close()
    finally:
        server.stop()


def test_cancel_from_a_second_connection(server: ServerProcess) -> None:
    runner, canceller = server.raw_client(), server.client()
    session_id = runner.call("connect", token=server.token)["session_id"]
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            query_table(runner, "SELECT count(*) FROM range(1000000000000) a")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: canceller.call("cancel", session_id) or bool(outcome), "the query to be cancelled")
    thread.join(WAIT_SECONDS)
    assert not thread.is_alive()
    assert isinstance(outcome[0], RpcError) and outcome[0].error_type == "InterruptException"
    assert query_table(runner, "SELECT 5 AS x").column("x").to_pylist() == [5]
    assert canceller.call("cancel", "0" * 32) is False
    runner.close()
    canceller.close()


def test_a_cancel_needs_no_place_among_max_connections(env: dict[str, str]) -> None:
    # The one place is the runner's: the cancel comes on a connection that never connects, with
    # the session id as its credential (quiver.client's Connection.cancel does just that).
    server = ServerProcess("--listen", "tcp://127.0.0.1:0", "--max-connections", "1", env=env)
    try:
        runner = quiver_client.connect(f"tcp://127.0.0.1:{server.port}", token=server.token, autocommit=True)
        with pytest.raises(RpcError) as busy:
            server.client()
        assert busy.value.error_type != "AuthenticationError", busy.value
        outcome: list[BaseException | None] = []

        def run() -> None:
            try:
                runner.cursor().execute("SELECT count(*) FROM range(1000000000000) a").fetchall()
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: runner.cancel() or bool(outcome), "the query to be cancelled")
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive()
        assert isinstance(outcome[0], quiver_client.OperationalError), outcome
        assert runner.cursor().execute("SELECT 5").fetchone() == (5,)

        # A wrong id is a failed authentication, answered once; either way the connection closes.
        stranger = server.raw_client()
        with pytest.raises(RpcError) as refused:
            stranger.call("cancel", "0" * 32)
        assert refused.value.error_type == "AuthenticationError"
        with pytest.raises((RpcError, ConnectionClosed, OSError)):
            stranger.call("cancel", runner.session.session_id)
        stranger.close()
        idle = server.raw_client()
        assert idle.call("cancel", runner.session.session_id) is False  # nothing running now
        with pytest.raises((RpcError, ConnectionClosed, OSError)):
            idle.call("cancel", runner.session.session_id)
        idle.close()
        runner.close()
    finally:
        server.kill()


def test_slow_consumer_keeps_server_memory_bounded(server: ServerProcess) -> None:
    client = server.client()
    rows = 10_000_000
    sql = f"SELECT i, i * 2 AS j, i * 3 AS k FROM range({rows}) r(i)"
    result_bytes = rows * 24
    baseline = server.rss_bytes()
    peak, seen = baseline, 0
    with client.stream("query", sql) as call:
        for item in call:
            seen += item.batch.num_rows
            peak = max(peak, server.rss_bytes())
            time.sleep(0.01)
    assert seen == rows
    # Held to a few batches, nowhere near the 240 MB result.
    assert peak - baseline < result_bytes // 2, (baseline, peak)
    client.close()


KILLED_INSERTER = """
import sys
import pyarrow as pa
sys.path.insert(0, {tests!r})
from server_support import QuiverServer, schema_message
from quiver.rpc.client import Client
from quiver.transport.socket import connect_tcp
client = Client(QuiverServer, connect_tcp("127.0.0.1", {port}))
client.call("connect", token={token!r})
batch = pa.record_batch({{"id": pa.array(range(1000), pa.int32())}})
call = client.stream("insert", "victim", None, None, schema_message(batch.schema), "append")
call.exchange(batch)
call.exchange(batch)
print("SENT", flush=True)
sys.stdin.read()
"""


def test_client_killed_mid_insert_leaves_no_rows(server: ServerProcess) -> None:
    client = server.client()
    client.call("execute", "CREATE TABLE victim (id INTEGER)")
    script = KILLED_INSERTER.format(tests=str(ROOT / "tests"), port=server.port, token=server.token)
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    inserter = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment
    )
    assert inserter.stdout is not None and inserter.stdout.readline().strip() == "SENT"
    inserter.kill()
    inserter.wait(WAIT_SECONDS)
    assert count(client, "victim") == 0
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int32())})
    with client.stream("insert", "victim", None, None, schema_message(batch.schema), "append") as call:
        call.exchange(batch, COMMIT)
    wait_until(lambda: count(client, "victim") == 3, "the surviving insert")
    client.close()


def test_sixteen_clients_insert_and_query_exactly(server: ServerProcess) -> None:
    setup = server.client()
    setup.call("execute", "CREATE TABLE many (client INTEGER, i INTEGER)")
    clients, batches, rows = 16, 5, 1000
    errors: list[BaseException] = []

    def work(number: int) -> None:
        try:
            client = server.client(unix=number % 2 == 0)
            batch = pa.record_batch(
                {"client": pa.array([number] * rows, pa.int32()), "i": pa.array(range(rows), pa.int32())}
            )
            with client.stream("insert", "many", None, None, schema_message(batch.schema), "append") as call:
                for index in range(batches):
                    call.exchange(batch, COMMIT if index == batches - 1 else None)
            mine = query_table(client, f"SELECT count(*) AS n FROM many WHERE client = {number}")
            assert mine.column("n")[0].as_py() == batches * rows
            client.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS * 2)
    assert not errors, errors
    assert count(setup, "many") == clients * batches * rows
    setup.close()


def test_killed_server_gives_an_error_not_a_hang(server: ServerProcess) -> None:
    client = server.client()
    server.process.kill()
    server.process.wait(WAIT_SECONDS)
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            client.call("execute", "SELECT 1")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(WAIT_SECONDS)
    assert outcome and outcome[0] is not None


def test_sigterm_keeps_committed_rows_of_a_file_database(env: dict[str, str], tmp_path: Path) -> None:
    database = tmp_path / "kept.duckdb"
    server = ServerProcess("--database", str(database), "--no-auth", env=env)
    client = server.client()
    client.call("execute", "CREATE TABLE kept (a INTEGER); INSERT INTO kept SELECT * FROM range(1000)")
    open_transaction = server.client()
    open_transaction.call("execute", "BEGIN; INSERT INTO kept VALUES (-1)")
    assert server.stop() == 0
    client.close()
    open_transaction.close()
    with duckdb.connect(str(database)) as con:
        assert con.execute("SELECT count(*), min(a) FROM kept").fetchone() == (1000, 0)


def test_sigterm_interrupts_a_running_query(server: ServerProcess) -> None:
    client = server.client()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            query_table(client, "SELECT count(*) FROM range(1000000000000) a")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)  # only a head start: the assertion holds whether or not the query began
    server.process.send_signal(signal.SIGTERM)
    thread.join(WAIT_SECONDS)
    assert not thread.is_alive() and outcome and outcome[0] is not None
    assert server.process.wait(WAIT_SECONDS) == 0
    assert not os.path.exists(server.unix or "")


PARENT = """
import subprocess, sys
child = subprocess.Popen({command!r}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={env!r})
for line in child.stdout:
    if line.strip() == b"READY":
        break
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_watch_stdin_exits_when_the_parent_dies(env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "quiver.serve", "--no-auth", "--watch-stdin"]
    environment = {**os.environ, **env, "PYTHONPATH": str(ROOT / "python")}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(command=command, env=environment)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    server_pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait(WAIT_SECONDS)

    def gone() -> bool:
        try:
            with open(f"/proc/{server_pid}/stat") as stat:
                return stat.read().split()[2] == "Z"
        except FileNotFoundError:
            return True

    wait_until(gone, "the server to exit after its parent died")


def test_shared_memory_carries_inserts_and_queries(env: dict[str, str], tmp_path: Path) -> None:
    server = ServerProcess("--listen", f"unix://{tmp_path / 'shm.sock'}", env={**env, "VGI_RPC_SHM_DEBUG": "1"})
    client = server.client(unix=True, shm_size=256 << 20)
    batch = pa.record_batch({"i": pa.array(range(1_000_000), pa.int64())})
    with client.stream("insert", "big", None, None, schema_message(batch.schema), "create") as call:
        call.exchange(batch, COMMIT)
    table = query_table(client, "SELECT i FROM big")
    assert table.num_rows == 1_000_000
    client.close()
    assert server.stop() == 0
    summary = server.stderr_text
    match = re.search(r"outbound shm=(\d+)/\d+ batches.*inbound shm=(\d+)/", summary)
    assert match, summary
    assert int(match.group(1)) >= 1 and int(match.group(2)) >= 1
