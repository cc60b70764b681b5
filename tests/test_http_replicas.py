"""Three replicas of the example worker behind nginx: one DuckDB, any replica for any turn.

Each replica is `quiver-allinone --http` with the same `QUIVER_HTTP_TOKEN_KEY`, so a stream's state
travels in its sealed token and any replica serves its next turn. nginx (Debian's package, installed
by tools/setup_nginx.sh) is started here in the foreground with its own configuration under the test's
temporary directory: round robin, no stickiness, no response buffering, and a turn whose replica is
gone retried on the next one (`proxy_next_upstream`; a carried cursor can be replayed). Its access
log records the replica (`$upstream_addr`) of every request, which shows the turns really spread,
and the bytes of its response. The replicas keep their producer turns small
(`QUIVER_HTTP_TURN_BYTES`), so a turn carries a few batches and a scan takes many turns; every turn,
the one nginx retries after a kill included, stays within that size and one batch.

The workloads are a scan (the shared-work `numbers`, and `split_numbers` planned into splits), a
table-in-out function and a scalar, each compared with plain SQL. Then a replica is SIGKILLed in the
middle of a long scan, once its first rows have reached the engine, and the query still completes
with exact results on the other two.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest

from extension_support import connect
from test_extension_http import start_allinone, stop

REPLICAS = 3
#: What the replicas' producer turns fill up to: a few batches of these scans.
TURN_BYTES = 65536
#: The zero-row batch after a turn's last data batch: its cursor carries the scan's state (the
#: init request and the position), and the framing of both batches, generously.
CURSOR_BYTES_MAX = 32 * 1024
#: How long nginx may take to listen, and a condition to come true, on a loaded machine.
DEADLINE_S = 60.0
#: The access log's line: the route, the status, the replica(s) tried, and their statuses.
LOG_FORMAT = "$request_uri $status $body_bytes_sent $upstream_addr $upstream_status"
LINE = re.compile(r"^(\S+) (\d+) (\d+) (.+?) ([\d, :-]+)$")


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        pytest.fail("no nginx on PATH or in /usr/sbin: run tools/setup_nginx.sh (tools/setup.sh runs it)")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def nginx_config(tmp: Path, port: int, upstreams: list[int]) -> str:
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=60s;" for p in upstreams)
    temp_paths = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # Run as root (a container), nginx's workers would switch to `nobody`, who cannot enter the
    # test's private temporary directory: they stay this user instead.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
daemon off;
worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} info;
events {{ worker_connections 512; }}
http {{
    log_format upstreams '{LOG_FORMAT}';
    access_log {tmp / "access.log"} upstreams;
{temp_paths}
    upstream workers {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 0;
        location / {{
            proxy_pass http://workers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # Turns stream through as the replica writes them.
            proxy_buffering off;
            # A turn whose replica died is retried on the next: every turn carries its state.
            proxy_next_upstream error timeout non_idempotent;
            proxy_next_upstream_tries {REPLICAS};
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


@dataclass
class Entry:
    route: str
    status: int
    bytes: int
    upstreams: list[str]


@dataclass
class Cluster:
    url: str
    replicas: list[tuple[subprocess.Popen, int]]
    access_log: Path

    def log(self) -> list[Entry]:
        entries = []
        for line in self.access_log.read_text().splitlines():
            match = LINE.match(line)
            assert match, f"unexpected access log line {line!r}"
            route, status, size, upstreams, _ = match.groups()
            entries.append(Entry(route, int(status), int(size), [u.strip() for u in upstreams.split(",")]))
        return entries

    def turns(self, since: int) -> list[Entry]:
        """The stream turns (`.../exchange`) logged after the first `since` entries."""
        return [e for e in self.log()[since:] if e.route.endswith("/exchange")]

    def wait_for(self, what: str, condition) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            assert time.monotonic() < deadline, f"no {what} within {DEADLINE_S} s"
            time.sleep(0.05)


def wait_listening(port: int, process: subprocess.Popen, errors: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = errors.read_text() if errors.exists() else ""
            pytest.fail(f"nginx exited with {process.returncode}: {text}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"nginx did not listen on {port} within {DEADLINE_S} s")


@pytest.fixture
def cluster(allinone: Path, tmp_path: Path) -> Iterator[Cluster]:
    nginx = nginx_binary()
    env = {"QUIVER_HTTP_TOKEN_KEY": secrets.token_hex(32), "QUIVER_HTTP_TURN_BYTES": str(TURN_BYTES)}
    replicas: list[tuple[subprocess.Popen, int]] = []
    balancer = None
    try:
        for _ in range(REPLICAS):
            replicas.append(start_allinone(allinone, env=env))
        port = free_port()
        config = tmp_path / "nginx.conf"
        config.write_text(nginx_config(tmp_path, port, [p for _, p in replicas]))
        errors = tmp_path / "error.log"
        balancer = subprocess.Popen(
            [nginx, "-p", str(tmp_path), "-e", str(errors), "-c", str(config)],
            stdin=subprocess.DEVNULL,
        )
        wait_listening(port, balancer, errors)
        yield Cluster(f"http://127.0.0.1:{port}", replicas, tmp_path / "access.log")
    finally:
        if balancer is not None:
            balancer.send_signal(signal.SIGQUIT)  # graceful: finish requests, then exit
            try:
                balancer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                balancer.kill()
                balancer.wait()
        for worker, _ in replicas:
            stop(worker)


def attached(cluster: Cluster, extension: Path, threads: str = "4") -> duckdb.DuckDBPyConnection:
    con = connect(extension, threads=threads)
    con.execute(f"ATTACH '{cluster.url}' AS w (TYPE quiver)")
    return con


def spread(turns: list[Entry]) -> set[str]:
    return {entry.upstreams[-1] for entry in turns}


def assert_bounded(entries: list[Entry], batch_bytes: int) -> None:
    """Every response within the replicas' turn size, one batch of `batch_bytes` and the cursor's."""
    over = [e for e in entries if e.bytes > TURN_BYTES + batch_bytes + CURSOR_BYTES_MAX]
    assert not over, over


def test_scan_table_in_out_and_scalar_turns_spread_over_the_replicas(extension: Path, cluster: Cluster) -> None:
    con = attached(cluster, extension)
    # Each scan with its largest output batch in bytes: a producer's turn passes its size by one at
    # most. An exchange's turn (table-in-out, scalar) is one answer to its input, not sized: None.
    workloads = [
        # A shared-work scan, batches of 1000 rows, a few a turn.
        (
            "SELECT count(*), sum(n), min(n), max(n) FROM w.numbers(300000, batch_rows := 1000)",
            "SELECT count(*), sum(range), min(range), max(range) FROM range(300000)",
            1000 * 8,
        ),
        # A scan planned into splits, each split its own stream (of batches of up to 2^20 rows).
        (
            "SELECT count(*), sum(n) FROM w.split_numbers(5000000, splits := 6)",
            "SELECT count(*), sum(range) FROM range(5000000)",
            (1 << 20) * 8,
        ),
        # Table-in-out: every input batch is a turn.
        (
            "SELECT count(*), sum(n), count(DISTINCT s) FROM w.echo((SELECT range AS n, range::VARCHAR AS s "
            "FROM range(600000)))",
            "SELECT count(*), sum(range), count(DISTINCT range::VARCHAR) FROM range(600000)",
            None,
        ),
        # A scalar: every input chunk is a turn.
        (
            "SELECT count(*), count(*) FILTER (WHERE w.upper_case(s) IS DISTINCT FROM upper(s)), "
            "count(w.upper_case(s)) FROM (SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE 'ab' || i::VARCHAR END AS s "
            "FROM range(200000) t(i))",
            "SELECT 200000, 0, count(*) FILTER (WHERE i % 7 <> 0) FROM range(200000) t(i)",
            None,
        ),
    ]
    for remote, local, batch_bytes in workloads:
        since = len(cluster.log())
        assert con.execute(remote).fetchall() == con.execute(local).fetchall(), remote
        turns = cluster.turns(since)
        assert len(turns) > 1, f"{remote}: {len(turns)} turn(s)"
        assert all(entry.status == 200 for entry in turns), [e for e in turns if e.status != 200]
        replicas = spread(turns)
        assert len(replicas) > 1, f"{remote}: every turn went to {replicas}"
        if batch_bytes is not None:
            assert_bounded(cluster.log()[since:], batch_bytes)
    con.execute("DETACH w")


def test_a_replica_killed_mid_scan_leaves_the_query_to_the_others(extension: Path, cluster: Cluster) -> None:
    con = attached(cluster, extension, threads="2")
    rows, batch_rows = 2_000_000, 1000
    since = len(cluster.log())
    # A streaming result: the engine scans only as far ahead as its buffer, so the scan is still
    # going when the first rows are read here.
    reader = con.sql(f"SELECT n FROM w.numbers({rows}, batch_rows := {batch_rows})").to_arrow_reader(10_000)
    first = reader.read_next_batch()
    assert first.num_rows > 0
    cluster.wait_for("logged turn", lambda: cluster.turns(since))
    before = cluster.turns(since)
    turns_total = rows * 8 // TURN_BYTES
    assert len(before) < turns_total // 2, f"the scan ran ahead: {len(before)} of ~{turns_total} turns already"
    # Kill the replica that served the latest finished turn: a turn still in flight went to the
    # next one in the rotation.
    victim_address = before[-1].upstreams[-1]
    victim = next(w for w, p in cluster.replicas if victim_address == f"127.0.0.1:{p}")
    killed_at = len(cluster.log())
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)

    total, count = pc.sum(first.column(0)).as_py(), first.num_rows
    for batch in reader:
        count += batch.num_rows
        total += pc.sum(batch.column(0)).as_py() or 0
    assert (count, total) == (rows, rows * (rows - 1) // 2)

    after = cluster.turns(since)[len(before) :]
    assert after, "the scan had turns left after the kill"
    assert all(entry.status == 200 for entry in after), [e for e in after if e.status != 200]
    served = spread(after)
    assert victim_address not in served, f"a turn after the kill was answered by {victim_address}"
    assert len(served) == REPLICAS - 1, served
    # Round robin sent some request to the dead replica first, and nginx retried it on another.
    since_kill = cluster.log()[killed_at:]
    retried = [entry for entry in since_kill if len(entry.upstreams) > 1]
    assert retried, "no request was retried: the dead replica was never tried"
    assert all(entry.upstreams[0] == victim_address and entry.status == 200 for entry in retried), retried
    # The replayed turn is a turn like any other: within the turn size and one batch.
    assert_bounded(cluster.log()[since:], batch_rows * 8)
    # The survivors serve the next query.
    assert con.execute("SELECT count(*), sum(n) FROM w.numbers(100000, batch_rows := 1000)").fetchone() == (
        100000,
        4_999_950_000,
    )


def test_a_malformed_turn_size_stops_the_worker_naming_it(allinone: Path) -> None:
    worker = subprocess.run(
        [str(allinone), "--http", "127.0.0.1:0"],
        env={**os.environ, "QUIVER_HTTP_TURN_BYTES": "8M"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert worker.returncode != 0
    assert "QUIVER_HTTP_TURN_BYTES" in worker.stderr and '"8M"' in worker.stderr, worker.stderr
