"""Client and server in one process over pipes: every call shape, errors, cancel, limits, shm."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from quiver import Client, Limits, LogRecord, RpcError, Server, connect
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.conformance.types import AllTypes, BoundingBox, ConformanceHeader, Point, Status, build_rich_header
from quiver.rpc import ExchangeState, ProducerState, Stream, StreamState
from quiver.shm import ShmConfig
from quiver.wire import ErrorReport, GatherBuffer, StreamReader, StreamWriter, keys

NO_SHM = ShmConfig()
VALUES = pa.schema([("value", pa.float64())])


def floats(*values: float, schema: pa.Schema = VALUES) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(values, schema.field(0).type)], schema=schema)


@pytest.fixture
def server() -> Server:
    return Server(ConformanceService, ConformanceServiceImpl(), shm=NO_SHM)


@pytest.fixture
def logs() -> list[LogRecord]:
    return []


@pytest.fixture
def client(server: Server, logs: list[LogRecord]) -> Iterator[Client[ConformanceService]]:
    with_client = connect(ConformanceService, server.in_process(), on_log=logs.append, shm=NO_SHM)
    yield with_client
    with_client.close()


@pytest.fixture
def svc(client: Client[ConformanceService]) -> Any:
    return client.api


def healthy(svc: Any) -> None:
    assert svc.echo_int(42) == 42
    with svc.exchange_scale(2.0) as call:
        assert call.exchange(floats(5.0)).batch.column(0).to_pylist() == [10.0]
    assert svc.echo_string("recovered") == "recovered"


def test_unary_values(svc: Any) -> None:
    box = BoundingBox(Point(0, 10), Point(10, 0), "test")
    assert svc.echo_string("😀\x00") == "😀\x00"
    assert svc.echo_bytes(b"\xff" * 10) == b"\xff" * 10
    assert svc.echo_enum(Status.CLOSED) is Status.CLOSED
    assert svc.echo_dict({"z": 1, "a": 2}) == {"z": 1, "a": 2}
    assert svc.echo_optional_point(None) is None
    assert svc.echo_bounding_box(box) == box
    assert svc.inspect_point(Point(1.5, 2.0)) == "Point(1.5, 2.0)"
    assert svc.void_noop() is None
    assert svc.with_defaults(1) == "required=1, optional_str=default, optional_int=42"
    assert svc.concatenate("a", "b", separator="_") == "a_b"
    assert svc.echo_large_binary(b"\xa5" * (4 << 20)) == b"\xa5" * (4 << 20)
    nested = svc.pack_nested_containers([Status.ACTIVE, Status.CLOSED], [Point(1, 2)], {"a": Status.ACTIVE})
    assert nested.frozen_statuses == {Status.ACTIVE, Status.CLOSED} and nested.tagged_point == Point(1, 2)


def test_all_types_round_trip(svc: Any) -> None:
    value = AllTypes(
        "hello",
        b"\x01",
        42,
        3.25,
        True,
        [1, 2],
        ["a"],
        {"k": 1},
        Status.ACTIVE,
        Point(1, 2),
        None,
        None,
        None,
        [Point(5, 6)],
        100,
        1.5,
        [[1, 2], [3]],
        {"key": "val"},
    )
    assert svc.echo_all_types(value) == value


def test_logs_arrive_in_order_with_ids(svc: Any, logs: list[LogRecord]) -> None:
    assert svc.echo_with_multi_logs("m") == "m"
    assert [(r.level.value, r.message) for r in logs] == [
        ("DEBUG", "debug: m"),
        ("INFO", "info: m"),
        ("WARN", "warn: m"),
    ]
    assert len({r.request_id for r in logs}) == 1 and len(logs[0].request_id or "") == 16
    logs.clear()
    svc.echo_with_log_extras("x")
    assert logs[0].extra == {"source": "conformance", "detail": "x"}


def test_errors_carry_type_and_the_connection_survives(svc: Any) -> None:
    with pytest.raises(RpcError) as caught:
        svc.raise_value_error("test error")
    error = caught.value
    assert (error.error_type, error.error_message, error.error_code) == (
        "ValueError",
        "ValueError: test error",
        "UNKNOWN",
    )
    assert str(error) == "ValueError: ValueError: test error" and "raise ValueError" in (error.remote_traceback or "")
    assert error.request_id is not None
    healthy(svc)


def test_producers(svc: Any, logs: list[LogRecord]) -> None:
    assert [b.batch.to_pydict() for b in svc.produce_n(3)] == [{"index": [i], "value": [i * 10]} for i in range(3)]
    assert list(svc.produce_empty()) == []
    call = svc.produce_tick_metadata(1)
    assert call.tick({"vgi.conformance.tick": "updated"}).batch.column("seen").to_pylist() == ["updated"]
    assert call.tick() is None and call.closed
    assert len(list(svc.produce_with_logs(3))) == 3
    assert [r.message for r in logs] == ["producing batch 0", "producing batch 1", "producing batch 2"]
    annotated = list(svc.produce_annotated_batches(2, 2))
    assert annotated[1].metadata["conformance.emit_label"] == "ünïcode-λ"


def test_producer_error_mid_stream_then_healthy(svc: Any) -> None:
    seen = []
    with pytest.raises(RpcError, match="intentional error after 2 batches"):
        for batch in svc.produce_error_mid_stream(2):
            seen.append(batch)
    assert len(seen) == 2
    healthy(svc)


def test_headers(svc: Any, logs: list[LogRecord]) -> None:
    call = svc.produce_with_header_and_logs(2)
    assert call.header == ConformanceHeader(2, "producing 2 with logs")
    assert [r.message for r in logs] == ["stream init log"]
    assert len(list(call)) == 2
    rich = svc.produce_dynamic_schema(5, 2, False, True)
    assert rich.header.str_field == build_rich_header(5).str_field
    assert [b.batch.schema.names for b in rich] == [["index", "score"]] * 2
    with svc.exchange_with_header(2.0) as call:
        assert call.header.description == "scale by 2.0"
        assert call.exchange(floats(5.0)).batch.column(0).to_pylist() == [10.0]


def test_exchanges_coerce_inputs(svc: Any) -> None:
    with svc.exchange_cast_compatible() as call:
        answer = call.exchange(floats(1, 2, schema=pa.schema([("value", pa.int32())])))
        assert answer.batch.schema == VALUES and answer.batch.column(0).to_pylist() == [1.0, 2.0]
    with svc.exchange_accumulate() as call:
        call.exchange(floats(1, 2))
        assert call.exchange(floats(10)).batch.to_pydict() == {"running_sum": [13.0], "exchange_count": [2]}
    call = svc.exchange_cast_compatible()
    with pytest.raises(RpcError, match="Input schema mismatch: expected value: double, got wrong: double") as caught:
        call.exchange(floats(1, schema=pa.schema([("wrong", pa.float64())])))
    assert caught.value.error_type == "TypeError" and call.closed
    healthy(svc)


def test_exchange_metadata_reaches_the_state_unchanged(svc: Any) -> None:
    with svc.exchange_input_metadata() as call:
        first = call.exchange(floats(0), {"vgi.conformance.input": "first"}).batch.to_pydict()
        bare = call.exchange(floats(1)).batch.to_pydict()
    assert first == {"seen": ["first"], "keys": ["vgi.conformance.input"]} and bare == {"seen": [""], "keys": [""]}


def test_cancel(svc: Any) -> None:
    svc.reset_cancel_probe()
    producer = svc.cancellable_producer()
    for _ in range(3):
        producer.tick()
    producer.cancel()
    exchange = svc.cancellable_exchange()
    exchange.cancel()
    exchange.cancel()
    with pytest.raises(RpcError, match="ProtocolError: Stream has been closed or cancelled"):
        exchange.exchange(floats(99))
    closed = svc.cancellable_exchange()
    closed.close()
    closed.cancel()
    assert svc.cancel_probe_counters() == [3, 0, 2]
    healthy(svc)


def test_one_call_at_a_time(svc: Any) -> None:
    call = svc.produce_n(2)
    with pytest.raises(RpcError, match="still open"):
        svc.echo_int(1)
    call.close()
    assert svc.echo_int(1) == 1


def test_init_errors_complete_the_call(svc: Any) -> None:
    with pytest.raises(RpcError, match="intentional init error"):
        svc.produce_error_on_init().tick()
    with pytest.raises(RpcError, match="intentional exchange init error"):
        svc.exchange_error_on_init().exchange(floats(1))
    healthy(svc)


class Newer:
    protocol_name: ClassVar[str] = "ConformanceService"
    protocol_version: ClassVar[str] = "2.1.0"

    def echo_int(self, value: int) -> int: ...
    def produce_n(self, count: int) -> Stream[ProducerState]: ...


class Patched(Newer):
    protocol_version: ClassVar[str] = "2.0.7"

    def no_such_method(self) -> None: ...
    def echo_string(self, value: int) -> str: ...


class Stranger:
    def echo_int(self, value: int) -> int: ...


def test_protocol_version_gate(server: Server) -> None:
    newer = connect(Newer, server.in_process(), shm=NO_SHM).api
    with pytest.raises(RpcError) as caught:
        newer.echo_int(1)
    error = caught.value
    assert (error.error_type, error.error_code, error.error_kind) == (
        "ProtocolVersionError",
        "FAILED_PRECONDITION",
        "protocol_version_mismatch",
    )
    assert "server is too old" in error.error_message
    assert error.error_details and error.error_details[0]["@type"] == "vgi_rpc.PreconditionFailure"
    assert connect(Patched, server.in_process(), shm=NO_SHM).api.echo_int(5) == 5


def test_routing_and_parameter_errors(server: Server) -> None:
    patched = connect(Patched, server.in_process(), shm=NO_SHM).api
    with pytest.raises(RpcError, match="has no method 'no_such_method'") as caught:
        patched.no_such_method()
    assert caught.value.error_code == "UNIMPLEMENTED"
    with pytest.raises(
        RpcError, match="parameter 'value' expected Arrow type string but the request batch carried int64"
    ):
        patched.echo_string(5)
    with pytest.raises(RpcError, match="does not host protocol 'Stranger'"):
        connect(Stranger, server.in_process(), shm=NO_SHM).api.echo_int(1)


def raw_request(
    method: str | None, metadata: dict[str, str] | None = None, batch: pa.RecordBatch | None = None
) -> list[Any]:
    if batch is None:
        batch = pa.RecordBatch.from_pydict({"value": [5]}, schema=pa.schema([("value", pa.int64(), False)]))
    base = {keys.REQUEST_VERSION: "1", keys.PROTOCOL: "ConformanceService", keys.PROTOCOL_VERSION: "2.0.0"}
    if method is not None:
        base[keys.METHOD] = method
    sink = GatherBuffer()
    writer = StreamWriter(sink, batch.schema)
    writer.write(batch, {**base, **(metadata or {})})
    writer.close()
    return sink.take()


def reply(connection: Any) -> tuple[pa.Schema, list[tuple[pa.RecordBatch, dict[str, str]]]]:
    reader = StreamReader.open(connection.reader)
    assert reader is not None
    items = []
    while (item := reader.read()) is not None:
        items.append(item)
    return reader.schema, items


def error_of(connection: Any) -> ErrorReport:
    _, items = reply(connection)
    return ErrorReport.from_metadata(items[-1][1])


@pytest.mark.parametrize(
    ("method", "metadata", "expected"),
    [
        (None, {}, "RpcError: ProtocolError: Missing 'vgi_rpc.method'"),
        ("echo_int", {keys.REQUEST_VERSION: "2"}, "VersionError: Unsupported request version b'2'"),
        ("__describe__", {}, "MethodNotImplementedError: '__describe__' was retired"),
        ("__foo__", {}, "This server does not implement the reserved method '__foo__'"),
        ("echo_int", {keys.PROTOCOL: ""}, "ProtocolNotSpecifiedError"),
        ("echo_int", {keys.PROTOCOL: "bad name!"}, "is not a protocol name"),
        ("echo_int", {keys.PROTOCOL_VERSION: "2.0"}, "client sent a malformed protocol_version"),
    ],
)
def test_envelope_errors(server: Server, method: str | None, metadata: dict[str, str], expected: str) -> None:
    connection = server.in_process()
    connection.send(raw_request(method, metadata))
    report = error_of(connection)
    assert f"{report.exception_type}: {report.message}".startswith(expected) or expected in report.message
    connection.send(raw_request("echo_int"))
    assert reply(connection)[1][0][0].to_pydict() == {"result": [5]}


def test_transport_options(server: Server) -> None:
    connection = server.in_process()
    connection.send(raw_request("__transport_options__", {keys.PROTOCOL: ""}, pa.RecordBatch.from_pydict({})))
    schema, items = reply(connection)
    assert len(schema) == 0 and items[0][1][keys.TRANSPORT_SHM] == "true"


def test_a_rejected_stream_call_drains_its_input(server: Server) -> None:
    connection = server.in_process()
    request = raw_request("produce_n", {}, pa.RecordBatch.from_pydict({"count": ["x"]}))
    connection.send(request)
    assert "expected Arrow type int64" in error_of(connection).message
    ticks = GatherBuffer()
    writer = StreamWriter(ticks, pa.schema([]))
    writer.write(pa.RecordBatch.from_pydict({}))
    writer.close()
    connection.send(ticks.take() + raw_request("echo_int"))
    assert reply(connection)[1][0][0].to_pydict() == {"result": [5]}


def test_malformed_requests_are_answered_and_the_server_keeps_serving() -> None:
    server = Server(ConformanceService, ConformanceServiceImpl(), shm=NO_SHM, limits=Limits(body_bytes_max=1 << 16))
    connection = server.in_process()
    big = pa.RecordBatch.from_pydict(
        {"value": [b"x" * (1 << 17)]}, schema=pa.schema([("value", pa.large_binary(), False)])
    )
    connection.send(raw_request("echo_large_binary", {}, big))
    assert "exceeds the limit of 65536" in error_of(connection).message
    two_rows = pa.RecordBatch.from_pydict({"value": [1, 2]})
    connection.send(raw_request("echo_int", {}, two_rows))
    assert "Expected 1 row in request batch, got 2" in error_of(connection).message
    connection.send(raw_request("echo_int"))
    assert reply(connection)[1][0][0].to_pydict() == {"result": [5]}


def test_garbage_gets_a_clear_error_then_the_connection_closes(server: Server) -> None:
    connection = server.in_process()
    connection.send([b"GET / HTTP/1.1\r\n\r\n"])
    assert "not an Arrow IPC stream" in error_of(connection).message
    assert StreamReader.open(connection.reader) is None


def test_truncated_request_ends_the_session_quietly(server: Server) -> None:
    connection = server.in_process()
    chunks = raw_request("echo_int")
    data = b"".join(bytes(chunk) for chunk in chunks)
    connection.send([data[: len(data) // 2]])
    connection.close()


class Noisy(StreamState):
    def process(self, input: Any, out: Any, ctx: Any) -> None:
        out.emit_pydict({"value": [1.0]})
        out.emit_pydict({"value": [2.0]})


def test_a_turn_emitting_twice_is_an_error() -> None:
    class Proto:
        def two(self) -> Stream[ExchangeState]: ...

    class Impl:
        def two(self) -> Stream[Any, None]:
            return Stream(VALUES, Noisy(), input_schema=VALUES)

    api = connect(Proto, Server(Proto, Impl(), shm=NO_SHM).in_process(), shm=NO_SHM).api
    with pytest.raises(RpcError, match="Only one data batch may be emitted per call"):
        api.two().exchange(floats(1))


def test_implementations_are_checked_when_hosted() -> None:
    class Incomplete:
        pass

    with pytest.raises(TypeError, match="does not implement ConformanceService"):
        Server(ConformanceService, Incomplete())
