"""quiver_native's RPC client and server (crates/quiver-python/src/rpc.rs): Python method bodies on the
Rust server, called by the native client over a subprocess's stdio and a Unix socket (with shared
memory), and by quiver's pure-Python client (the same wire).

tools/setup.sh installs the module into .venv; without it these tests fail and say so.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Protocol

import pytest

from server_support import WAIT_SECONDS

WORKER = Path(__file__).resolve().parent / "native_rpc_worker.py"
CALCULATOR = ("Calculator", "1.0.0")


@pytest.fixture(scope="module")
def qn() -> ModuleType:
    try:
        import quiver_native
    except ImportError as exc:
        pytest.fail(f"quiver_native is not installed ({exc}): run tools/setup.sh")
    return quiver_native


@pytest.fixture
def spawned(qn: ModuleType) -> Iterator[object]:
    with qn.RpcClient.spawn([sys.executable, str(WORKER)], protocol=CALCULATOR) as client:
        yield client


def test_python_bodies_answer_over_stdio(spawned: object) -> None:
    assert spawned.call("add", a=1.5, b=2.0) == 3.5  # type: ignore[attr-defined]
    assert spawned.call("greet", name="wire") == "hello wire"  # type: ignore[attr-defined]
    assert spawned.call("count", n=41) == 42  # type: ignore[attr-defined]


def test_a_python_exception_reaches_the_client_and_the_connection_lives(qn: ModuleType, spawned: object) -> None:
    with pytest.raises(qn.RpcError, match="refused: no") as caught:
        spawned.call("fail", reason="no")  # type: ignore[attr-defined]
    assert caught.value.error_type == "ValueError"
    with pytest.raises(qn.RpcError, match="add"):
        spawned.call("add", a="not a number", b=1.0)  # type: ignore[attr-defined]
    assert spawned.call("add", a=1.0, b=1.0) == 2.0  # type: ignore[attr-defined]


def test_unsupported_arguments_are_refused_before_sending(spawned: object) -> None:
    with pytest.raises(TypeError, match="argument 'a'"):
        spawned.call("add", a=object(), b=1.0)  # type: ignore[attr-defined]
    assert spawned.call("add", a=2.0, b=2.0) == 4.0  # type: ignore[attr-defined]


def test_unix_socket_with_shared_memory(qn: ModuleType, tmp_path: Path) -> None:
    socket = tmp_path / "calc.sock"
    worker = subprocess.Popen([sys.executable, str(WORKER), "--unix", str(socket)], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == f"UNIX:{socket}"
        with qn.RpcClient.connect_unix(socket, protocol=CALCULATOR, shm_bytes=8 << 20) as client:
            assert [client.call("count", n=k) for k in range(3)] == [1, 2, 3]
    finally:
        worker.terminate()
        assert worker.wait(WAIT_SECONDS) is not None


class Calculator(Protocol):
    def add(self, a: float, b: float) -> float: ...
    def greet(self, name: str) -> str: ...


def test_the_pure_python_client_calls_the_native_server() -> None:
    import quiver

    with quiver.connect(Calculator, quiver.spawn([sys.executable, str(WORKER)])) as calculator:
        assert calculator.add(0.25, 0.5) == 0.75
        assert calculator.greet("pure") == "hello pure"
