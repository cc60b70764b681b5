"""The request contract, as strict as vgi-rpc's server.

The declared parameter names in the declared order with the declared types and
nullability, one row, and dispatch metadata that is present and UTF-8. Every refusal
is a typed error, and the same connection then answers a good request. Requests are
built with pyarrow directly so their metadata can carry any bytes.
"""

from __future__ import annotations

import io
import time
from typing import Any

import pyarrow as pa
import pytest
from pyarrow import ipc

from quiver import Server
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.shm import ShmConfig
from quiver.wire import ErrorReport, StreamReader, keys
from quiver.wire.error import Truncated
from quiver.wire.reader import read_stream

ADD = pa.schema([pa.field("a", pa.float64(), False), pa.field("b", pa.float64(), False)])


def request(schema: pa.Schema = ADD, rows: int = 1, method: bytes | None = b"add_floats", **extra: bytes) -> bytes:
    metadata = {
        keys.REQUEST_VERSION.encode(): b"1",
        keys.PROTOCOL.encode(): b"ConformanceService",
        keys.PROTOCOL_VERSION.encode(): b"2.0.0",
        **{key.encode(): value for key, value in extra.items()},
    }
    if method is not None:
        metadata[keys.METHOD.encode()] = method
    arrays = [pa.array(["x" if field.type == pa.utf8() else 1.25] * rows, field.type) for field in schema]
    buffer = io.BytesIO()
    with ipc.new_stream(buffer, schema) as writer:
        writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema), custom_metadata=metadata)
    return buffer.getvalue()


def answer(connection: Any) -> list[tuple[pa.RecordBatch, dict[str, str]]]:
    reader = StreamReader.open(connection.reader)
    assert reader is not None, "the server closed the connection"
    items = []
    while (item := reader.read()) is not None:
        items.append(item)
    return items


def assert_serves(connection: Any) -> None:
    connection.send([request()])
    items = answer(connection)
    assert [batch.to_pydict() for batch, _ in items if batch.num_rows] == [{"result": [2.5]}]


CASES = [
    ("wrong order", request(pa.schema([ADD.field("b"), ADD.field("a")])), "TypeError", "field 0 expected name 'a'"),
    (
        "wrong nullability",
        request(pa.schema([pa.field("a", pa.float64(), True), ADD.field("b")])),
        "TypeError",
        "nullable=False",
    ),
    (
        "wrong type",
        request(pa.schema([pa.field("a", pa.utf8(), False), ADD.field("b")])),
        "TypeError",
        "expected Arrow type double",
    ),
    ("missing field", request(pa.schema([ADD.field("a")])), "TypeError", "missing required argument(s): 'b'"),
    (
        "extra field",
        request(pa.schema([*ADD, pa.field("unexpected", pa.utf8(), False)])),
        "TypeError",
        "'unexpected'",
    ),
    ("zero rows", request(rows=0), "RpcError", "ProtocolError: Expected 1 row"),
    ("two rows", request(rows=2), "RpcError", "ProtocolError: Expected 1 row in request batch, got 2"),
    ("no method", request(method=None), "RpcError", "ProtocolError: Missing 'vgi_rpc.method'"),
    (
        "a method name that is not UTF-8",
        request(method=b"\xff\xfe"),
        "RpcError",
        "ProtocolError: Invalid 'vgi_rpc.method'",
    ),
    ("no protocol", request(**{keys.PROTOCOL: b""}), "ProtocolNotSpecifiedError", ""),
]


@pytest.mark.parametrize(("name", "body", "error_type", "mentions"), CASES, ids=[case[0] for case in CASES])
def test_a_refused_request_is_typed_and_the_connection_keeps_serving(
    name: str, body: bytes, error_type: str, mentions: str
) -> None:
    connection = Server(ConformanceService, ConformanceServiceImpl(), shm=ShmConfig()).in_process()
    assert_serves(connection)
    connection.send([body])
    items = answer(connection)
    assert all(batch.num_rows == 0 for batch, _ in items), f"{name}: a refused request produced a result"
    report = ErrorReport.from_metadata(items[-1][1])
    assert (report.exception_type, mentions in report.message) == (error_type, True), report
    assert_serves(connection)


def test_a_parameter_with_a_default_must_still_be_sent() -> None:
    # vgi-rpc's clients send every declared parameter; a batch that leaves one out has the
    # wrong field count, whatever the method's defaults.
    connection = Server(ConformanceService, ConformanceServiceImpl(), shm=ShmConfig()).in_process()
    schema = pa.schema([pa.field("required", pa.int64(), False)])
    connection.send([request(schema, method=b"with_defaults")])
    report = ErrorReport.from_metadata(answer(connection)[-1][1])
    assert "expected 3 fields, got 1" in report.message
    assert_serves(connection)


def test_a_truncated_stream_names_the_byte_where_its_message_starts() -> None:
    body = request()
    schema_end = body.index(b"\xff\xff\xff\xff", 8)
    with pytest.raises(Truncated, match=f"message at stream byte {schema_end}"):
        read_stream(io.BufferedReader(io.BytesIO(body[:-20])))


def test_a_peer_gone_inside_a_request_leaves_a_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    connection = Server(ConformanceService, ConformanceServiceImpl(), shm=ShmConfig()).in_process()
    assert_serves(connection)
    connection.send([request()[:-20]])
    connection.close()
    deadline = time.monotonic() + 30
    err = ""
    while "ended inside a message" not in err:
        assert time.monotonic() < deadline, f"no stderr line about the cut request: {err!r}"
        time.sleep(0.05)
        err += capsys.readouterr().err
    assert "stream byte" in err, err
