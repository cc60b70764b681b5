"""Back-to-back IPC streams, per-batch metadata, log/error records, roles and limits."""

from __future__ import annotations

import io
import json
import struct

import pyarrow as pa
import pytest

from quiver.wire import (
    END_OF_STREAM,
    BatchRole,
    ConnectionClosed,
    ErrorReport,
    GatherBuffer,
    LimitExceeded,
    Limits,
    LogLevel,
    LogRecord,
    Malformed,
    StreamReader,
    StreamWriter,
    Truncated,
    classify,
    keys,
)
from quiver.wire.framing import read_message

SCHEMA = pa.schema([("value", pa.int64())])


def stream(*batches: tuple[pa.RecordBatch, dict[str, str] | None], schema: pa.Schema = SCHEMA) -> bytes:
    sink = GatherBuffer()
    writer = StreamWriter(sink, schema)
    for batch, metadata in batches:
        writer.write(batch, metadata)
    writer.close()
    return b"".join(bytes(chunk) for chunk in sink.take())


def batch(*values: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"value": list(values)}, schema=SCHEMA)


def test_streams_are_read_one_at_a_time_without_reading_ahead() -> None:
    first = stream((batch(1), {"k": "a"}), (batch(2, 3), None))
    second = stream((batch(4), None))
    source = io.BytesIO(first + second + b"trailing")
    reader = StreamReader.open(source)
    assert reader is not None and reader.schema == SCHEMA
    assert reader.read() == (batch(1), {"k": "a"})
    assert reader.read() == (batch(2, 3), {})
    assert reader.read() is None
    assert source.tell() == len(first)
    assert reader.read() is None and source.tell() == len(first), "a finished stream consumes nothing"
    follower = StreamReader.open(source)
    assert follower is not None and follower.read() == (batch(4), {}) and follower.read() is None
    assert source.read() == b"trailing"


def test_clean_end_of_input_before_a_stream_is_not_an_error() -> None:
    assert StreamReader.open(io.BytesIO(b"")) is None


def test_metadata_round_trips_including_non_utf8_bytes() -> None:
    metadata = {"vgi.unicode": "ünïcode-λ", "raw": b"\xff\xfe".decode("utf-8", "surrogateescape")}
    reader = StreamReader.open(io.BytesIO(stream((batch(1), metadata))))
    assert reader is not None
    assert reader.read() == (batch(1), metadata)
    raw = pa.ipc.open_stream(stream((batch(1), metadata))).read_next_batch_with_custom_metadata()[1]
    assert raw[b"raw"] == b"\xff\xfe"


def test_dictionary_messages_precede_their_batch() -> None:
    schema = pa.schema([("s", pa.dictionary(pa.int16(), pa.string()))])
    data = pa.RecordBatch.from_arrays([pa.array(["ACTIVE"], schema.field("s").type)], schema=schema)
    reader = StreamReader.open(io.BytesIO(stream((data, None), schema=schema)))
    assert reader is not None
    assert reader.read()[0].column(0).to_pylist() == ["ACTIVE"]  # type: ignore[index]


def test_drain_skips_the_rest_of_a_stream() -> None:
    source = io.BytesIO(stream((batch(1), None), (batch(2), None), (batch(3), None)) + stream((batch(9), None)))
    reader = StreamReader.open(source)
    assert reader is not None and reader.read() is not None
    assert reader.drain() == 2
    assert reader.read() is None
    follower = StreamReader.open(source)
    assert follower is not None and follower.read() == (batch(9), {})


def test_garbage_is_not_recoverable() -> None:
    with pytest.raises(Malformed, match="continuation marker") as caught:
        StreamReader.open(io.BytesIO(b"GET / HTTP/1.1\r\n\r\n"))
    assert not caught.value.recoverable


def test_truncated_input_is_reported() -> None:
    data = stream((batch(1), None))
    reader = StreamReader.open(io.BytesIO(data[:-20]))
    assert reader is not None
    with pytest.raises(Truncated):
        reader.read()


def test_oversized_body_is_skipped_and_the_next_stream_still_reads() -> None:
    big = pa.RecordBatch.from_pydict({"value": list(range(10_000))}, schema=SCHEMA)
    source = io.BytesIO(stream((big, None)) + stream((batch(7), None)))
    reader = StreamReader.open(source, Limits(body_bytes_max=1024))
    assert reader is not None
    with pytest.raises(LimitExceeded, match="exceeds the limit of 1024") as caught:
        reader.read()
    assert caught.value.recoverable
    reader.drain()
    follower = StreamReader.open(source)
    assert follower is not None and follower.read() == (batch(7), {})


def test_oversized_header_and_too_many_messages_are_refused() -> None:
    with pytest.raises(LimitExceeded, match="header"):
        StreamReader.open(io.BytesIO(stream((batch(1), {"k": "v" * 4096}))), Limits(metadata_bytes_max=1024)).read()  # type: ignore[union-attr]
    reader = StreamReader.open(
        io.BytesIO(stream(*[(batch(i), None) for i in range(5)])), Limits(messages_per_stream_max=3)
    )
    assert reader is not None
    with pytest.raises(Malformed, match="more than 3 messages"):
        while reader.read() is not None:
            pass


def test_invalid_batches_fail_validation_but_keep_the_framing() -> None:
    schema = pa.schema([("s", pa.string())])
    offsets = pa.py_buffer(struct.pack("<ii", 0, 2))
    bad = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\xff\xfe")])
    source = io.BytesIO(
        stream((pa.RecordBatch.from_arrays([bad], schema=schema), None), schema=schema) + stream((batch(5), None))
    )
    reader = StreamReader.open(source)
    assert reader is not None
    with pytest.raises(Malformed, match="validation") as caught:
        reader.read()
    assert caught.value.recoverable
    reader.drain()
    follower = StreamReader.open(source)
    assert follower is not None and follower.read() == (batch(5), {})


