"""Workers that crash, exit or hang mid-query: a SQL error naming the worker and the tail of its
stderr, DuckDB still usable, no zombie processes, shared memory segments unlinked, and an
interrupted query cancelling the worker stream.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import duckdb
import pytest

from extension_support import children, connect, shm_segments, zombies

ENDLESS = "SELECT sum(n) FROM w.numbers(1000000000000, batch_rows := 1000000)"


def after(delay_s: float, action) -> threading.Thread:
    def run() -> None:
        time.sleep(delay_s)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def kill_children() -> None:
    for pid, _ in children():
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode", ["stdio", "launch"])
def test_worker_killed_mid_scan(extension: Path, allinone: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = shm_segments()
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    con = connect(extension, threads="2")
    prefix = "launch:" if mode == "launch" else ""
    con.execute(f"ATTACH '{prefix}{allinone} --debug' AS w (TYPE quiver)")
    killer = after(1.0, kill_children)
    started = time.monotonic()
    with pytest.raises(duckdb.IOException) as failure:
        con.execute(ENDLESS)
    killer.join()
    message = str(failure.value)
    assert time.monotonic() - started < 30
    assert "worker 'w' (quiver-allinone)" in message, message
    assert "during the scan of numbers()" in message, message
    assert "killed by signal 9 (SIGKILL)" in message, message
    # The tail of the worker's stderr (its --debug log) is in the message.
    assert "debug: init numbers()" in message, message
    # DuckDB is still usable, and so is the worker (a fresh process takes over).
    assert con.execute("SELECT 42").fetchone() == (42,)
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (499_500,)
    assert not zombies()
    con.execute("DETACH w")
    assert not children() and not zombies()
    assert shm_segments() - before == set(), "the segments of the failed scan are unlinked"


def test_worker_exiting_mid_scan(extension: Path, allinone: Path) -> None:
    con = connect(extension, threads="1")
    # The worker says something on stderr, then its wrapper ends it after 3 s, mid-scan.
    command = f'sh -c "echo going down soon >&2; exec timeout 3 {allinone}"'
    con.execute(f"ATTACH '{command}' AS w (TYPE quiver)")
    with pytest.raises(duckdb.IOException) as failure:
        con.execute(ENDLESS)
    message = str(failure.value)
    assert "worker 'w' (sh)" in message, message
    assert "exited with status 124" in message, message
    assert "going down soon" in message, message
    assert con.execute("SELECT 42").fetchone() == (42,)
    assert not zombies()


def test_interrupt_cancels_a_hung_worker(extension: Path, allinone: Path) -> None:
    con = connect(extension, threads="2")
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver)")

    def hang_then_interrupt() -> None:
        for pid, _ in children():
            os.kill(pid, signal.SIGSTOP)  # the worker hangs: no answer will ever come
        time.sleep(0.5)
        con.interrupt()

    thread = after(0.5, hang_then_interrupt)
    started = time.monotonic()
    with pytest.raises(duckdb.InterruptException):
        con.execute(ENDLESS)
    thread.join()
    assert time.monotonic() - started < 10
    # The hung processes are gone (killed and reaped), the next query gets fresh ones.
    deadline = time.monotonic() + 5
    while any(state == "T" for _, state in children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(state == "T" for _, state in children())
    assert not zombies()
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (499_500,)


def test_worker_error_mid_stream_is_an_error_not_a_crash(extension: Path, allinone: Path) -> None:
    con = connect(extension)
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver)")
    with pytest.raises(duckdb.Error, match="batch_rows"):
        con.execute("SELECT * FROM w.numbers(10, batch_rows := -1)")
    assert con.execute("SELECT sum(n) FROM w.numbers(10)").fetchone() == (45,)


def test_a_hung_worker_ends_at_max_execution_time(extension: Path, allinone: Path) -> None:
    con = connect(extension, threads="1")
    con.execute(f"ATTACH '{allinone}' AS w (TYPE quiver)")
    con.execute("SET max_execution_time = 1500")

    def hang() -> None:
        for pid, _ in children():
            os.kill(pid, signal.SIGSTOP)

    thread = after(0.3, hang)
    started = time.monotonic()
    with pytest.raises(duckdb.InterruptException, match="maximum execution time"):
        con.execute(ENDLESS)
    thread.join()
    assert time.monotonic() - started < 10
    con.execute("SET max_execution_time = 0")
    assert con.execute("SELECT sum(n) FROM w.numbers(1000)").fetchone() == (499_500,)
    assert not zombies() and not any(state == "T" for _, state in children())
