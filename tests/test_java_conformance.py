"""vgi-rpc 0.52.2's own conformance suite against quiver's Java worker (java/).

The same oracle and counts as tests/test_conformance.py uses for the Rust worker: the
Java worker must pass what the Rust one passes, over stdio and a Unix socket, on the
default JDK (17) and on Temurin 25 where present. Shared memory is not offered by the
Java worker yet: its ``__transport_options__`` reply says so and the client keeps every
batch inline. The JUnit tests run through Maven here too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from test_conformance import EXCLUDE, EXPECTED_PASSES, counts

ROOT = Path(__file__).resolve().parent.parent
JAVA = ROOT / "java"
WORKER = JAVA / "bin" / "quiver-conformance-java"


@pytest.fixture(scope="session")
def java_worker() -> Path:
    jar = JAVA / "target" / "quiver-java-0.1.0.jar"
    if not jar.is_file():
        pytest.fail(f"the Java worker is not built ({jar} missing); run java/build.sh or ./quiver test")
    return WORKER


def _java_binaries() -> list[pytest.param]:
    """The default JDK (17 on this image), and the other JDK named by QUIVER_JAVA_ALT where present."""
    binaries = [pytest.param(shutil.which("java") or "java", id="default-jdk")]
    alternative = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
    if Path(alternative).is_file():
        binaries.append(pytest.param(alternative, id=Path(alternative).parent.parent.name))
    return binaries


def _check(report: dict) -> None:
    failures = [t for t in report["results"] if not t["passed"] and not t["skipped"]]
    assert not failures, json.dumps(failures, indent=2)
    assert counts(report) == (EXPECTED_PASSES, 0, 6)


def _run(oracle_bin: Path, *transport: str, java: str) -> dict:
    """One suite run against the Java worker on the JDK ``java`` names."""
    command = [str(oracle_bin / "vgi-rpc-test"), *transport, "--filter", EXCLUDE, "--format", "json"]
    env = {**os.environ, "QUIVER_JAVA": java}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"vgi-rpc-test printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")


@pytest.mark.parametrize("java", _java_binaries())
def test_stdio(oracle_bin: Path, java_worker: Path, java: str) -> None:
    _check(_run(oracle_bin, "--cmd", str(java_worker), java=java))


def test_unix_socket(oracle_bin: Path, java_worker: Path) -> None:
    with tempfile.TemporaryDirectory() as directory:
        socket_path = Path(directory) / "conformance.sock"
        worker = subprocess.Popen(
            [str(java_worker), "--unix", str(socket_path), "--idle-timeout", "60"], stdout=subprocess.PIPE, text=True
        )
        try:
            line = worker.stdout.readline().strip()
            assert line == f"UNIX:{socket_path}", line
            _check(_run(oracle_bin, "--unix", str(socket_path), java="java"))
            # The worker keeps serving new connections after one closes.
            _check(_run(oracle_bin, "--unix", str(socket_path), java="java"))
        finally:
            worker.terminate()
            worker.wait(timeout=30)
        assert not socket_path.exists(), "the worker removes its socket on exit"


def test_unix_socket_idle_timeout(java_worker: Path) -> None:
    with tempfile.TemporaryDirectory() as directory:
        socket_path = Path(directory) / "idle.sock"
        worker = subprocess.Popen(
            [str(java_worker), "--unix", str(socket_path), "--idle-timeout", "1"], stdout=subprocess.PIPE, text=True
        )
        try:
            assert worker.stdout.readline().strip() == f"UNIX:{socket_path}"
            # With no client the worker exits on its own and takes its socket with it.
            assert worker.wait(timeout=60) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
        assert not socket_path.exists()


def test_shared_memory_requested_stays_inline(oracle_bin: Path, java_worker: Path) -> None:
    # The client asks for a segment; the worker declines it and every batch stays inline.
    _check(_run(oracle_bin, "--cmd", str(java_worker), "--shm", str(16 << 20), java="java"))


def test_junit() -> None:
    done = subprocess.run(
        ["mvn", "-B", "-q", "-Dstyle.color=never", "test"], cwd=JAVA, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
