"""Fixtures for vgi-rpc 0.52.2's request-contract tests (`_adversarial_raw.py`, `_adversarial_http.py`).

A focused check, run by tools/request_contract/run.sh under a Python that has vgi_rpc
and pytest (the oracle's packages plus pytest). The raw tests write bytes to a worker
and read its answer, so they need a proxy whose transport exposes `reader` and
`writer`; each runs against quiver's Rust worker, quiver's Python worker and the
reference worker, over a pipe and a Unix socket, so the counts compare. The HTTP
tests run against quiver's Python worker and the reference one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from vgi_rpc.conformance._protocol import ConformanceService
from vgi_rpc.rpc import connect, unix_connect

ROOT = Path(__file__).resolve().parents[2]
assert (ROOT / "Cargo.toml").is_file(), ROOT


def _commands() -> dict[str, list[str]]:
    quiver_bin = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release"))
    quiver_python = os.environ.get("QUIVER_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
    oracle_bin = Path(os.environ.get("QUIVER_ORACLE_BIN", ROOT / ".venv-oracle" / "bin"))
    return {
        "rust": [str(quiver_bin / "quiver-conformance-worker")],
        "python": ["env", f"PYTHONPATH={ROOT / 'python'}", quiver_python, "-m", "quiver.conformance"],
        "reference": [str(oracle_bin / "vgi-rpc-conformance"), "--pipe"],
    }


@contextlib.contextmanager
def _unix_worker(command: list[str], path: Path) -> Iterator[None]:
    """A worker listening on ``path`` until the block ends."""
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline().strip()
        assert line == f"UNIX:{path}", f"{command} announced {line!r}"
        yield
    finally:
        worker.terminate()
        worker.wait(timeout=30)


@pytest.fixture(params=["pipe-rust", "pipe-python", "pipe-reference", "unix-rust", "unix-python", "unix-reference"])
def conformance_raw_conn(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], contextlib.AbstractContextManager[ConformanceService]]]:
    """A factory of proxies over the parametrized transport and implementation."""
    transport, implementation = request.param.split("-")
    command = _commands()[implementation]
    if transport == "pipe":

        @contextlib.contextmanager
        def open_pipe() -> Iterator[ConformanceService]:
            with connect(ConformanceService, command) as proxy:  # type: ignore[type-abstract]
                yield proxy

        yield open_pipe
        return
    path = tmp_path / "worker.sock"
    listen = command[:-1] if implementation == "reference" else command
    with _unix_worker([*listen, "--unix", str(path)], path):

        @contextlib.contextmanager
        def open_socket() -> Iterator[ConformanceService]:
            with unix_connect(ConformanceService, str(path)) as proxy:  # type: ignore[type-abstract]
                yield proxy

        yield open_socket


@pytest.fixture(params=["python", "reference"])
def conformance_http_port(request: pytest.FixtureRequest) -> Iterator[int]:
    """The port of a fresh HTTP worker of the parametrized implementation (quiver's Rust worker has no HTTP)."""
    commands = _commands()
    command = {
        "python": [*commands["python"], "--http"],
        "reference": [commands["reference"][0], "--http", "0"],
    }[request.param]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline().strip()
        assert line.startswith("PORT:"), f"{command} announced {line!r}"
        yield int(line[len("PORT:") :])
    finally:
        worker.terminate()
        worker.wait(timeout=30)
