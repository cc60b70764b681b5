"""A limit exceeded reaches the client as that limit, and the connection lives on.

A batch over the server's message limit (``--max-message-bytes``, small here) used to end the
connection: the server stopped reading mid-batch and closed, so the client, still writing, saw
"connection reset" while only the server's log named the limit. The server now reads past the body
without keeping it and answers with a ``LimitExceededError`` naming the limit, on Unix and TCP, to
the DB-API client and to quiver_native alike. Batches over the clients' slice size go as slices.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import quiver
from quiver import client as dbapi
from server_support import ServerProcess

LIMIT_BYTES = 1 << 20
TOKEN = "limits-token"


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    socket = tmp_path_factory.mktemp("limits") / "q.sock"
    process = ServerProcess(
        "--listen",
        "tcp://127.0.0.1:0",
        "--listen",
        f"unix://{socket}",
        "--max-message-bytes",
        str(LIMIT_BYTES),
        env={"QUIVER_EXTENSION": str(extension), "QUIVER_TOKEN": TOKEN},
    )
    yield process
    assert process.stop() == 0


@pytest.fixture(params=["unix", "tcp"])
def address(request: pytest.FixtureRequest, server: ServerProcess) -> str:
    return f"unix://{server.unix}" if request.param == "unix" else f"tcp://127.0.0.1:{server.port}"


def one_large_row() -> pa.Table:
    """One row of twice the limit: no slicing can make it fit."""
    return pa.table({"b": pa.array([b"x" * (2 * LIMIT_BYTES)], pa.large_binary())})


def test_dbapi_hears_the_limit_and_keeps_the_connection(address: str) -> None:
    with quiver.connect(address, token=TOKEN, autocommit=True, shm=False) as conn:
        with pytest.raises(dbapi.OperationalError) as caught:
            conn.insert_arrow("too_large", one_large_row(), mode="create")
        assert caught.value.error_type == "LimitExceededError"
        assert caught.value.error_kind == "limit_exceeded"
        assert f"exceeds the limit of {LIMIT_BYTES} bytes" in str(caught.value)
        assert conn.execute("SELECT 42").fetchall() == [(42,)]
        # Nothing of the refused insert is left behind.
        assert conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'too_large'").fetchall() == [(0,)]


def test_native_hears_the_limit_and_keeps_the_connection(address: str) -> None:
    import quiver_native

    with quiver_native.connect(address, TOKEN, shm=False) as db:
        with pytest.raises(quiver_native.ServerError, match=f"exceeds the limit of {LIMIT_BYTES} bytes") as caught:
            db.insert_arrow("too_large", one_large_row(), "create")
        assert caught.value.error_type == "LimitExceededError" and caught.value.kind == "limit_exceeded"
        assert db.query("SELECT 42 AS x").read_all().column("x")[0].as_py() == 42
