"""Every conformance method through vgi-rpc's own client, on its reference worker and on ours.

Each ``ConformanceService`` and ``conformance.Secondary.v1`` method is called with the same
arguments on vgi-rpc's reference worker and on this package's worker; the outcomes that differ
are printed.

Runs under the oracle's Python (vgi-rpc 0.52.2), never this package's: quiver does not import
vgi_rpc. ``test_conformance_parity.py`` runs it and asserts an empty difference.

    python conformance_parity.py '<reference target>' '<quiver target>'

A target is JSON: a command (a list) that starts a worker on stdio, or the URL (a string) of
an HTTP server already listening.

Prints one JSON object: ``methods`` (every method called at least once), ``cases`` (how many
calls) and ``differences`` (case -> {reference, quiver}). An outcome is the value returned (as
plain JSON), or the error's type, message, code and kind, plus the logs the call emitted.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
from vgi_rpc.conformance import ConformanceService
from vgi_rpc.conformance._types import (
    AllTypes,
    BoundingBox,
    ContainerWideTypes,
    DeepNested,
    EmbeddedArrow,
    Point,
    Status,
    WideTypes,
)
from vgi_rpc.conformance.secondary import Secondary
from vgi_rpc.log import Message
from vgi_rpc.rpc import AnnotatedBatch, RpcError, connect

CASES_MAX = 400


def plain(value: Any) -> Any:
    """A JSON-comparable form of anything a conformance call returns."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, AnnotatedBatch):
        return {"batch": plain(value.batch), "metadata": plain(value.custom_metadata)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, pa.RecordBatch):
        return {"schema": str(value.schema), "rows": plain(value.to_pylist())}
    if isinstance(value, pa.Schema):
        return str(value)
    if isinstance(value, pa.KeyValueMetadata):
        return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()} if len(value) <= 256 else {"bytes": len(value)}
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dt.date, dt.time, dt.datetime, dt.timedelta, Decimal)):
        return f"{type(value).__name__}:{value}"
    if isinstance(value, (frozenset, set)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def log_entry(message: Message) -> Any:
    extra = {k: v for k, v in (message.extra or {}).items() if k not in ("server_id", "request_id")}
    return [message.level.name, message.message, plain(extra)]


def values(*numbers: float) -> AnnotatedBatch:
    return AnnotatedBatch.from_pydict({"value": pa.array(numbers, pa.float64())})


def produce(method: str, **kwargs: Any) -> Callable[[Any], Any]:
    def run(proxy: Any) -> Any:
        session = getattr(proxy, method)(**kwargs)
        header = getattr(session, "header", None)
        return {"header": plain(header), "batches": [plain(b) for b in session]}

    return run


def exchange(method: str, inputs: list[AnnotatedBatch], **kwargs: Any) -> Callable[[Any], Any]:
    def run(proxy: Any) -> Any:
        outputs: list[Any] = []
        with getattr(proxy, method)(**kwargs) as session:
            header = getattr(session, "header", None)
            for batch in inputs:
                outputs.append(plain(session.exchange(batch)))
        return {"header": plain(header), "outputs": outputs}

    return run


def tick(proxy: Any) -> Any:
    session = proxy.produce_tick_metadata(count=1)
    seen = session.tick(pa.KeyValueMetadata({b"vgi.conformance.tick": b"updated"}))
    session.close()
    return plain(seen)


def cancel_producer(proxy: Any) -> Any:
    proxy.reset_cancel_probe()
    session = proxy.cancellable_producer()
    first = next(iter(session))
    session.cancel()
    return {"first": plain(first), "after": proxy.echo_int(value=1)}


def cancel_exchange(proxy: Any) -> Any:
    proxy.reset_cancel_probe()
    session = proxy.cancellable_exchange()
    echoed = session.exchange(values(1.0, 2.0))
    session.cancel()
    return {"echoed": plain(echoed), "after": proxy.echo_int(value=1)}


def unary(method: str, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda proxy: plain(getattr(proxy, method)(**kwargs))


POINT = Point(x=1.5, y=-2.0)
ALL_TYPES = AllTypes(
    str_field="héllo",
    bytes_field=b"\x00\xff",
    int_field=-(2**62),
    float_field=3.25,
    bool_field=True,
    list_of_int=[1, 2, 3],
    list_of_str=["a", ""],
    dict_field={"k": 1},
    enum_field=Status.ACTIVE,
    nested_point=POINT,
    optional_str=None,
    optional_int=7,
    optional_nested=None,
    list_of_nested=[POINT, Point(x=0.0, y=0.0)],
    annotated_int32=2**31 - 1,
    annotated_float32=1.5,
    nested_list=[[1], [], [2, 3]],
    dict_str_str={"a": "b"},
)
WIDE = WideTypes(
    int8_field=-128,
    int16_field=32767,
    int32_field=-(2**31),
    uint8_field=255,
    uint16_field=65535,
    uint32_field=2**32 - 1,
    uint64_field=2**64 - 1,
    float32_field=0.5,
    date_field=dt.date(2024, 2, 29),
    timestamp_field=dt.datetime(2024, 1, 2, 3, 4, 5, 6),
    timestamp_utc_field=dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
    time_field=dt.time(23, 59, 59, 999999),
    duration_field=dt.timedelta(days=-1, microseconds=5),
    decimal_field=Decimal("1234567890123456.7890"),
    large_string_field="large",
    large_binary_field=b"large",
    fixed_binary_field=b"12345678",
)
CONTAINER_WIDE = ContainerWideTypes(
    list_decimal=[Decimal("1.0000"), Decimal("-2.5000")],
    list_date=[dt.date(2000, 1, 1)],
    list_timestamp=[dt.datetime(2000, 1, 1, 12)],
    optional_date=None,
    optional_decimal=Decimal("0.0001"),
    optional_timestamp=None,
    dict_str_decimal={"x": Decimal("3.1400")},
    frozenset_int=frozenset({3, 1, 2}),
    list_optional_int=[1, None, 3],
)
DEEP = DeepNested(
    list_of_lists_decimal=[[Decimal("1.0000")], []],
    optional_list_date=[dt.date(1999, 12, 31)],
    dict_encoded_string="repeated",
    list_of_dict_encoded=["a", "b", "a"],
)
EMBEDDED = EmbeddedArrow(
    batch=pa.RecordBatch.from_pydict({"a": [1, 2], "b": ["x", None]}),
    schema=pa.schema([("a", pa.int64()), ("b", pa.string())]),
)


CASES: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("echo_string", "unicode", unary("echo_string", value="😀\x00é")),
    ("echo_bytes", "binary", unary("echo_bytes", data=b"\x00\x01\xff")),
    ("echo_int", "min", unary("echo_int", value=-(2**63))),
    ("echo_float", "nan", unary("echo_float", value=float("nan"))),
    ("echo_float", "neg-zero", unary("echo_float", value=-0.0)),
    ("echo_bool", "false", unary("echo_bool", value=False)),
    ("void_noop", "", unary("void_noop")),
    ("void_with_param", "", unary("void_with_param", value=3)),
    ("oversized_unary", "small", unary("oversized_unary", target_bytes=1000)),
    ("oversized_unary", "negative", unary("oversized_unary", target_bytes=-1)),
    ("published_string", "no-storage", unary("published_string", value="v", include_sha256=True)),
    ("echo_enum", "", unary("echo_enum", status=Status.CLOSED)),
    ("echo_list", "", unary("echo_list", values=["a", "", "c"])),
    ("echo_list", "empty", unary("echo_list", values=[])),
    ("echo_dict", "", unary("echo_dict", mapping={"z": 1, "a": -2})),
    ("echo_nested_list", "", unary("echo_nested_list", matrix=[[1, 2], [], [3]])),
    ("echo_status_list", "", unary("echo_status_list", statuses=[Status.PENDING, Status.CLOSED])),
    ("echo_dict_encoded_string", "", unary("echo_dict_encoded_string", value="dict")),
    ("echo_optional_string", "none", unary("echo_optional_string", value=None)),
    ("echo_optional_string", "some", unary("echo_optional_string", value="s")),
    ("echo_optional_int", "none", unary("echo_optional_int", value=None)),
    ("echo_optional_point", "none", unary("echo_optional_point", point=None)),
    ("echo_optional_point", "some", unary("echo_optional_point", point=POINT)),
    ("echo_annotated_optional_int", "none", unary("echo_annotated_optional_int", value=None)),
    ("echo_annotated_optional_int", "some", unary("echo_annotated_optional_int", value=-5)),
    ("echo_outer_optional_non_null", "none", unary("echo_outer_optional_non_null", value=None)),
    ("echo_outer_optional_non_null", "some", unary("echo_outer_optional_non_null", value=9)),
    ("echo_point", "", unary("echo_point", point=POINT)),
    ("echo_all_types", "", unary("echo_all_types", data=ALL_TYPES)),
    ("echo_bounding_box", "", unary("echo_bounding_box", box=BoundingBox(POINT, Point(x=3.0, y=4.0), "box"))),
    ("inspect_point", "", unary("inspect_point", point=POINT)),
    ("echo_wide_types", "", unary("echo_wide_types", data=WIDE)),
    ("echo_container_wide_types", "", unary("echo_container_wide_types", data=CONTAINER_WIDE)),
    ("echo_embedded_arrow", "", unary("echo_embedded_arrow", data=EMBEDDED)),
    ("echo_deep_nested", "", unary("echo_deep_nested", data=DEEP)),
    (
        "pack_nested_containers",
        "",
        unary(
            "pack_nested_containers",
            statuses=[Status.ACTIVE, Status.PENDING],
            points=[POINT],
            status_by_name={"a": Status.CLOSED},
        ),
    ),
    ("pack_nested_containers", "empty", unary("pack_nested_containers", statuses=[], points=[], status_by_name={})),
    ("echo_int32", "", unary("echo_int32", value=-(2**31))),
    ("echo_float32", "", unary("echo_float32", value=0.1)),
    ("echo_int8", "", unary("echo_int8", value=-128)),
    ("echo_int8", "overflow", unary("echo_int8", value=128)),
    ("echo_int16", "", unary("echo_int16", value=-32768)),
    ("echo_uint8", "", unary("echo_uint8", value=255)),
    ("echo_uint16", "", unary("echo_uint16", value=65535)),
    ("echo_uint32", "", unary("echo_uint32", value=2**32 - 1)),
    ("echo_uint64", "", unary("echo_uint64", value=2**64 - 1)),
    ("echo_date", "", unary("echo_date", value=dt.date(1, 1, 1))),
    ("echo_timestamp", "", unary("echo_timestamp", value=dt.datetime(2024, 5, 6, 7, 8, 9, 123456))),
    (
        "echo_timestamp_utc",
        "",
        unary("echo_timestamp_utc", value=dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)),
    ),
    ("echo_time", "", unary("echo_time", value=dt.time(0, 0, 0, 1))),
    ("echo_duration", "", unary("echo_duration", value=dt.timedelta(seconds=-1, microseconds=1))),
    ("echo_decimal", "", unary("echo_decimal", value=Decimal("-9999999999999999.9999"))),
    ("echo_large_string", "", unary("echo_large_string", value="x" * 1000)),
    ("echo_large_binary", "", unary("echo_large_binary", value=b"\x01" * 10)),
    ("echo_fixed_binary", "", unary("echo_fixed_binary", value=b"abcdefgh")),
    ("echo_fixed_binary", "wrong-width", unary("echo_fixed_binary", value=b"abc")),
    ("add_floats", "", unary("add_floats", a=0.1, b=0.2)),
    ("concatenate", "default", unary("concatenate", prefix="a", suffix="b")),
    ("concatenate", "given", unary("concatenate", prefix="a", suffix="b", separator="::")),
    ("with_defaults", "defaults", unary("with_defaults", required=1)),
    ("with_defaults", "given", unary("with_defaults", required=1, optional_str="s", optional_int=-1)),
    ("raise_value_error", "", unary("raise_value_error", message="bad value")),
    ("raise_runtime_error", "", unary("raise_runtime_error", message="bad runtime")),
    ("raise_type_error", "", unary("raise_type_error", message="bad type")),
    ("echo_with_info_log", "", unary("echo_with_info_log", value="v")),
    ("echo_with_multi_logs", "", unary("echo_with_multi_logs", value="v")),
    ("echo_with_log_extras", "", unary("echo_with_log_extras", value="v")),
    ("echo_with_all_log_levels", "", unary("echo_with_all_log_levels", value="v")),
    ("produce_n", "", produce("produce_n", count=3)),
    ("produce_tick_metadata", "", tick),
    ("produce_empty", "", produce("produce_empty")),
    ("produce_single", "", produce("produce_single")),
    ("produce_large_batches", "", produce("produce_large_batches", rows_per_batch=1000, batch_count=3)),
    ("produce_annotated_batches", "", produce("produce_annotated_batches", count=3, rows_per_batch=2)),
    ("produce_with_logs", "", produce("produce_with_logs", count=2)),
    ("produce_error_mid_stream", "", produce("produce_error_mid_stream", emit_before_error=2)),
    ("produce_error_on_init", "", produce("produce_error_on_init")),
    ("produce_oversized_batch", "", produce("produce_oversized_batch", rows_per_batch=10)),
    ("produce_with_header", "", produce("produce_with_header", count=2)),
    ("produce_with_header_and_logs", "", produce("produce_with_header_and_logs", count=2)),
    ("produce_with_rich_header", "", produce("produce_with_rich_header", seed=7, count=2)),
    ("produce_with_rich_header", "seed0", produce("produce_with_rich_header", seed=0, count=1)),
    (
        "produce_dynamic_schema",
        "all",
        produce("produce_dynamic_schema", seed=3, count=2, include_strings=True, include_floats=True),
    ),
    (
        "produce_dynamic_schema",
        "none",
        produce("produce_dynamic_schema", seed=4, count=1, include_strings=False, include_floats=False),
    ),
    ("exchange_scale", "", exchange("exchange_scale", [values(1.0, -2.0), values()], factor=2.5)),
    ("exchange_accumulate", "", exchange("exchange_accumulate", [values(1.0, 2.0), values(10.0)])),
    ("exchange_with_logs", "", exchange("exchange_with_logs", [values(1.0)])),
    ("exchange_error_on_nth", "", exchange("exchange_error_on_nth", [values(1.0), values(2.0)], fail_on=2)),
    ("exchange_zero_columns", "", exchange("exchange_zero_columns", [AnnotatedBatch(pa.record_batch([], []))])),
    (
        "exchange_input_metadata",
        "",
        exchange(
            "exchange_input_metadata",
            [AnnotatedBatch(values(1.0).batch, pa.KeyValueMetadata({b"k": b"v"})), values(2.0)],
        ),
    ),
    ("exchange_error_on_init", "", exchange("exchange_error_on_init", [values(1.0)])),
    ("exchange_oversized", "", exchange("exchange_oversized", [values(1.0)], rows_per_batch=5)),
    (
        "exchange_cast_compatible",
        "float32",
        exchange("exchange_cast_compatible", [AnnotatedBatch.from_pydict({"value": pa.array([1.5], pa.float32())})]),
    ),
    ("exchange_with_header", "", exchange("exchange_with_header", [values(2.0)], factor=3.0)),
    ("exchange_with_rich_header", "", exchange("exchange_with_rich_header", [values(2.0)], seed=5, factor=0.5)),
    ("produce_n", "zero", produce("produce_n", count=0)),
    ("produce_n", "negative", produce("produce_n", count=-1)),
    ("produce_large_batches", "empty", produce("produce_large_batches", rows_per_batch=0, batch_count=2)),
    ("produce_annotated_batches", "zero", produce("produce_annotated_batches", count=0, rows_per_batch=1)),
    ("produce_error_mid_stream", "at-once", produce("produce_error_mid_stream", emit_before_error=0)),
    ("produce_oversized_batch", "empty", produce("produce_oversized_batch", rows_per_batch=0)),
    ("produce_with_header", "zero", produce("produce_with_header", count=0)),
    ("exchange_error_on_nth", "first", exchange("exchange_error_on_nth", [values(1.0)], fail_on=1)),
    ("exchange_error_on_nth", "never", exchange("exchange_error_on_nth", [values(1.0)], fail_on=0)),
    ("exchange_scale", "nan", exchange("exchange_scale", [values(float("inf"), 1.0)], factor=float("nan"))),
    (
        "exchange_cast_compatible",
        "int64",
        exchange("exchange_cast_compatible", [AnnotatedBatch.from_pydict({"value": pa.array([2], pa.int64())})]),
    ),
    (
        "exchange_cast_compatible",
        "string",
        exchange("exchange_cast_compatible", [AnnotatedBatch.from_pydict({"value": pa.array(["x"])})]),
    ),
    (
        "exchange_cast_compatible",
        "extra-column",
        exchange("exchange_cast_compatible", [AnnotatedBatch.from_pydict({"value": [1.0], "other": [1]})]),
    ),
    (
        "exchange_accumulate",
        "nulls",
        exchange("exchange_accumulate", [AnnotatedBatch.from_pydict({"value": pa.array([None, 1.0], pa.float64())})]),
    ),
    ("exchange_oversized", "empty", exchange("exchange_oversized", [values(1.0)], rows_per_batch=0)),
    ("oversized_unary", "zero", unary("oversized_unary", target_bytes=0)),
    ("echo_optional_int", "zero", unary("echo_optional_int", value=0)),
    ("echo_string", "empty", unary("echo_string", value="")),
    ("echo_dict", "empty", unary("echo_dict", mapping={})),
    ("echo_uint64", "negative", unary("echo_uint64", value=-1)),
    ("raise_value_error", "empty", unary("raise_value_error", message="")),
    ("cancellable_producer", "", cancel_producer),
    ("cancellable_exchange", "", cancel_exchange),
    ("cancel_probe_counters", "", unary("cancel_probe_counters")),
    ("reset_cancel_probe", "", unary("reset_cancel_probe")),
    ("open_counter", "pipe", unary("open_counter", initial=1)),
    ("increment_counter", "pipe", unary("increment_counter", by=1)),
    ("close_counter", "pipe", unary("close_counter")),
    ("stream_session_counter", "pipe", produce("stream_session_counter", count=1)),
    (
        "exchange_session_counter",
        "pipe",
        exchange("exchange_session_counter", [AnnotatedBatch.from_pydict({"by": [1]})]),
    ),
]

