"""Stream states of the conformance service, and its process-wide cancel probe."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from ..rpc.context import CallContext
from ..rpc.stream import AnnotatedBatch, ExchangeState, Output, ProducerState, StreamState
from ..wire.log import LogLevel

COUNTER_SCHEMA = pa.schema([pa.field("index", pa.int64()), pa.field("value", pa.int64())])
VALUE_SCHEMA = pa.schema([pa.field("value", pa.float64())])
INT_VALUE_SCHEMA = pa.schema([pa.field("value", pa.int64())])
TICK_SCHEMA = pa.schema([pa.field("index", pa.int64()), pa.field("seen", pa.string())])
ACCUMULATE_SCHEMA = pa.schema([pa.field("running_sum", pa.float64()), pa.field("exchange_count", pa.int64())])
INPUT_METADATA_SCHEMA = pa.schema([pa.field("seen", pa.string()), pa.field("keys", pa.string())])
SESSION_INPUT_SCHEMA = pa.schema([pa.field("by", pa.int64())])
NO_SESSION_COUNTER = "no sticky counter bound to this request"

TICK_KEY = "vgi.conformance.tick"
INPUT_KEY = "vgi.conformance.input"
EMIT_LABEL = "\u00fcn\u00efcode-\u03bb"


class CancelProbe:
    """Counters the cancel tests read back: ``[produce, exchange, on_cancel]`` (process-wide)."""

    _lock = threading.Lock()
    _counts: ClassVar[list[int]] = [0, 0, 0]

    @classmethod
    def bump(cls, index: int) -> None:
        with cls._lock:
            cls._counts[index] += 1

    @classmethod
    def snapshot(cls) -> list[int]:
        with cls._lock:
            return list(cls._counts)

    @classmethod
    def reset(cls) -> None:
        with cls._lock:
            cls._counts[:] = [0, 0, 0]


PRODUCE, EXCHANGE, ON_CANCEL = range(3)


def dynamic_schema(include_strings: bool, include_floats: bool) -> pa.Schema:
    """``index`` always, then ``label`` and ``score`` when asked for (all nullable)."""
    fields = [pa.field("index", pa.int64())]
    if include_strings:
        fields.append(pa.field("label", pa.string()))
    if include_floats:
        fields.append(pa.field("score", pa.float64()))
    return pa.schema(fields)


@dataclass
class Counter(ProducerState):
    """``{index: i, value: i * 10}`` for i < count, optionally logging before each batch."""

    count: int
    log_each: bool = False
    current: int = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.current >= self.count:
            out.finish()
            return
        if self.log_each:
            out.log(LogLevel.INFO, f"producing batch {self.current}")
        out.emit_pydict({"index": [self.current], "value": [self.current * 10]})
        self.current += 1


@dataclass
class TickMetadata(StreamState):
    """Reports each tick's ``vgi.conformance.tick`` value; finishes with the last batch."""

    count: int
    current: int = 0

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        out.emit_pydict({"index": [self.current], "seen": [input.metadata.get(TICK_KEY, "")]})
        self.current += 1
        if self.current >= self.count:
            out.finish()


@dataclass
class Large(ProducerState):
    """``batch_count`` batches of ``rows_per_batch`` rows."""

    rows_per_batch: int
    batch_count: int
    current: int = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.current >= self.batch_count:
            out.finish()
            return
        start = self.current * self.rows_per_batch
        index = pa.array(range(start, start + self.rows_per_batch), pa.int64())
        out.emit_arrays([index, pc.multiply(index, 10)])
        self.current += 1


@dataclass
class AnnotatedBatches(ProducerState):
    """Batches carrying per-emit metadata (index, total, a non-ASCII label)."""

    count: int
    rows_per_batch: int
    current: int = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.current >= self.count:
            out.finish()
            return
        base = self.current * 1_000_000
        metadata = {
            "conformance.batch_index": str(self.current),
            "conformance.batch_total": str(self.count),
            "conformance.emit_label": EMIT_LABEL,
        }
        out.emit_pydict({"value": [base + row for row in range(self.rows_per_batch)]}, metadata)
        self.current += 1


