"""The same calls over a subprocess's stdio, a Unix socket and TCP."""

from __future__ import annotations

import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from quiver import Server, connect, connect_tcp, connect_unix, spawn
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.shm import ShmConfig
from quiver.transport import Listener, listen_tcp, listen_unix

NO_SHM = ShmConfig()


def exercise(api: Any) -> None:
    assert api.echo_string("over the wire") == "over the wire"
    assert [b.batch.column("index")[0].as_py() for b in api.produce_n(2)] == [0, 1]


@pytest.fixture
def server() -> Server:
    return Server(ConformanceService, ConformanceServiceImpl(), shm=NO_SHM)


@contextmanager
def serving(server: Server, listener: Listener) -> Iterator[None]:
    thread = threading.Thread(target=listener.serve, args=(server.serve,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        listener.close()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_unix_socket(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "quiver.sock"
    listener = listen_unix(path)
    assert path.stat().st_mode & 0o777 == 0o600
    with serving(server, listener):
        for _ in range(2):
            with connect(ConformanceService, connect_unix(path), shm=NO_SHM) as api:
                exercise(api)
    assert not path.exists()


def test_a_live_unix_listener_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "busy.sock"
    listener = listen_unix(path)
    with pytest.raises(OSError, match="already listening"):
        listen_unix(path)
    listener.close()
    listen_unix(path).close()


def test_tcp(server: Server) -> None:
    listener = listen_tcp("127.0.0.1", 0)
    with serving(server, listener):
        client = connect(
            ConformanceService, connect_tcp("127.0.0.1", listener.port), shm=ShmConfig(segment_size_bytes=1 << 20)
        )
        assert client.route is None, "no shared memory with a TCP peer"
        exercise(client.api)
        client.close()


WORKER = textwrap.dedent(
    """
    import sys
    from quiver import Server, serve_stdio

    class Chatty:
        def shout(self, word: str) -> str: ...

    class ChattyImpl:
        def shout(self, word: str) -> str:
            print("stray print that must not reach the protocol stream")
            sys.stdout.flush()
            return word.upper()

    serve_stdio(Server(Chatty, ChattyImpl()))
    """
)


class Chatty:
    def shout(self, word: str) -> str: ...


def test_subprocess_stdout_carries_protocol_bytes_only(tmp_path: Path, worker_env: dict[str, str]) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    with connect(Chatty, spawn([sys.executable, str(script)], env=worker_env), shm=NO_SHM) as api:
        assert api.shout("hi") == "HI"
        assert api.shout("again") == "AGAIN"


def test_python_worker_subprocess(python_worker: list[str], worker_env: dict[str, str]) -> None:
    connection = spawn(python_worker, env=worker_env)
    with connect(ConformanceService, connection, shm=NO_SHM) as api:
        exercise(api)
    assert connection.process.returncode == 0, "the worker exits cleanly at end of input"