SECONDARY_CASES: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("echo_string", "", unary("echo_string", value="x")),
    ("fail", "retry", unary("fail", code="UNAVAILABLE", kind="down", retry_delay_seconds=2.5)),
    ("fail", "no-kind", unary("fail", code="NOT_FOUND", kind="", retry_delay_seconds=0.0)),
    ("fail", "bad-code", unary("fail", code="OK", kind="x", retry_delay_seconds=0.0)),
    ("fail_oversized", "", unary("fail_oversized")),
]


def outcome(run: Callable[[Any], Any], proxy: Any, logs: list[Message]) -> Any:
    logs.clear()
    try:
        result: Any = {"value": run(proxy)}
    except RpcError as error:
        result = {
            "error": [error.error_type, error.error_message.split("\n")[0]],
            "code": str(getattr(error, "error_code", "")),
            "kind": getattr(error, "error_kind", None),
            "details": plain(getattr(error, "error_details", None)),
        }
    except Exception as error:  # the client refusing a call is an outcome to compare too
        result = {"client_error": [type(error).__name__, str(error).split("\n")[0]]}
    result["logs"] = [log_entry(message) for message in logs]
    return result


def broken(result: dict[str, Any]) -> bool:
    """Whether a call left the connection unusable, so the next case starts on a fresh worker."""
    return "client_error" in result or result.get("error", [""])[0] == "TransportError"


