"""Operating the server: its events on stderr (text and JSON), its Prometheus metrics, its
version, and the one-line errors of a server that cannot start.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from quiver.rpc.client import RpcError
from server_support import ROOT, WAIT_SECONDS, ServerProcess, query_table, wait_until

TOKEN = "operability-token-0123456789"


@pytest.fixture
def env(extension: Path) -> dict[str, str]:
    return {"QUIVER_EXTENSION": str(extension), "QUIVER_TOKEN": TOKEN}


def run_serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m quiver.serve` expected to end by itself (bounded)."""
    environment = {"PYTHONPATH": str(ROOT / "python"), **env}
    return subprocess.run(
        [sys.executable, "-m", "quiver.serve", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **environment},
        timeout=WAIT_SECONDS,
        stdin=subprocess.DEVNULL,
    )


def scrape(url: str) -> dict[str, float]:
    """Every sample of the exposition: `name{labels}` -> value."""
    with urllib.request.urlopen(url, timeout=WAIT_SECONDS) as response:
        assert response.status == 200
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def a_session_with_an_error_and_a_stranger(server: ServerProcess) -> None:
    client = server.client(token=TOKEN)
    assert query_table(client, "SELECT * FROM range(1000)").num_rows == 1000
    with pytest.raises(RpcError, match="no_such_table"):
        client.call("execute", "SELECT * FROM no_such_table")
    client.close()
    stranger = server.raw_client()
    with pytest.raises(RpcError, match="authentication failed"):
        stranger.call("connect", token="not-the-token")
    stranger.close()


def test_events_are_logged_as_json_lines(env: dict[str, str]) -> None:
    server = ServerProcess("--log-format", "json", "--slow-statement", "0", env=env)
    a_session_with_an_error_and_a_stranger(server)
    assert server.stop() == 0
    events = [json.loads(line) for line in server.stderr_text.splitlines() if line.startswith("{")]
    by_name = {event["event"]: event for event in events}
    assert {"session_opened", "session_closed", "statement_failed", "slow_statement", "auth_failed"} <= set(by_name), (
        events
    )
    assert by_name["session_opened"]["door"] == "tcp"
    assert by_name["session_opened"]["peer"].startswith("127.0.0.1:")
    assert by_name["session_closed"]["statements"] == 2
    assert "no_such_table" in by_name["statement_failed"]["message"]
    assert by_name["statement_failed"]["error_type"] == "CatalogException"
    slow = [event for event in events if event["event"] == "slow_statement"]
    assert [event["sql"] for event in slow] == ["SELECT * FROM range(1000)", "SELECT * FROM no_such_table"]
    assert all(event["took_ms"] >= 0 for event in slow)
    assert by_name["auth_failed"]["peer"].startswith("127.0.0.1:")
    assert "not-the-token" not in server.stderr_text and TOKEN not in server.stderr_text
    assert all(isinstance(event["ts"], float) for event in events)


def test_events_are_logged_as_text_by_default(env: dict[str, str]) -> None:
    server = ServerProcess(env=env)
    a_session_with_an_error_and_a_stranger(server)
    assert server.stop() == 0
    lines = server.stderr_text.splitlines()
    assert any(re.match(r"quiver server: session_opened door=tcp peer=127\.0\.0\.1:\d+ session=", x) for x in lines)
    assert any(x.startswith("quiver server: statement_failed door=tcp") for x in lines), lines
    assert any(x.startswith("quiver server: auth_failed door=tcp peer=127.0.0.1:") for x in lines), lines
    # No threshold given: no statement is slow.
    assert not any("slow_statement" in x for x in lines)


def test_metrics_count_sessions_statements_rows_failures_and_errors(env: dict[str, str]) -> None:
    server = ServerProcess("--metrics", "tcp://127.0.0.1:0", env=env)
    try:
        line = next(x for x in server.announced if x.startswith("METRICS:"))
        url = line.removeprefix("METRICS:")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", url), url
        before = scrape(url)
        a_session_with_an_error_and_a_stranger(server)
        after = scrape(url)

        def grew(name: str) -> float:
            return after.get(name, 0.0) - before.get(name, 0.0)

        assert grew('quiver_server_sessions_opened_total{door="tcp"}') == 1
        assert grew("quiver_server_statements_total") == 2
        assert grew("quiver_server_rows_out_total") == 1000
        assert grew("quiver_server_bytes_out_total") >= 8000
        assert grew('quiver_server_auth_failures_total{door="tcp"}') == 1
        assert grew('quiver_server_errors_total{kind="sql"}') == 1
        # The session ends on the server's side after the client hung up.
        wait_until(lambda: scrape(url)["quiver_server_sessions"] == 0, "the session's end counted")
    finally:
        assert server.stop() == 0


def test_flight_sql_statements_are_counted_too(env: dict[str, str]) -> None:
    from flight_sql_support import connect

    server = ServerProcess("--metrics", "tcp://127.0.0.1:0", "--listen", "grpc://127.0.0.1:0", env=env)
    server.token = TOKEN
    try:
        url = next(x for x in server.announced if x.startswith("METRICS:")).removeprefix("METRICS:")
        before = scrape(url)["quiver_server_statements_total"]
        with connect(server) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE counted (x INTEGER)")
            cur.execute("INSERT INTO counted VALUES (?)", parameters=(1,))
            cur.execute("SELECT count(*) FROM counted")
            assert cur.fetchone() == (1,)
        assert scrape(url)["quiver_server_statements_total"] - before == 3
    finally:
        assert server.stop() == 0


def test_version() -> None:
    done = run_serve("--version", env={})
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"quiver server \d+\.\d+\.\d+ \(DuckDB 2\.0\.0\)\n", done.stdout), done.stdout


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines, done.stderr
    return lines[-1]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--max-connections", "-3"], "must be positive"),
        (["--auth-deadline", "soon"], "not a number of seconds"),
        (["--listen", "http://127.0.0.1:0"], "http://127.0.0.1:0"),
        (["--metrics", "unix:///tmp/x"], "metrics address"),
        (["--database", "/no/such/directory/x.db"], "/no/such/directory/x.db"),
        (["--extension", "/no/such/quiver.duckdb_extension"], "no extension file"),
        (["--no-auth", "--listen", "tcp://0.0.0.0:0"], "listener is on loopback; tcp://0.0.0.0:0 is not"),
        (
            ["--no-auth", "--listen", "unix:///tmp/q.sock,grpc://0.0.0.0:0"],
            "listener is on loopback; grpc://0.0.0.0:0 is not",
        ),
    ],
)
def test_a_server_that_cannot_start_says_why_in_one_line(env: dict[str, str], flags: list[str], says: str) -> None:
    line = one_line_error(run_serve(*flags, env=env))
    assert says in line, line


def test_a_second_server_on_a_locked_database_says_so(env: dict[str, str], tmp_path: Path) -> None:
    database = str(tmp_path / "held.db")
    first = ServerProcess("--database", database, env=env)
    try:
        line = one_line_error(run_serve("--database", database, env=env))
        assert line.startswith("quiver server:") and "lock" in line, line
    finally:
        assert first.stop() == 0
