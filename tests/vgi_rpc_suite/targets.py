"""The workers vgi-rpc's pytest suite is pointed at, and the transports each is reached over.

A target is "<transport>-<worker>", e.g. ``pipe-rust`` or ``http-reference``, or a client target
"<transport>-reference@<client>-client", where one of quiver's clients drives the reference worker
(see suite_matrix.py).

Servers (Unix socket, HTTP) start once per target and serve one connection per test; a client
target shares the reference worker's server on its transport. Over pipe and shm a client target's
driver starts its own reference worker for each connection (the client-driver protocol spawns the
argv it is given), and every driver process lives for one connection (the Python driver's
process is forked from driver_forkserver.py, which imported it once). A pipe
worker is one long-lived subprocess per target, the way a host uses it, replaced whenever a test
leaves it dead or ends with an exception (the stream may then be mid-message, and the next test
must not inherit that).

Runs under the suite's venv (Python >= 3.13, vgi-rpc 0.52.2, pytest); see tools/requirements-suite.txt.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite_matrix import all_targets, driven_client, known_targets, split_target
from vgi_rpc.conformance import ConformanceService
from vgi_rpc.conformance.client_driver import ClientDriver
from vgi_rpc.rpc import SubprocessTransport, unix_connect
from vgi_rpc.rpc._client import _RpcProxy
from vgi_rpc.shm import ShmSegment

ROOT = Path(__file__).resolve().parents[2]

#: The same size tests/test_conformance.py gives vgi-rpc-test's --shm: large enough that the
#: suite's multi-MiB payloads really travel through the segment.
SHM_SEGMENT_BYTES = 16 << 20
#: How long a server may take to print where it listens, on a loaded machine.
STARTUP_TIMEOUT_S = 60.0
#: How many pipe workers one session may start: more than the matrix has pipe and shm test cases
#: (about 820), so only a runaway respawn loop reaches it.
MAX_PIPE_RESPAWNS = 1000
#: Forks quiver's Python client driver with its imports done (see the file).
FORKSERVER_SCRIPT = Path(__file__).resolve().parent / "driver_forkserver.py"


def selected_targets() -> list[str]:
    """The targets this run covers: all, or those named in QUIVER_SUITE_TARGETS (comma-separated)."""
    wanted = os.environ.get("QUIVER_SUITE_TARGETS", "").strip()
    if not wanted:
        return all_targets()
    chosen = [t.strip() for t in wanted.split(",") if t.strip()]
    unknown = sorted(set(chosen) - set(known_targets()))
    assert not unknown, f"QUIVER_SUITE_TARGETS names unknown targets {unknown}; known: {known_targets()}"
    return chosen


def worker_command(worker: str, transport: str = "pipe") -> list[str]:
    """The command that starts a worker serving stdio; transports append their flags."""
    if worker == "rust":
        binary = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-conformance-worker"
        assert binary.exists(), f"{binary} not built; run cargo build --release"
        return [str(binary)]
    if worker == "python":
        python = os.environ.get("QUIVER_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
        return [python, "-m", "quiver.conformance"]
    if worker == "java":
        launcher = str(ROOT / "java" / "bin" / "quiver-conformance-java")
        # The shm target runs on a JDK 22+ (QUIVER_JAVA_ALT, Temurin 25 on this image), where the
        # worker maps the segment; the default JDK 17 would decline it. The others use the default.
        jdk22 = os.environ.get("QUIVER_JAVA_ALT", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
        if transport == "shm" and Path(jdk22).is_file():
            return ["env", f"QUIVER_JAVA={jdk22}", launcher]
        return [launcher]
    oracle = Path(os.environ.get("QUIVER_ORACLE_BIN", ROOT / ".venv-oracle" / "bin"))
    # --describe registers vgi_rpc.Reflection.v1, which the suite's describe tests call.
    return [str(oracle / "vgi-rpc-conformance"), "--describe"]


def driver_command(client: str, forkserver: str | None = None) -> list[str]:
    """The command that starts one of quiver's client drivers (one connection per process).

    With `forkserver` (the socket of a running driver_forkserver.py), the Python driver is forked
    from it instead of started and imported anew: the same driver code, in milliseconds.
    """
    if client == "rust":
        binary = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-client-driver"
        assert binary.exists(), f"{binary} not built; run cargo build --release"
        return [str(binary)]
    if forkserver is not None:
        return [_quiver_python(), "-I", "-S", str(FORKSERVER_SCRIPT), "launch", forkserver]
    return [_quiver_python(), "-m", "quiver.conformance.client_driver"]


def _quiver_python() -> str:
    return os.environ.get("QUIVER_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


#: The client-driver protocol's transport names, by the suite's.
DRIVER_TRANSPORTS = {"pipe": "stdio", "shm": "shm", "unix": "unix", "http": "http"}


def export_worker_env() -> None:
    """Points every worker's PYTHONPATH at this checkout's package.

    Workers inherit this process's environment (vgi-rpc's SubprocessTransport takes no env), and
    quiver's Python worker must import this checkout's package, not an installed one.
    """
    os.environ["PYTHONPATH"] = os.environ.get("QUIVER_PYTHONPATH", str(ROOT / "python"))


class _ShmPipe:
    """A subprocess pipe that also offers a client-side shared-memory segment.

    vgi-rpc's client finds the segment through a ``shm`` attribute on its transport; this is how
    ``vgi-rpc-test --shm`` enables it (see ``_ShmTransportWrapper`` in its ``conformance/_test_cli.py``).
    """

    def __init__(self, inner: SubprocessTransport, segment: ShmSegment) -> None:
        self._inner = inner
        self._segment = segment

    @property
    def reader(self) -> Any:
        return self._inner.reader

    @property
    def writer(self) -> Any:
        return self._inner.writer

    @property
    def shm(self) -> ShmSegment:
        return self._segment

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._segment.unlink()
            with contextlib.suppress(BufferError):
                self._segment.close()


@dataclass
class _Pipe:
    transport: SubprocessTransport | _ShmPipe
    process: subprocess.Popen[bytes]

    def alive(self) -> bool:
        return self.process.poll() is None


def _pipe_process(transport: SubprocessTransport) -> subprocess.Popen[bytes]:
    process = transport._proc  # vgi-rpc keeps the child private; liveness needs it.
    assert isinstance(process, subprocess.Popen)
    return process


def _read_announcement(process: subprocess.Popen[bytes], prefix: str) -> str:
    """Reads the worker's stdout until the line starting with `prefix`; returns what follows it."""
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    seen: list[str] = []
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if not ready:
            continue
        line = process.stdout.readline().decode(errors="replace").strip()
        if line.startswith(prefix):
            return line[len(prefix) :]
        seen.append(line)
        assert len(seen) < 100, f"worker printed 100 lines without {prefix!r}: {seen[-5:]}"
    raise RuntimeError(f"worker {process.args} did not announce {prefix!r} (exit {process.poll()}); saw {seen}")


