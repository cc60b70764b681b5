"""vgi-rpc 0.52.2's own conformance suite against quiver's Java worker (java/).

The same oracle and counts as tests/test_conformance.py uses for the Rust worker: the
Java worker must pass what the Rust one passes, over stdio and a Unix socket, on the
default JDK (17) and on Temurin 25 where present. Shared memory goes through the client's
segment on JDK 22+ (java.lang.foreign, the jar's META-INF/versions/22) and stays inline on
JDK 17 with the same counts. The JUnit tests run through Maven here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
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


#: vgi-rpc-test's per-test deadline (its default is 5 s). Over stdio the runner starts the worker inside
#: its first test, and a JVM's start on a busy machine can take longer than that: the deadline stays a
#: guard against a hang, not a measure of speed.
PER_TEST_TIMEOUT_SECONDS = "60"


def _run(oracle_bin: Path, *transport: str, java: str) -> dict:
    """One suite run against the Java worker on the JDK ``java`` names."""
    command = [
        str(oracle_bin / "vgi-rpc-test"),
        *transport,
        "--filter",
        EXCLUDE,
        "--format",
        "json",
        "--timeout",
        PER_TEST_TIMEOUT_SECONDS,
    ]
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


def _jdk22() -> str:
    """The JDK 22+ that maps the segment (Temurin 25 on this image); the test fails without one."""
    java = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
    if not Path(java).is_file():
        pytest.fail(f"no JDK 22+ at {java} (QUIVER_JAVA_ALT): shared memory through FFM cannot be checked")
    return java


def _run_logged(
    oracle_bin: Path, java_worker: Path, segment_bytes: int, java: str, env: dict[str, str], *, summary: bool = True
) -> str:
    """One --shm suite run with the worker's stderr kept; returns that log, once the session's
    summary is in it when ``summary`` (the worker writes it as the connection closes).
    """
    with tempfile.NamedTemporaryFile("r") as log:
        command = f"sh -c 'exec {java_worker} 2>{log.name}'"
        previous = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            _check(_run(oracle_bin, "--cmd", command, "--shm", str(segment_bytes), java=java))
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and "conn closed" not in text:
            time.sleep(0.05)
            text = Path(log.name).read_text()
            if not summary:
                break
        return text


def _summary(log: str) -> str:
    lines = [line for line in log.splitlines() if "outbound shm=" in line]
    assert len(lines) == 1, log[-4000:]
    return lines[0]


def test_shared_memory_through_the_segment(oracle_bin: Path, java_worker: Path) -> None:
    # A threshold of one byte sends every non-empty batch through the segment, both ways (vgi-rpc's
    # client reads the same variable), so requests and exchange inputs arrive as pointers too.
    env = {"VGI_RPC_SHM_DEBUG": "1", "VGI_RPC_SHM_MIN_BATCH_BYTES": "1"}
    log = _run_logged(oracle_bin, java_worker, 16 << 20, _jdk22(), env)
    assert "[quiver-shm] attached psm_" in log, log[-4000:]
    assert "(zero-copy)" in log, log[-4000:]
    summary = _summary(log)
    outbound = re.search(r"outbound shm=(\d+)/(\d+)", summary)
    inbound = re.search(r"inbound shm=(\d+)/(\d+)", summary)
    assert outbound and int(outbound[1]) > 100, summary
    assert inbound and int(inbound[1]) > 10, summary
    assert "[quiver-shm] timeline stdio: worker-busy=" in log, log[-4000:]


def test_shared_memory_default_threshold_moves_the_large_payload(oracle_bin: Path, java_worker: Path) -> None:
    log = _run_logged(oracle_bin, java_worker, 16 << 20, _jdk22(), {"VGI_RPC_SHM_DEBUG": "1"})
    summary = _summary(log)
    assert "outbound shm=0/" not in summary and "fallbacks=0" in summary, summary


def test_shared_memory_too_small_falls_back_inline(oracle_bin: Path, java_worker: Path) -> None:
    # A 1 MiB segment cannot hold the 4 MiB payload: it goes inline, counted as a fallback.
    log = _run_logged(oracle_bin, java_worker, 1 << 20, _jdk22(), {"VGI_RPC_SHM_DEBUG": "1"})
    assert "[quiver-shm] fallback inline: " in log, log[-4000:]
    assert "fallbacks=0" not in _summary(log)


def test_shared_memory_disabled_stays_inline(oracle_bin: Path, java_worker: Path) -> None:
    log = _run_logged(oracle_bin, java_worker, 16 << 20, _jdk22(), {"VGI_RPC_SHM_DISABLE": "1"}, summary=False)
    assert "[quiver-shm]" not in log, log[-4000:]


def test_shared_memory_on_jdk17_stays_inline(oracle_bin: Path, java_worker: Path) -> None:
    # JDK 17 runs the jar's base classes: the worker declines the segment, same counts, no change
    # to worker code.
    java = shutil.which("java") or "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    assert '"17.' in version, version
    log = _run_logged(oracle_bin, java_worker, 16 << 20, java, {"VGI_RPC_SHM_DEBUG": "1"}, summary=False)
    assert "[quiver-shm]" not in log, log[-4000:]


def test_the_jar_is_multi_release() -> None:
    import zipfile

    with zipfile.ZipFile(JAVA / "target" / "quiver-java-0.1.0.jar") as jar:
        assert "Multi-Release: true" in jar.read("META-INF/MANIFEST.MF").decode()
        names = jar.namelist()
    assert "META-INF/versions/22/dev/quiver/shm/SharedMemory.class" in names
    assert "dev/quiver/shm/SharedMemory.class" in names


def test_junit() -> None:
    done = subprocess.run(
        ["mvn", "-B", "-q", "-Dstyle.color=never", "test"], cwd=JAVA, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
