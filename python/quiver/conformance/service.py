"""The behaviour behind :class:`~quiver.conformance.protocol.ConformanceService`."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..rpc.context import CallContext
from ..rpc.stream import Stream
from ..wire.log import LogLevel
from . import states
from .types import ConformanceHeader, NestedContainers, Point, Status, build_rich_header

# quiver serves no sticky sessions on any transport, so these answer as the reference does
# where none is bound: opening one is refused, and using one finds nothing bound.
_SESSIONS_UNAVAILABLE = "sticky sessions not available on this transport"


def _echo(self: Any, value: Any) -> Any:
    return value


class ConformanceServiceImpl:
    """Echoes, raises, logs and streams exactly as the conformance suite expects."""

    # unary echoes: the value comes back unchanged
    echo_string = echo_bytes = echo_int = echo_float = echo_bool = _echo
    echo_enum = echo_list = echo_dict = echo_nested_list = echo_dict_encoded_string = _echo
    echo_optional_string = echo_optional_int = echo_optional_point = _echo
    echo_annotated_optional_int = echo_outer_optional_non_null = _echo
    echo_point = echo_all_types = echo_bounding_box = _echo
    echo_wide_types = echo_container_wide_types = echo_embedded_arrow = echo_deep_nested = _echo
    echo_int32 = echo_float32 = echo_int8 = echo_int16 = _echo
    echo_uint8 = echo_uint16 = echo_uint32 = echo_uint64 = _echo
    echo_date = echo_timestamp = echo_timestamp_utc = echo_time = echo_duration = _echo
    echo_decimal = echo_large_string = echo_large_binary = echo_fixed_binary = _echo

    def void_noop(self) -> None:
        return None

    def void_with_param(self, value: int) -> None:
        return None

    def oversized_unary(self, target_bytes: int) -> bytes:
        if target_bytes < 0:
            raise ValueError("target_bytes must be non-negative")
        return b"\x00" * target_bytes

    def published_string(self, value: str, include_sha256: bool) -> str:
        raise RuntimeError("published_string requires external storage")

    def echo_status_list(self, statuses: list[Status]) -> list[Status]:
        _require_members(statuses, "statuses")
        return statuses

    def inspect_point(self, point: Point) -> str:
        return f"Point({point.x!r}, {point.y!r})"

    def pack_nested_containers(
        self, statuses: list[Status], points: list[Point], status_by_name: dict[str, Status]
    ) -> NestedContainers:
        _require_members(statuses, "statuses")
        _require_members(status_by_name.values(), "status_by_name values")
        if any(not isinstance(point, Point) for point in points):
            raise TypeError("points were not reconstructed as Point instances")
        return NestedContainers(
            statuses=statuses,
            points=points,
            status_by_name=status_by_name,
            frozen_statuses=frozenset(statuses),
            tagged_status=statuses[0] if statuses else None,
            tagged_point=points[0] if points else None,
            tagged_batch=pa.RecordBatch.from_pydict({"value": [1, 2]}),
        )

    def add_floats(self, a: float, b: float) -> float:
        return a + b

    def concatenate(self, prefix: str, suffix: str, separator: str = "-") -> str:
        return f"{prefix}{separator}{suffix}"

    def with_defaults(self, required: int, optional_str: str = "default", optional_int: int = 42) -> str:
        return f"required={required}, optional_str={optional_str}, optional_int={optional_int}"

    # errors and logs

    def raise_value_error(self, message: str) -> str:
        raise ValueError(message)

    def raise_runtime_error(self, message: str) -> str:
        raise RuntimeError(message)

    def raise_type_error(self, message: str) -> str:
        raise TypeError(message)

    def echo_with_info_log(self, value: str, ctx: CallContext) -> str:
        ctx.log(LogLevel.INFO, f"info: {value}")
        return value

    def echo_with_multi_logs(self, value: str, ctx: CallContext) -> str:
        for level in (LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN):
            ctx.log(level, f"{level.value.lower()}: {value}")
        return value

    def echo_with_log_extras(self, value: str, ctx: CallContext) -> str:
        ctx.log(LogLevel.INFO, f"info: {value}", source="conformance", detail=value)
        return value

    def echo_with_all_log_levels(self, value: str, ctx: CallContext) -> str:
        for level in (LogLevel.TRACE, LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR):
            ctx.log(level, f"{level.value.lower()}: {value}")
        return value

    # producers

    def produce_n(self, count: int) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Counter(count))

    def produce_tick_metadata(self, count: int) -> Stream[Any, None]:
        return Stream(states.TICK_SCHEMA, states.TickMetadata(count))

    def produce_empty(self) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Counter(0))

    def produce_single(self) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Counter(1))

    def produce_large_batches(self, rows_per_batch: int, batch_count: int) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Large(rows_per_batch, batch_count))

    def produce_annotated_batches(self, count: int, rows_per_batch: int) -> Stream[Any, None]:
        return Stream(states.INT_VALUE_SCHEMA, states.AnnotatedBatches(count, rows_per_batch))

    def produce_with_logs(self, count: int) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Counter(count, log_each=True))

    def produce_error_mid_stream(self, emit_before_error: int) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.ErrorAfter(emit_before_error))

    def produce_error_on_init(self) -> Stream[Any, None]:
        raise RuntimeError("intentional init error")

    def produce_oversized_batch(self, rows_per_batch: int) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.Large(rows_per_batch, 1))

    def produce_with_header(self, count: int) -> Stream[Any, ConformanceHeader]:
        header = ConformanceHeader(count, f"producing {count} batches")
        return Stream(states.COUNTER_SCHEMA, states.Counter(count), header=header)

    def produce_with_header_and_logs(self, count: int, ctx: CallContext) -> Stream[Any, ConformanceHeader]:
        ctx.log(LogLevel.INFO, "stream init log")
        header = ConformanceHeader(count, f"producing {count} with logs")
        return Stream(states.COUNTER_SCHEMA, states.Counter(count), header=header)

    def produce_with_rich_header(self, seed: int, count: int) -> Stream[Any, Any]:
        return Stream(states.COUNTER_SCHEMA, states.Counter(count), header=build_rich_header(seed))

    def produce_dynamic_schema(
        self, seed: int, count: int, include_strings: bool, include_floats: bool
    ) -> Stream[Any, Any]:
        schema = states.dynamic_schema(include_strings, include_floats)
        state = states.Dynamic(count, include_strings, include_floats)
        return Stream(schema, state, header=build_rich_header(seed))

    # exchanges

    def exchange_scale(self, factor: float) -> Stream[Any, None]:
        return _exchange(states.VALUE_SCHEMA, states.Scale(factor))

    def exchange_accumulate(self) -> Stream[Any, None]:
        return _exchange(states.ACCUMULATE_SCHEMA, states.Accumulate())

    def exchange_with_logs(self) -> Stream[Any, None]:
        return _exchange(states.VALUE_SCHEMA, states.LoggingEcho())

    def exchange_error_on_nth(self, fail_on: int) -> Stream[Any, None]:
        return _exchange(states.VALUE_SCHEMA, states.Scale(fail_on=fail_on))

    def exchange_zero_columns(self) -> Stream[Any, None]:
        empty = pa.schema([])
        return Stream(empty, states.ZeroColumns(), input_schema=empty)

    def exchange_input_metadata(self) -> Stream[Any, None]:
        return _exchange(states.INPUT_METADATA_SCHEMA, states.InputMetadata())

    def exchange_error_on_init(self) -> Stream[Any, None]:
        raise RuntimeError("intentional exchange init error")

    def exchange_oversized(self, rows_per_batch: int) -> Stream[Any, None]:
        return _exchange(states.COUNTER_SCHEMA, states.Oversized(rows_per_batch))

    def exchange_cast_compatible(self) -> Stream[Any, None]:
        return _exchange(states.VALUE_SCHEMA, states.Scale())

    def exchange_with_header(self, factor: float) -> Stream[Any, ConformanceHeader]:
        header = ConformanceHeader(0, f"scale by {factor!r}")
        return _exchange(states.VALUE_SCHEMA, states.Scale(factor), header)

    def exchange_with_rich_header(self, seed: int, factor: float) -> Stream[Any, Any]:
        return _exchange(states.VALUE_SCHEMA, states.Scale(factor), build_rich_header(seed))

    # cancellation

    def cancellable_producer(self) -> Stream[Any, None]:
        return Stream(states.COUNTER_SCHEMA, states.CancellableProducer())

    def cancellable_exchange(self) -> Stream[Any, None]:
        return _exchange(states.VALUE_SCHEMA, states.CancellableEcho())

    def cancel_probe_counters(self) -> list[int]:
        return states.CancelProbe.snapshot()

    def reset_cancel_probe(self) -> None:
        states.CancelProbe.reset()

    # sticky sessions: none is ever bound here

    def open_counter(self, initial: int) -> int:
        raise RuntimeError(_SESSIONS_UNAVAILABLE)

    def increment_counter(self, by: int) -> int:
        raise RuntimeError(states.NO_SESSION_COUNTER)

    def close_counter(self) -> int:
        raise RuntimeError(states.NO_SESSION_COUNTER)

    def stream_session_counter(self, count: int) -> Stream[Any, None]:
        return Stream(states.INT_VALUE_SCHEMA, states.UnboundSessionCounter(count))

    def exchange_session_counter(self) -> Stream[Any, None]:
        schema = states.INT_VALUE_SCHEMA
        return Stream(schema, states.UnboundSessionExchange(), input_schema=states.SESSION_INPUT_SCHEMA)


def _exchange(output: pa.Schema, state: Any, header: Any = None) -> Stream[Any, Any]:
    """An exchange whose input is ``value: float64``."""
    return Stream(output, state, input_schema=states.VALUE_SCHEMA, header=header)


def _require_members(values: Any, what: str) -> None:
    if any(not isinstance(value, Status) for value in values):
        raise TypeError(f"{what} were not reconstructed as Status members")
