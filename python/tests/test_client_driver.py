"""quiver's Python client behind vgi-rpc's client-driver protocol, and the raw calls it relays through.

The driver (``python -m quiver.conformance.client_driver``) is run here against quiver's own Python
worker; tests/vgi_rpc_suite runs vgi-rpc's suite through it against vgi-rpc's reference worker.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyarrow import ipc

from quiver import RpcError, Server, connect
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.conformance.client_driver import decode_batch, encode_batch
from quiver.shm import ShmConfig
from quiver.wire import keys

NO_SHM = ShmConfig()
PACKAGE = str(Path(__file__).resolve().parents[1])


def request(method: str, **params: Any) -> tuple[pa.RecordBatch, dict[str, str]]:
    """A request as vgi-rpc's harness encodes one: non-nullable parameters, the whole metadata map."""
    arrays = {name: pa.array([value]) for name, value in params.items()}
    schema = pa.schema([pa.field(name, array.type, nullable=False) for name, array in arrays.items()])
    batch = pa.RecordBatch.from_arrays(list(arrays.values()), schema=schema)
    metadata = {
        keys.METHOD: method,
        keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE,
        keys.PROTOCOL: "ConformanceService",
        keys.PROTOCOL_VERSION: "2.0.0",
    }
    return batch, metadata


def test_raw_calls_carry_the_callers_metadata_and_return_the_replys() -> None:
    server = Server(ConformanceService, ConformanceServiceImpl(), shm=NO_SHM)
    anonymous = type("Relayed", (), {"protocol_name": "ConformanceService"})
    client = connect(anonymous, server.in_process(), shm=NO_SHM)
    reply = client.call_raw(*request("echo_string", value="hi"))
    assert reply is not None and reply[0].column("result").to_pylist() == ["hi"]
    with pytest.raises(RpcError) as raised:
        client.call_raw(*request("raise_value_error", message="boom"))
    assert raised.value.error_type == "ValueError"
    call = client.stream_raw(*request("produce_with_header", count=2), exchange=False, has_header=True)
    assert call.header_batch is not None and call.header_batch.num_rows == 1
    assert [item.batch.num_rows for item in call] == [1, 1]
    # The stream ended in step: the connection serves the next call.
    assert client.call_raw(*request("echo_string", value="again"))[0].column("result").to_pylist() == ["again"]  # type: ignore[index]
    client.close()


class Driver:
    """A driver process spoken to in lockstep."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": PACKAGE}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "quiver.conformance.client_driver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def ask(self, **message: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the driver closed its control channel (exit {self.process.poll()})"
        reply = json.loads(line)
        assert isinstance(reply, dict)
        return reply


@pytest.fixture
def driver() -> Iterator[Driver]:
    driver = Driver()
    worker = [sys.executable, "-m", "quiver.conformance"]
    assert driver.ask(op="connect", transport="stdio", target=worker, protocol="ConformanceService")["ok"]
    yield driver
    assert driver.ask(op="shutdown") == {"ok": True}
    assert driver.process.wait(timeout=30) == 0


def b64_request(method: str, **params: Any) -> str:
    return encode_batch(*request(method, **params))


def test_unary_result_and_error_are_relayed(driver: Driver) -> None:
    reply = driver.ask(op="unary", request_b64=b64_request("echo_string", value="hi"))
    assert reply["ok"] and reply.get("error") is None
    assert decode_batch(reply["result_b64"])[0].column("result").to_pylist() == ["hi"]
    failed = driver.ask(op="unary", request_b64=b64_request("raise_value_error", message="boom"))
    assert failed["ok"] and failed["result_b64"] is None
    assert failed["error"]["error_type"] == "ValueError" and "boom" in failed["error"]["error_message"]
    assert isinstance(failed["error"]["traceback"], str) and isinstance(failed["error"]["error_details"], list)


def test_a_producer_streams_until_done_and_logs_are_drained(driver: Driver) -> None:
    opened = driver.ask(
        op="stream_open", request_b64=b64_request("produce_with_logs", count=2), is_exchange=False, has_header=False
    )
    assert opened["ok"] and opened["header_b64"] is None
    items = [driver.ask(op="tick") for _ in range(3)]
    assert [item["done"] for item in items] == [False, False, True]
    logs = [log for item in [opened, *items] for log in item["logs"]]
    assert logs and all(log["level"] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR") for log in logs)
    # Once the stream is done the connection serves calls again.
    assert driver.ask(op="unary", request_b64=b64_request("echo_string", value="x"))["ok"]


def test_describe_walks_reflection(driver: Driver) -> None:
    reply = driver.ask(op="describe")
    assert reply["ok"], reply
    described = reply["describe"]
    assert described["protocol_name"] == "ConformanceService" and described["describe_version"] == "5"
    methods = {m["name"]: m for m in described["methods"]}
    assert methods["produce_with_header"]["has_header"] and methods["produce_with_header"]["is_exchange"] is False
    schema = ipc.read_schema(pa.py_buffer(base64.standard_b64decode(methods["echo_string"]["params_schema_b64"])))
    assert schema.names == ["value"]


def test_what_the_driver_cannot_do_is_refused_not_guessed(driver: Driver) -> None:
    assert driver.ask(op="session_begin", token=None) == {
        "ok": False,
        "error": "op requires http transport",
        "logs": [],
    }
    assert not driver.ask(op="no_such_op")["ok"]
    batch, metadata = request("echo_string", value="hi")
    del metadata[keys.METHOD]
    sink = io.BytesIO()
    with ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch, custom_metadata=metadata)
    refused = driver.ask(op="unary", request_b64=base64.standard_b64encode(sink.getvalue()).decode())
    assert not refused["ok"] and keys.METHOD in refused["error"]
    assert not driver.ask(op="tick")["ok"]  # no stream is open
    assert driver.ask(op="close")["ok"]  # a close with no stream is a no-op
