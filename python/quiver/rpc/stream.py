"""Stream methods: the :class:`Stream` a method returns, its state, and a turn's output.

A stream method returns ``Stream(output_schema, state, input_schema=..., header=...)``.
The server then calls ``state.process(input, out, ctx)`` once per input batch (a tick
for producers, client data for exchanges); each turn emits logs and exactly one data
batch, except that a producer may instead (or also) :meth:`Output.finish`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pyarrow as pa

from ..wire.log import LogLevel, LogRecord
from ..wire.metadata import BatchMetadata
from .context import CallContext, log_record

EMPTY_SCHEMA = pa.schema([])


@dataclass(slots=True)
class AnnotatedBatch:
    """A record batch with its custom metadata."""

    batch: pa.RecordBatch
    metadata: dict[str, str] = field(default_factory=dict)


class Output:
    """Collects what one stream turn emits, in order: logs and at most one data batch."""

    __slots__ = ("data_count", "finished", "items", "schema")

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.items: list[LogRecord | AnnotatedBatch] = []
        self.data_count = 0
        self.finished = False

    def emit(self, batch: pa.RecordBatch, metadata: BatchMetadata | None = None) -> None:
        """Emits this turn's data batch (conformed to the output schema by the server)."""
        if self.data_count:
            raise RuntimeError("Only one data batch may be emitted per call")
        self.data_count = 1
        self.items.append(AnnotatedBatch(batch, dict(metadata or {})))

    def emit_pydict(self, columns: dict[str, Any], metadata: BatchMetadata | None = None) -> None:
        """Emits a batch built from Python lists, one per output column."""
        self.emit(pa.RecordBatch.from_pydict(columns, schema=self.schema), metadata)

    def emit_arrays(self, arrays: list[pa.Array], metadata: BatchMetadata | None = None) -> None:
        """Emits a batch built from arrays in output-schema order."""
        self.emit(pa.RecordBatch.from_arrays(arrays, schema=self.schema), metadata)

    def log(self, level: LogLevel | str, message: str, **extra: Any) -> None:
        """Sends a log record to the client ahead of this turn's data."""
        self.items.append(log_record(level, message, extra))

    def finish(self) -> None:
        """Ends a producer stream after this turn."""
        self.finished = True


class StreamState:
    """Server-side state of one stream call."""

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        """Handles one input batch."""
        raise NotImplementedError

    def on_cancel(self, ctx: CallContext) -> None:
        """Called once when the client cancels the stream (errors here are ignored)."""


class ProducerState(StreamState):
    """State of a producer: one :meth:`produce` per client tick, until it finishes."""

    def produce(self, out: Output, ctx: CallContext) -> None:
        """Emits the next batch, or calls ``out.finish()``."""
        raise NotImplementedError

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        self.produce(out, ctx)


class ExchangeState(StreamState):
    """State of an exchange: one :meth:`exchange` per client batch, one batch back each time."""

    def exchange(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        """Answers one input batch."""
        raise NotImplementedError

    def process(self, input: AnnotatedBatch, out: Output, ctx: CallContext) -> None:
        self.exchange(input, out, ctx)


StateT = TypeVar("StateT", bound=StreamState)
HeaderT = TypeVar("HeaderT")


@dataclass
class Stream(Generic[StateT, HeaderT]):
    """What a stream method returns; also its return annotation.

    ``-> Stream[ProducerState]`` declares a producer, ``-> Stream[ExchangeState]`` an
    exchange, and a second argument (``Stream[ExchangeState, Header]``) a header
    dataclass sent before any data.
    """

    output_schema: pa.Schema
    state: StateT
    input_schema: pa.Schema = EMPTY_SCHEMA
    header: HeaderT | None = None

    def __class_getitem__(cls, params: Any) -> Any:
        if not isinstance(params, tuple):
            params = (params, type(None))
        return super().__class_getitem__(params)  # type: ignore[misc]
