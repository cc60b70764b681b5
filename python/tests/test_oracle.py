"""vgi-rpc 0.52.2's own conformance CLI against this package's Python worker.

106 tests must pass (6 HTTP-only ones are skipped, the 2 GiB one is filtered out) over
stdio, a Unix socket, and stdio with a 16 MiB shared-memory segment, where the 4 MiB
result must really travel through the segment.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from .support import assert_unlinked

EXPECTED = (106, 0, 6)
EXCLUDE = "!large_payload.echo_binary_over_int32_max"


def worker_command(python_worker: list[str], worker_env: dict[str, str]) -> str:
    return shlex.join(["env", f"PYTHONPATH={worker_env['PYTHONPATH']}", *python_worker])


def run_suite(oracle_cli: Path, *transport: str, env: dict[str, str] | None = None) -> tuple[int, int, int]:
    command = [str(oracle_cli), *transport, "--filter", EXCLUDE, "--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"vgi-rpc-test printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    failures = [result for result in report["results"] if not result["passed"] and not result["skipped"]]
    assert not failures, json.dumps(failures, indent=2)
    return report["passed"], report["failed"], report["skipped"]


def test_stdio(oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str]) -> None:
    assert run_suite(oracle_cli, "--cmd", worker_command(python_worker, worker_env)) == EXPECTED


def test_unix_socket(oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "conformance.sock"
    worker = subprocess.Popen([*python_worker, "--unix", str(path)], stdout=subprocess.PIPE, text=True, env=worker_env)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == f"UNIX:{path}"
        assert run_suite(oracle_cli, "--unix", str(path)) == EXPECTED
        assert run_suite(oracle_cli, "--unix", str(path)) == EXPECTED, "a second connection is served too"
    finally:
        worker.terminate()
        worker.wait(timeout=10)
    assert worker.returncode == 0
    assert not path.exists(), "the worker removes its socket on exit"


def test_shared_memory(oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str], tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    command = f"sh -c {shlex.quote(f'exec {worker_command(python_worker, worker_env)} 2>{log}')}"
    assert run_suite(oracle_cli, "--cmd", command, "--shm", str(16 << 20), env={"VGI_RPC_SHM_DEBUG": "1"}) == EXPECTED
    summary = log.read_text()
    attached = re.search(r"\[quiver-shm\] attached (psm_\w+)", summary)
    assert attached, summary
    assert_unlinked(attached.group(1))
    outbound = [line for line in summary.splitlines() if "outbound shm=" in line]
    assert outbound and "outbound shm=0/" not in outbound[0], summary


def test_shared_memory_too_small_falls_back_inline(
    oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str]
) -> None:
    assert run_suite(oracle_cli, "--cmd", worker_command(python_worker, worker_env), "--shm", str(1 << 20)) == EXPECTED
