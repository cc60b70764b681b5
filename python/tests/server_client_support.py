"""Starting a quiver server for the client's tests, as the shared design says one is started.

``python -m quiver.serve``: the real server, DuckDB 2.0.0 with quiver's extension serving. Without a
built extension the tests fail and say how to build it; they never skip.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent
EXTENSION = REPO / "target" / "extension" / "quiver.duckdb_extension"
STARTUP_SECONDS_MAX = 60.0
STOP_SECONDS_MAX = 30.0
ANNOUNCEMENT_LINES_MAX = 16


def client_env() -> dict[str, str]:
    """The environment for children: this package importable, no inherited shared-memory or token settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VGI_RPC_SHM_") and k != "QUIVER_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    return env


@dataclass
class RunningServer:
    """A server process and what it announced."""

    process: subprocess.Popen[bytes]
    unix_path: str | None = None
    port: int | None = None
    token: str | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def unix(self) -> str:
        assert self.unix_path is not None, "the server listens on no Unix socket"
        return f"unix://{self.unix_path}"

    @property
    def tcp(self) -> str:
        assert self.port is not None, "the server listens on no TCP port"
        return f"tcp://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited in time; always reaped."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_SECONDS_MAX)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_SECONDS_MAX)
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_server(
    directory: Path, *, unix: bool = True, tcp: bool = False, token: str | None = None, database: str | None = None
) -> RunningServer:
    """Starts a server listening as asked and waits (bounded) for its ``READY``."""
    if not EXTENSION.exists():
        pytest.fail(f"no quiver extension at {EXTENSION}: build it with extension/build.sh (./quiver test does)")
    command = [sys.executable, "-m", "quiver.serve", "--extension", str(EXTENSION)]
    if unix:
        command += ["--listen", f"unix://{directory / 'quiver.sock'}"]
    if tcp:
        command += ["--listen", "tcp://127.0.0.1:0"]
    if database is not None:
        command += ["--database", database]
    command += ["--watch-stdin", "--token-env", "QUIVER_TEST_TOKEN"]
    env = client_env()
    if token is not None:
        env["QUIVER_TEST_TOKEN"] = token
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env, cwd=REPO)
    server = RunningServer(process)
    try:
        _read_announcements(server)
    except BaseException:
        server.stop()
        raise
    return server


def _read_announcements(server: RunningServer) -> None:
    """Reads whole lines from the unbuffered pipe until ``READY`` (bounded in time and lines)."""
    assert server.process.stdout is not None
    descriptor = server.process.stdout.fileno()
    deadline = time.monotonic() + STARTUP_SECONDS_MAX
    pending = b""
    selector = selectors.DefaultSelector()
    selector.register(descriptor, selectors.EVENT_READ)
    try:
        while len(server.lines) < ANNOUNCEMENT_LINES_MAX:
            if b"\n" not in pending:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise TimeoutError(f"no READY from the server in {STARTUP_SECONDS_MAX} s: {server.lines}")
                chunk = os.read(descriptor, 4096)
                if not chunk:
                    server.process.wait(STOP_SECONDS_MAX)
                    raise RuntimeError(f"the server exited ({server.process.returncode}): {server.lines}")
                pending += chunk
                continue
            raw, _, pending = pending.partition(b"\n")
            line = raw.decode().strip()
            server.lines.append(line)
            if line == "READY":
                return
            key, _, value = line.partition(":")
            if key == "PORT":
                server.port = int(value)
            elif key == "UNIX":
                server.unix_path = value
            elif key == "TOKEN":
                server.token = value
        raise RuntimeError(f"no READY in the first {ANNOUNCEMENT_LINES_MAX} lines: {server.lines}")
    finally:
        selector.close()
