"""A DuckDB process that is killed (SIGKILL: no cleanup code of its own runs) takes its workers with
it: every stdio and `launch:` worker exits, the `launch:` socket is removed, no work file is left.
The promise is 5 s; the test waits up to 30 s so that a loaded machine does not fail it, and
prints the measured time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path


WORKER_EXIT_BOUND_S = 30.0

ENGINE = textwrap.dedent(
    """
    import sys, time
    import duckdb
    extension, allinone = sys.argv[1], sys.argv[2]
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    con.execute(f"ATTACH '{allinone}' AS s (TYPE quiver)")
    con.execute(f"ATTACH 'launch:{allinone}' AS l (TYPE quiver)")
    assert con.execute("SELECT sum(n) FROM s.numbers(100000)").fetchone() == (4999950000,)
    assert con.execute("SELECT sum(n) FROM l.numbers(100000)").fetchone() == (4999950000,)
    print("READY", flush=True)
    time.sleep(120)
    """
)


def stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def children_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(int(entry.name))
            if fields and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def gone(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is None or fields[0] == "Z"


def argv_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def test_killed_engine_takes_its_workers_with_it(extension: Path, allinone: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="quiver-engine-death-") as runtime:
        env = {**os.environ, "XDG_RUNTIME_DIR": runtime}
        engine = subprocess.Popen(
            [sys.executable, "-c", ENGINE, str(extension), str(allinone)],
            stdout=subprocess.PIPE, text=True, env=env, start_new_session=True,
        )
        try:
            assert engine.stdout.readline().strip() == "READY"
            workers = children_of(engine.pid)
            launch = [pid for pid in workers if "--unix" in argv_of(pid)]
            stdio = [pid for pid in workers if pid not in launch]
            assert len(launch) == 1 and stdio, workers
            argv = argv_of(launch[0])
            socket = Path(argv[argv.index("--unix") + 1])
            assert socket.exists()
        finally:
            os.kill(engine.pid, signal.SIGKILL)
            killed = time.monotonic()
            engine.wait()
        exit_after = {}
        for kind, pid in [*(("stdio", p) for p in stdio), ("launch", launch[0])]:
            while not gone(pid):
                assert time.monotonic() - killed < WORKER_EXIT_BOUND_S, f"{kind} worker {pid} outlived its engine"
                time.sleep(0.01)
            exit_after[f"{kind} {pid}"] = round(time.monotonic() - killed, 3)
        print(f"worker exit after the engine's SIGKILL (s): {exit_after}")
        while socket.exists():
            assert time.monotonic() - killed < WORKER_EXIT_BOUND_S, f"{socket} left behind"
            time.sleep(0.01)
        assert not list(Path(runtime).glob("quiver-vgi/*.work")), "work files left behind"
