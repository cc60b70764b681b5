"""Differential check of ConformanceService methods between two workers.

Calls the methods quiver's conformance worker added for protocol 2.0.0 through
vgi-rpc's own client, against two workers, and prints any case whose outcome
differs: the result (or the error's type and message) for unary methods, the
batches, their custom metadata and the error for streams.

Run with the oracle venv's Python (vgi-rpc 0.52.2):
    python differential.py "<worker A command>" "<worker B command>"
Exit status 0 when every case agrees, 1 otherwise; the last line is a JSON
summary {"cases": n, "differences": m}.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sys
from decimal import Decimal
from typing import Any

from vgi_rpc.conformance import ConformanceService, WideTypes
from vgi_rpc.rpc import AnnotatedBatch, RpcError, SubprocessTransport, _RpcProxy

UNARY_CASES: list[tuple[str, dict[str, Any]]] = [
    ("echo_int8", {"value": -128}),
    ("echo_int8", {"value": 127}),
    ("echo_int16", {"value": -32768}),
    ("echo_uint8", {"value": 255}),
    ("echo_uint16", {"value": 65535}),
    ("echo_uint32", {"value": 4294967295}),
    ("echo_uint64", {"value": 2**64 - 1}),
    ("echo_date", {"value": dt.date(1969, 12, 31)}),
    ("echo_timestamp", {"value": dt.datetime(2026, 11, 24, 10, 0, 0, 123456)}),
    ("echo_timestamp_utc", {"value": dt.datetime(2000, 1, 1, tzinfo=dt.UTC)}),
    ("echo_time", {"value": dt.time(23, 59, 59, 999999)}),
    ("echo_duration", {"value": dt.timedelta(days=-1, microseconds=5)}),
    ("echo_decimal", {"value": Decimal("-1234567890123456.7890")}),
    ("echo_large_string", {"value": "ünïcode-λ" * 3}),
    ("echo_fixed_binary", {"value": b"\x00\x01\x02\x03\x04\x05\x06\x07"}),
    ("echo_dict_encoded_string", {"value": "dictionary"}),
    (
        "echo_wide_types",
        {
            "data": WideTypes(
                int8_field=-12,
                int16_field=-30000,
                int32_field=2_000_000_000,
                uint8_field=200,
                uint16_field=60000,
                uint32_field=4_000_000_000,
                uint64_field=18_000_000_000_000_000_000,
                float32_field=1.5,
                date_field=dt.date(2020, 2, 29),
                timestamp_field=dt.datetime(2020, 1, 1, 1, 1, 1),
                timestamp_utc_field=dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
                time_field=dt.time(1, 2, 3),
                duration_field=dt.timedelta(seconds=90),
                decimal_field=Decimal("1.5000"),
                large_string_field="large",
                large_binary_field=b"large",
                fixed_binary_field=b"12345678",
            )
        },
    ),
    ("oversized_unary", {"target_bytes": 1 << 16}),
    ("oversized_unary", {"target_bytes": -1}),
    ("published_string", {"value": "x", "include_sha256": True}),
    ("open_counter", {"initial": 5}),
    ("increment_counter", {"by": 1}),
    ("close_counter", {}),
]

PRODUCER_CASES: list[tuple[str, dict[str, Any]]] = [
    ("produce_annotated_batches", {"count": 3, "rows_per_batch": 4}),
    ("produce_annotated_batches", {"count": 0, "rows_per_batch": 4}),
    ("produce_oversized_batch", {"rows_per_batch": 1000}),
    ("produce_oversized_batch", {"rows_per_batch": -5}),
    ("stream_session_counter", {"count": 2}),
    ("stream_session_counter", {"count": 0}),
]

EXCHANGE_CASES: list[tuple[str, dict[str, Any], dict[str, list[Any]]]] = [
    ("exchange_oversized", {"rows_per_batch": 100}, {"value": [1.0, 2.0]}),
    ("exchange_session_counter", {}, {"by": [1, 2]}),
]


def error_of(error: Exception) -> tuple[str, str]:
    if isinstance(error, RpcError):
        return (error.error_type, error.error_message)
    return (type(error).__name__, str(error))


def batches(items: Any) -> list[Any]:
    out = []
    for item in items:
        batch = getattr(item, "batch", item)
        metadata = getattr(item, "custom_metadata", None)
        meta = {k.decode(): v.decode() for k, v in (metadata or {}).items() if not k.startswith(b"vgi_rpc.")}
        out.append((batch.schema.to_string(), batch.to_pydict(), meta))
    return out


def run_cases(command: str) -> dict[str, Any]:
    outcomes: dict[str, Any] = {}
    transport = SubprocessTransport(shlex.split(command))
    proxy = _RpcProxy(ConformanceService, transport, None)
    try:
        for name, kwargs in UNARY_CASES:
            key = f"{name}({kwargs})"
            try:
                outcomes[key] = ("ok", repr(getattr(proxy, name)(**kwargs)))
            except Exception as error:
                outcomes[key] = ("error", error_of(error))
        for name, kwargs in PRODUCER_CASES:
            key = f"{name}({kwargs})"
            try:
                outcomes[key] = ("ok", batches(getattr(proxy, name)(**kwargs)))
            except Exception as error:
                outcomes[key] = ("error", error_of(error))
        for name, kwargs, columns in EXCHANGE_CASES:
            key = f"{name}({kwargs})"
            try:
                with getattr(proxy, name)(**kwargs) as session:
                    outcomes[key] = ("ok", batches([session.exchange(AnnotatedBatch.from_pydict(columns))]))
            except Exception as error:
                outcomes[key] = ("error", error_of(error))
        # The connection still serves after every refusal above.
        try:
            outcomes["echo_string after the cases"] = ("ok", proxy.echo_string(value="still here"))
        except Exception as error:
            outcomes["echo_string after the cases"] = ("error", error_of(error))
    finally:
        transport.close()
    return outcomes


def main() -> int:
    first, second = (run_cases(command) for command in sys.argv[1:3])
    differences = 0
    for key in first:
        if first[key] != second.get(key):
            differences += 1
            print(f"DIFFERS {key}\n  A: {first[key]!r:.600}\n  B: {second.get(key)!r:.600}")
    print(json.dumps({"cases": len(first), "differences": differences}))
    return 0 if differences == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