@dataclass
class ErrorAfter(ProducerState):
    """Emits ``emit_before_error`` batches, then raises."""

    emit_before_error: int
    current: int = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.current >= self.emit_before_error:
            raise RuntimeError(f"intentional error after {self.emit_before_error} batches")
        out.emit_pydict({"index": [self.current], "value": [self.current * 10]})
        self.current += 1


@dataclass
class Dynamic(ProducerState):
    """Rows of :func:`dynamic_schema` for i < count."""

    count: int
    include_strings: bool
    include_floats: bool
    current: int = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.current >= self.count:
            out.finish()
            return
        row: dict[str, list[Any]] = {"index": [self.current]}
        if self.include_strings:
            row["label"] = [f"row-{self.current}"]
        if self.include_floats:
            row["score"] = [self.current * 1.5]
        out.emit_pydict(row)
        self.current += 1


class CancellableProducer(ProducerState):
    """Never finishes; counts ticks and cancels."""

    def __init__(self) -> None:
        self.current = 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        CancelProbe.bump(PRODUCE)
        out.emit_pydict({"index": [self.current], "value": [self.current * 10]})
        self.current += 1

    def on_cancel(self, ctx: CallContext) -> None:
        CancelProbe.bump(ON_CANCEL)


@dataclass
class Scale(ExchangeState):
    """``value * factor``; with ``fail_on``, raises on that exchange (1-based)."""

    factor: float = 1.0
    fail_on: int | None = None
    exchanges: int = 0

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        self.exchanges += 1
        if self.fail_on is not None and self.exchanges >= self.fail_on:
            raise RuntimeError(f"intentional error on exchange {self.exchanges}")
        out.emit_arrays([pc.multiply(input.batch.column("value"), self.factor)])


@dataclass
class Accumulate(ExchangeState):
    """Running sum and count over every exchange."""

    running_sum: float = 0.0
    exchange_count: int = 0

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        self.running_sum += pc.sum(input.batch.column("value")).as_py() or 0.0
        self.exchange_count += 1
        out.emit_pydict({"running_sum": [self.running_sum], "exchange_count": [self.exchange_count]})


class LoggingEcho(ExchangeState):
    """Logs INFO then DEBUG, then echoes the input."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        out.log(LogLevel.INFO, "exchange processing")
        out.log(LogLevel.DEBUG, "exchange debug")
        out.emit(input.batch)


class InputMetadata(ExchangeState):
    """Reports the input's ``vgi.conformance.input`` value and all its metadata keys."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        seen = input.metadata.get(INPUT_KEY, "")
        out.emit_pydict({"seen": [seen], "keys": [",".join(sorted(input.metadata))]})


class ZeroColumns(ExchangeState):
    """Answers every input with a zero-column batch."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        out.emit(pa.record_batch([], schema=pa.schema([])))


@dataclass
class Oversized(ExchangeState):
    """Answers every input with ``rows_per_batch`` rows of ``{index, value}``."""

    rows_per_batch: int

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        index = pa.array(range(self.rows_per_batch), pa.int64())
        out.emit_arrays([index, pc.multiply(index, 10)])


class CancellableEcho(ExchangeState):
    """Echoes; counts exchanges and cancels."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        CancelProbe.bump(EXCHANGE)
        out.emit(input.batch)

    def on_cancel(self, ctx: CallContext) -> None:
        CancelProbe.bump(ON_CANCEL)


@dataclass
class UnboundSessionCounter(ProducerState):
    """The session counter's producer where no session is bound.

    The stream opens; it finishes at once for ``count <= 0`` and fails on its first batch
    otherwise, as the reference does.
    """

    count: int

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.count <= 0:
            out.finish()
            return
        raise RuntimeError(NO_SESSION_COUNTER)


class UnboundSessionExchange(ExchangeState):
    """The session counter's exchange where no session is bound: every turn fails."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        raise RuntimeError(NO_SESSION_COUNTER)