@dataclass
class Targets:
    """Starts workers on demand, one per target, and stops them all at the end of the session."""

    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="quiver-suite-")))
    _pipes: dict[str, _Pipe] = field(default_factory=dict)
    _servers: dict[str, tuple[subprocess.Popen[bytes], str]] = field(default_factory=dict)
    _respawns: int = 0
    _forkserver: tuple[subprocess.Popen[bytes], str] | None = None

    def ensure(self, target: str) -> None:
        """Starts the target's worker now, so a test's timeout does not pay for a worker's start."""
        transport, _ = split_target(target)
        if driven_client(target) is not None:
            if transport not in ("pipe", "shm"):
                self._server(f"{transport}-reference")
        elif transport in ("pipe", "shm"):
            self._pipe(target)
        else:
            self._server(target)

    def connect(
        self, target: str, protocol: type, on_log: Callable[..., None] | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        """A context manager yielding a proxy of `protocol` on the target's worker."""
        transport, _ = split_target(target)
        if driven_client(target) is not None:
            return self._driven(target, protocol, on_log)
        if transport in ("pipe", "shm"):
            return self._pipe_proxy(target, protocol, on_log)
        address = self._server(target)
        if transport == "unix":
            return unix_connect(protocol, address, on_log=on_log)
        from vgi_rpc.http import http_connect

        return http_connect(protocol, address, on_log=on_log)

    def describe(self, target: str, introspect: Callable[[Any], Any]) -> Any:
        """Runs `introspect` on the target's pipe transport; a failure replaces the worker."""
        if driven_client(target) is not None:
            with self._driven(target, ConformanceService, None) as proxy:
                return proxy.describe()
        assert split_target(target)[0] in ("pipe", "shm"), target
        try:
            return introspect(self._pipe(target).transport)
        except BaseException:
            self._drop_pipe(target)
            raise

    def server_port(self, target: str) -> int:
        """The HTTP port of the target's server (a client target's: the reference worker's)."""
        transport, _ = split_target(target)
        assert transport == "http", target
        served = f"{transport}-reference" if driven_client(target) is not None else target
        return int(self._server(served).rsplit(":", 1)[1])

    def client_driver(self, target: str, protocol: type = ConformanceService) -> ClientDriver:
        """The vgi-rpc harness that starts the target's client driver (a client target only)."""
        client = driven_client(target)
        assert client is not None, target
        forkserver = self._python_forkserver() if client == "python" else None
        return ClientDriver(driver_command(client, forkserver), service=protocol)

    def _python_forkserver(self) -> str:
        """The socket of the Python driver's fork server, started on first use."""
        if self._forkserver is not None and self._forkserver[0].poll() is None:
            return self._forkserver[1]
        path = str(self.directory / "python-driver.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        process = subprocess.Popen(
            [_quiver_python(), str(FORKSERVER_SCRIPT), "serve", path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
        )
        _read_announcement(process, "READY")
        self._forkserver = (process, path)
        return path

    def _driven(self, target: str, protocol: type, on_log: Callable[..., None] | None) -> Any:
        """A client driver's proxy (its own context manager) on the reference worker."""
        transport, _ = split_target(target)
        driver = self.client_driver(target, protocol)
        if transport in ("pipe", "shm"):
            reach: object = worker_command("reference")
        else:
            reach = self._server(f"{transport}-reference")
        shm_size = SHM_SEGMENT_BYTES if transport == "shm" else None
        return driver.connect(DRIVER_TRANSPORTS[transport], reach, on_log, shm_size=shm_size)

    @contextlib.contextmanager
    def _pipe_proxy(self, target: str, protocol: type, on_log: Callable[..., None] | None) -> Iterator[Any]:
        pipe = self._pipe(target)
        try:
            yield _RpcProxy(protocol, pipe.transport, on_log)
        except BaseException:
            self._drop_pipe(target)
            raise
        if not pipe.alive():
            self._drop_pipe(target)

    def _pipe(self, target: str) -> _Pipe:
        pipe = self._pipes.get(target)
        if pipe is not None and pipe.alive():
            return pipe
        if pipe is not None:
            self._drop_pipe(target)
        self._respawns += 1
        assert self._respawns <= MAX_PIPE_RESPAWNS, f"pipe workers replaced {MAX_PIPE_RESPAWNS} times; giving up"
        transport_kind, worker = split_target(target)
        inner = SubprocessTransport(worker_command(worker, transport_kind))
        process = _pipe_process(inner)
        transport: SubprocessTransport | _ShmPipe = inner
        if transport_kind == "shm":
            transport = _ShmPipe(inner, ShmSegment.create(SHM_SEGMENT_BYTES))
        pipe = _Pipe(transport, process)
        self._pipes[target] = pipe
        return pipe

    def _drop_pipe(self, target: str) -> None:
        pipe = self._pipes.pop(target, None)
        if pipe is None:
            return
        with contextlib.suppress(Exception):
            pipe.transport.close()
        _stop(pipe.process)

    def _server(self, target: str) -> str:
        """The address clients dial: a socket path, or an http:// base URL."""
        running = self._servers.get(target)
        if running is not None and running[0].poll() is None:
            return running[1]
        if running is not None:
            _stop(running[0])
        transport, worker = split_target(target)
        command = worker_command(worker)
        if transport == "unix":
            path = self.directory / f"{target}.sock"
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            command += ["--unix", str(path)]
            prefix = "UNIX:"
        else:
            command += ["--http"]
            prefix = "PORT:"
        process = subprocess.Popen(command, stdout=subprocess.PIPE)
        announced = _read_announcement(process, prefix)
        address = announced if transport == "unix" else f"http://127.0.0.1:{int(announced)}"
        self._servers[target] = (process, address)
        return address

    def close(self) -> None:
        for target in list(self._pipes):
            self._drop_pipe(target)
        for process, _ in self._servers.values():
            _stop(process)
        self._servers.clear()
        if self._forkserver is not None:
            _stop(self._forkserver[0])
            self._forkserver = None
        for leftover in self.directory.glob("*"):
            with contextlib.suppress(OSError):
                leftover.unlink()
        with contextlib.suppress(OSError):
            self.directory.rmdir()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    if process.stdout is not None:
        with contextlib.suppress(OSError):
            process.stdout.close()
