"""Remote workers under DuckDB: `ATTACH 'http://...' AS w (TYPE quiver, TOKEN '...', CA_FILE '...')`.

quiver's example worker serves vgi-rpc's HTTP transport (`quiver-allinone --http`), and so does
vgi-python 0.47's own server (`vgi-serve --http`) for tests/vgi_oracle/third_party_worker.py; the
engine attaches both and runs every function kind with exact results: a table function (in
parallel), a scalar, a table-in-out function. A bearer token is required and checked, HTTPS is
served with a certificate the engine trusts through CA_FILE, and an interrupt stops a query whose
HTTP worker hangs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from extension_support import ROOT, connect

SUM_1000 = 499_500
#: How long a worker may take to announce its port on a loaded machine.
START_TIMEOUT_S = 60.0
ENDLESS = "SELECT sum(n) FROM w.numbers(1000000000000, batch_rows := 1000000)"
THIRD_PARTY = ROOT / "tests" / "vgi_oracle" / "third_party_worker.py"


def start_allinone(allinone: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    worker = subprocess.Popen(
        [str(allinone), "--http", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert worker.stdout is not None
    line = worker.stdout.readline().strip()
    assert line.startswith("PORT:"), f"the worker announced {line!r} (exit {worker.poll()})"
    return worker, int(line.removeprefix("PORT:"))


def stop(worker: subprocess.Popen) -> None:
    if worker.poll() is not None:
        return
    worker.terminate()
    try:
        worker.wait(timeout=10)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


@pytest.fixture
def http_worker(allinone: Path) -> Iterator[int]:
    worker, port = start_allinone(allinone)
    yield port
    stop(worker)


def test_every_function_kind_over_http(extension: Path, http_worker: int) -> None:
    con = connect(extension, threads="4")
    con.execute(f"ATTACH 'http://127.0.0.1:{http_worker}' AS w (TYPE quiver)")
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
    # Many batches, several scan threads: each its own HTTP connection, every row exactly once.
    assert con.execute("SELECT count(*), sum(n) FROM w.numbers(3000000, batch_rows := 10000)").fetchone() == (
        3_000_000,
        4_499_998_500_000,
    )
    assert con.execute("SELECT w.upper_case('hello'), w.upper_case(NULL)").fetchone() == ("HELLO", None)
    assert con.execute(
        "SELECT count(*) FROM range(100000) t(i) WHERE w.upper_case('x' || i::VARCHAR) = 'X' || i::VARCHAR"
    ).fetchone() == (100_000,)
    assert con.execute("SELECT * FROM w.echo((SELECT 1 AS x, 'a' AS s UNION ALL SELECT 2, NULL))").fetchall() == [
        (1, "a"),
        (2, None),
    ]
    assert con.execute("SELECT sum(n) FROM w.echo((SELECT n FROM w.numbers(100000)))").fetchone() == (4_999_950_000,)
    con.execute("DETACH w")


def test_a_bearer_token_is_required(extension: Path, allinone: Path) -> None:
    worker, port = start_allinone(allinone, env={"QUIVER_HTTP_TOKEN": "open-sesame"})
    try:
        con = connect(extension)
        with pytest.raises(duckdb.Error, match="HTTP 401"):
            con.execute(f"ATTACH 'http://127.0.0.1:{port}' AS w (TYPE quiver)")
        with pytest.raises(duckdb.Error, match="HTTP 401"):
            con.execute(f"ATTACH 'http://127.0.0.1:{port}' AS w (TYPE quiver, TOKEN 'wrong')")
        con.execute(f"ATTACH 'http://127.0.0.1:{port}' AS w (TYPE quiver, TOKEN 'open-sesame')")
        assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
        with pytest.raises(duckdb.Error, match="TOKEN and CA_FILE apply to http"):
            con.execute(f"ATTACH 'launch:{allinone}' AS l (TYPE quiver, TOKEN 'x')")
        # SIGTERM drains the worker: it stops accepting and exits 0.
        worker.terminate()
        assert worker.wait(timeout=30) == 0
    finally:
        stop(worker)


def openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_https_with_the_engine_trusting_a_private_ca(extension: Path, allinone: Path, tmp_path: Path) -> None:
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
    ca, ca_key, cert, key = (tmp_path / n for n in ("ca.pem", "ca.key", "cert.pem", "key.pem"))
    openssl("req", "-x509", *ec, "-subj", "/CN=quiver test CA", "-keyout", str(ca_key), "-out", str(ca))
    openssl(
        "req", "-x509", *ec, "-subj", "/CN=localhost",
        "-addext", "subjectAltName=DNS:localhost", "-addext", "basicConstraints=critical,CA:FALSE",
        "-CA", str(ca), "-CAkey", str(ca_key), "-keyout", str(key), "-out", str(cert),
    )  # fmt: skip
    worker, port = start_allinone(allinone, "--http-tls-cert", str(cert), "--http-tls-key", str(key))
    try:
        con = connect(extension)
        with pytest.raises(duckdb.Error, match="certificate"):
            con.execute(f"ATTACH 'https://localhost:{port}' AS w (TYPE quiver)")
        con.execute(f"ATTACH 'https://localhost:{port}' AS w (TYPE quiver, CA_FILE '{ca}')")
        assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
        assert con.execute("SELECT w.upper_case('tls')").fetchone() == ("TLS",)
    finally:
        stop(worker)


def test_interrupt_stops_a_query_on_a_hung_http_worker(extension: Path, allinone: Path) -> None:
    worker, port = start_allinone(allinone)
    try:
        con = connect(extension, threads="2")
        con.execute(f"ATTACH 'http://127.0.0.1:{port}' AS w (TYPE quiver)")
        assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)

        def hang_then_interrupt() -> None:
            time.sleep(0.5)
            os.kill(worker.pid, signal.SIGSTOP)  # no answer will ever come
            time.sleep(0.5)
            con.interrupt()

        thread = threading.Thread(target=hang_then_interrupt)
        thread.start()
        started = time.monotonic()
        with pytest.raises(duckdb.InterruptException):
            con.execute(ENDLESS)
        thread.join()
        assert time.monotonic() - started < 30
        os.kill(worker.pid, signal.SIGCONT)
        # The engine dropped the hung calls' connections; the worker serves the next query.
        assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (SUM_1000,)
    finally:
        os.kill(worker.pid, signal.SIGCONT)
        stop(worker)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"vgi-serve exited with {process.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"vgi-serve did not listen on {port} within {START_TIMEOUT_S} s")


def test_vgi_pythons_own_http_worker_attaches(extension: Path, tmp_path: Path) -> None:
    serve = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python")).parent / "vgi-serve"
    assert serve.exists(), f"no vgi-serve at {serve}: run ./quiver test (setup.sh builds .venv-vgi)"
    port = free_port()
    env = {**os.environ, "VGI_WORKER_SQLITE_PATH": str(tmp_path / "vgi-worker.sqlite")}
    command = [str(serve), "--http", "--host", "127.0.0.1", "--port", str(port), str(THIRD_PARTY)]
    worker = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    try:
        wait_for_port(port, worker)
        con = connect(extension, threads="2")
        con.execute(f"ATTACH 'http://127.0.0.1:{port}' AS tp (TYPE quiver)")
        assert con.execute("SELECT count(*), sum(i), sum(sq) FROM tp.squares(10000)").fetchone() == (
            10000,
            49_995_000,
            333_283_335_000,
        )
        rows = con.execute("SELECT tp.repeat_text(s, 3) FROM (VALUES ('ab'), (NULL), ('x')) t(s)").fetchall()
        assert rows == [("ababab",), (None,), ("xxx",)]
        rows = con.execute("SELECT x FROM tp.chunked((SELECT range AS x FROM range(7)))").fetchall()
        assert sorted(rows) == [(-7,), (0,), (1,), (2,), (3,), (4,), (5,), (6,)]
    finally:
        stop(worker)