def test_a_stream_must_start_with_a_schema() -> None:
    with pytest.raises(Malformed, match="ended before its schema"):
        StreamReader.open(io.BytesIO(END_OF_STREAM))


def test_gather_coalesces_small_writes_and_keeps_large_buffers_by_reference() -> None:
    big = pa.RecordBatch.from_pydict({"value": list(range(100_000))}, schema=SCHEMA)
    sink = GatherBuffer()
    writer = StreamWriter(sink, SCHEMA)
    writer.write(big, {"k": "v"})
    writer.close()
    chunks = sink.take()
    assert len(chunks) == 3, "prefix+schema+header, the 800 KB body, padding+end marker"
    assert isinstance(chunks[1], pa.Buffer) and chunks[1].address == big.column(0).buffers()[1].address
    assert sink.take() == []


def test_log_record_metadata_round_trip() -> None:
    record = LogRecord(LogLevel.INFO, "info: x", {"source": "conformance"})
    metadata = record.to_metadata()
    assert metadata == {
        keys.LOG_LEVEL: "INFO",
        keys.LOG_MESSAGE: "info: x",
        keys.LOG_EXTRA: '{"source": "conformance"}',
    }
    assert LogRecord.from_metadata({**metadata, keys.SERVER_ID: "s"}) == LogRecord(
        LogLevel.INFO, "info: x", {"source": "conformance"}, "s"
    )
    with pytest.raises(ValueError):
        LogRecord.from_metadata({keys.LOG_LEVEL: "WARNING", keys.LOG_MESSAGE: "m"})


def test_error_report_carries_type_code_kind_and_details() -> None:
    try:
        raise ValueError("test error")
    except ValueError as exc:
        report = ErrorReport.from_exception(exc)
    metadata = report.to_metadata()
    assert list(metadata)[:3] == [keys.LOG_LEVEL, keys.LOG_MESSAGE, keys.LOG_EXTRA]
    assert metadata[keys.LOG_MESSAGE] == "ValueError: test error"
    assert metadata[keys.ERROR_CODE] == "UNKNOWN"
    extra = json.loads(metadata[keys.LOG_EXTRA])
    assert extra["exception_type"] == "ValueError" and "test error" in extra["traceback"]
    back = ErrorReport.from_metadata(metadata)
    assert (back.exception_type, back.message, back.code) == ("ValueError", "ValueError: test error", "UNKNOWN")


def test_error_fields_hoist_from_the_extras_when_top_level_keys_are_absent() -> None:
    extra = {"exception_type": "X", "error_code": "UNIMPLEMENTED", "error_kind": "k", "error_details": [{"a": 1}]}
    report = ErrorReport.from_metadata(
        {keys.LOG_LEVEL: "EXCEPTION", keys.LOG_MESSAGE: "m", keys.LOG_EXTRA: json.dumps(extra)}
    )
    assert (report.code, report.kind, report.details) == ("UNIMPLEMENTED", "k", [{"a": 1}])
    top = ErrorReport.from_metadata(
        {
            keys.LOG_LEVEL: "EXCEPTION",
            keys.LOG_MESSAGE: "m",
            keys.LOG_EXTRA: json.dumps(extra),
            keys.ERROR_CODE: "INTERNAL",
            keys.ERROR_DETAILS: '[{"b":2}]',
        }
    )
    assert (top.code, top.details) == ("INTERNAL", [{"b": 2}])
    assert ErrorReport.from_metadata({keys.LOG_LEVEL: "EXCEPTION", keys.LOG_MESSAGE: "m"}).exception_type == "EXCEPTION"


def test_oversized_error_details_are_dropped() -> None:
    metadata = ErrorReport("E", "m", details=[{"x": "y" * 5000}]).to_metadata()
    assert keys.ERROR_DETAILS not in metadata and "error_details" not in json.loads(metadata[keys.LOG_EXTRA])


@pytest.mark.parametrize(
    ("rows", "metadata", "role"),
    [
        (1, {keys.LOG_LEVEL: "INFO", keys.LOG_MESSAGE: "m"}, BatchRole.DATA),
        (0, {}, BatchRole.DATA),
        (0, {keys.LOG_LEVEL: "INFO", keys.LOG_MESSAGE: "m"}, BatchRole.LOG),
        (0, {keys.LOG_LEVEL: "INFO"}, BatchRole.DATA),
        (0, {keys.LOG_LEVEL: "EXCEPTION", keys.LOG_MESSAGE: "m"}, BatchRole.ERROR),
        (0, {keys.SHM_OFFSET: "65536", keys.SHM_LENGTH: "8"}, BatchRole.SHM_POINTER),
        (0, {keys.CANCEL: "1"}, BatchRole.CANCEL),
        (0, {keys.LOCATION: "s3://x"}, BatchRole.EXTERNAL),
    ],
)
def test_classify(rows: int, metadata: dict[str, str], role: BatchRole) -> None:
    assert classify(batch(*range(rows)), metadata) is role


def test_closed_connection_is_distinguished_from_truncation() -> None:
    with pytest.raises(ConnectionClosed):
        read_message(io.BytesIO(b""), Limits())
    with pytest.raises(Truncated):
        read_message(io.BytesIO(b"\xff\xff"), Limits())