def open_proxy(target: list[str] | str, protocol: type, logs: list[Message]) -> Any:
    """A worker started by a command (a list), or an HTTP server already listening at a URL."""
    if isinstance(target, str):
        from vgi_rpc.http import http_connect

        return http_connect(protocol, target, on_log=logs.append)
    return connect(protocol, target, on_log=logs.append)


def run_all(target: list[str] | str) -> dict[str, Any]:
    logs: list[Message] = []
    outcomes: dict[str, Any] = {}
    for protocol, cases in ((ConformanceService, CASES), (Secondary, SECONDARY_CASES)):
        pending = list(cases)
        while pending:
            with open_proxy(target, protocol, logs) as proxy:
                while pending:
                    method, label, run = pending.pop(0)
                    result = outcomes[f"{protocol.__name__}.{method}[{label}]"] = outcome(run, proxy, logs)
                    if broken(result):
                        break
    return outcomes


def main() -> int:
    reference_command, quiver_command = (json.loads(arg) for arg in sys.argv[1:3])
    assert len(CASES) + len(SECONDARY_CASES) <= CASES_MAX
    reference = run_all(reference_command)
    quiver = run_all(quiver_command)
    differences = {
        case: {"reference": reference[case], "quiver": quiver.get(case)}
        for case in reference
        if reference[case] != quiver.get(case)
    }
    methods = sorted({case.split("[")[0] for case in reference})
    print(json.dumps({"methods": methods, "cases": len(reference), "differences": differences}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
