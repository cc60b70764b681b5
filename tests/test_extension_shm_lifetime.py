"""No shared-memory segment outlives the processes that map it, whatever kills them.

A DuckDB process (a child Python running the extension) moves batches through shared memory with a
real worker — ours (stdio and launch:) and vgi-python 0.47.0's (tests/vgi_oracle/third_party_worker.py)
— and is then SIGKILLed mid-session. Its segment names carry its pid (psm_<pid>_<hex>): they must
already be unlinked while it runs (the engine drops a name once the worker has replied), and once its
workers let go no process maps them and nothing of them is left in /dev/shm.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from extension_support import ROOT

VGI_WORKER = ROOT / "tests" / "vgi_oracle" / "third_party_worker.py"
SHM_DIR = Path("/dev/shm")
WAIT_SECONDS = 30

ENGINE = textwrap.dedent(
    """
    import sys, time, duckdb
    extension, location, queries = sys.argv[1], sys.argv[2], sys.argv[3:]
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "threads": "4"})
    con.execute(f"LOAD '{extension}'")
    for round in ("finished", "killed"):
        con.execute(f"ATTACH '{location}' AS w (TYPE quiver)")
        for query in queries:
            print(round, query, con.execute(query).fetchall(), flush=True)
        if round == "finished":
            con.execute("DETACH w")  # the engine prints its per-connection shm summary here
    print("READY", flush=True)
    time.sleep(120)
    """
)


def mapped_by(prefix: str) -> dict[int, set[str]]:
    """pid -> names under /dev/shm starting with `prefix` that the process maps."""
    found: dict[int, set[str]] = {}
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:
            continue
        names = {line.split("/dev/shm/")[1].split()[0] for line in text.splitlines() if f"/dev/shm/{prefix}" in line}
        if names:
            found[int(maps.parent.name)] = names
    return found


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"after {WAIT_SECONDS} s: {what}")
        time.sleep(0.1)


def vgi_python() -> Path:
    return Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))


WORKERS = {
    "ours-stdio": ("{allinone}", ["SELECT sum(n), count(*) FROM w.numbers(3000000)"]),
    "ours-launch": ("launch:{allinone}", ["SELECT sum(n), count(*) FROM w.numbers(3000000)"]),
    "vgi-python": (
        "{vgi_python} " + str(VGI_WORKER),
        [
            "SELECT count(*), sum(sq) FROM w.squares(20000)",
            "SELECT count(*), sum(x) FROM w.chunked((SELECT range AS x FROM range(20000)))",
        ],
    ),
}


@pytest.mark.parametrize("worker", list(WORKERS))
def test_sigkilled_engine_leaves_no_segment(
    extension: Path, allinone: Path, worker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template, queries = WORKERS[worker]
    location = template.format(allinone=allinone, vgi_python=vgi_python())
    monkeypatch.setenv("VGI_RPC_SHM_SIZE_BYTES", str(64 << 20))
    # Low enough that the vgi-python worker's 1000-row batches, and DuckDB's input vectors, qualify.
    monkeypatch.setenv("VGI_RPC_SHM_MIN_BATCH_BYTES", "1024")
    monkeypatch.setenv("VGI_RPC_SHM_DEBUG", "1")
    monkeypatch.setenv("VGI_WORKER_SQLITE_PATH", str(tmp_path / "vgi-worker.sqlite"))
    stderr = tmp_path / "engine.stderr"
    with stderr.open("w") as log:
        engine = subprocess.Popen(
            [sys.executable, "-c", ENGINE, str(extension), location, *queries],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    prefix = f"psm_{engine.pid}_"
    workers: set[int] = set()
    try:
        lines = []
        for line in engine.stdout:
            lines.append(line)
            if line.strip() == "READY":
                break
        assert lines and lines[-1].strip() == "READY", f"{lines}\n{stderr.read_text()}"
        summary = stderr.read_text()
        assert "[quiver-shm] conn closed" in summary, summary
        through_segment = sum(int(n) for n in re.findall(r"bound shm=(\d+)/", summary))
        assert through_segment > 0, f"no batch went through the segment:\n{summary}"
        mappers = mapped_by(prefix)
        workers = set(mappers) - {engine.pid}
        assert engine.pid in mappers and workers, f"engine and worker map the segment: {mappers}"
        assert not list(SHM_DIR.glob(prefix + "*")), "the names went once the workers had attached"

        killed_at = time.monotonic()
        engine.send_signal(signal.SIGKILL)
        assert engine.wait(timeout=WAIT_SECONDS) == -signal.SIGKILL
        wait_until(lambda: not mapped_by(prefix), f"still mapped: {mapped_by(prefix)}")
        assert not list(SHM_DIR.glob(prefix + "*"))
        print(f"{worker}: segments released {time.monotonic() - killed_at:.2f} s after SIGKILL")
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
