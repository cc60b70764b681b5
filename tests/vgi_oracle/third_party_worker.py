#!/usr/bin/env python3
"""A small VGI worker written with vgi-python 0.47.0, not with quiver: our DuckDB extension must
drive it like its own (tests/test_extension_third_party.py). Runs in the Python >= 3.13 venv
(.venv-vgi) with VGI_WORKER_SQLITE_PATH pointing at a writable file.

Catalog "thirdparty", schema "main":
  repeat_text(s VARCHAR, times CONST BIGINT) -> VARCHAR   scalar; `times` is a constant, sent once at bind
  squares(n BIGINT)                                       table (i, sq), 1000-row batches, projection pushdown
  chunked(TABLE)                                          table-in-out: answers each input batch in
                                                          3-row parts (HAVE_MORE_OUTPUT), and its FINALIZE
                                                          appends one row holding -rows seen
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Annotated, cast

import pyarrow as pa
import pyarrow.compute as pc
from vgi import ConstParam, Param, Returns, ScalarFunction, Worker
from vgi.arguments import Arg, TableInput
from vgi.catalog import Catalog, Schema
from vgi.invocation import BindResponse
from vgi.table_function import BindParams, ProcessParams, TableFunctionGenerator, init_single_worker
from vgi.table_in_out_function import TableInOutGenerator
from vgi_rpc import ArrowSerializableDataclass
from vgi_rpc.rpc import OutputCollector

SQUARES = pa.schema([("i", pa.int64()), ("sq", pa.int64())])


class RepeatText(ScalarFunction):
    """s repeated `times` times."""

    class Meta:
        name = "repeat_text"
        description = "Repeats a string a constant number of times"

    @classmethod
    def compute(
        cls,
        s: Annotated[pa.StringArray, Param(doc="the string")],
        times: Annotated[int, ConstParam(doc="how many times", ge=0)],
    ) -> Annotated[pa.StringArray, Returns()]:
        return pc.binary_repeat(s, times)


@dataclass(frozen=True)
class SquaresArgs:
    n: Annotated[int, Arg(0, doc="how many rows", ge=0)]


@dataclass(kw_only=True)
class SquaresState(ArrowSerializableDataclass):
    next: int = 0


@init_single_worker
class Squares(TableFunctionGenerator[SquaresArgs, SquaresState]):
    """i and i*i for i in 0..n-1."""

    BATCH = 1000

    class Meta:
        name = "squares"
        description = "i and i squared"
        projection_pushdown = True

    @classmethod
    def on_bind(cls, params: BindParams[SquaresArgs]) -> BindResponse:
        return BindResponse(output_schema=SQUARES)

    @classmethod
    def initial_state(cls, params: ProcessParams[SquaresArgs]) -> SquaresState:
        return SquaresState()

    @classmethod
    def process(cls, params: ProcessParams[SquaresArgs], state: SquaresState, out: OutputCollector) -> None:
        if state.next >= params.args.n:
            out.finish()
            return
        end = min(state.next + cls.BATCH, params.args.n)
        values = list(range(state.next, end))
        state.next = end
        batch = pa.RecordBatch.from_pydict({"i": values, "sq": [v * v for v in values]}, schema=SQUARES)
        out.emit(batch.select(params.output_schema.names))


@dataclass(slots=True, frozen=True, kw_only=True)
class ChunkedArgs:
    data: Annotated[TableInput, Arg(0, doc="input table")]


@dataclass(kw_only=True)
class ChunkedState(ArrowSerializableDataclass):
    pending: bytes = b""
    rows_seen: int = 0


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


class Chunked(TableInOutGenerator[ChunkedArgs, ChunkedState]):
    """Echoes its input in 3-row parts; FINALIZE appends -rows seen."""

    PART = 3

    class Meta:
        name = "chunked"
        description = "Echo in 3-row parts, then a trailer row"
        has_finalize = True

    @classmethod
    def on_bind(cls, params: BindParams[ChunkedArgs]) -> BindResponse:
        assert params.bind_call.input_schema is not None
        return BindResponse(output_schema=params.bind_call.input_schema)

    @classmethod
    def initial_state(cls, params: ProcessParams[ChunkedArgs]) -> ChunkedState:
        return ChunkedState()

    @classmethod
    def _emit(cls, params, state: ChunkedState, batch: pa.RecordBatch, out) -> None:
        head, rest = batch.slice(0, cls.PART), batch.slice(cls.PART)
        state.pending = _ipc(rest) if rest.num_rows else b""
        cast("object", out).emit(head, more=rest.num_rows > 0)  # type: ignore[attr-defined]
        params.storage.state_put(b"rows", params.substream_id or b"pid", struct.pack("<q", state.rows_seen))

    @classmethod
    def process(cls, params, state: ChunkedState, batch: pa.RecordBatch, out: OutputCollector) -> None:
        state.rows_seen += batch.num_rows
        cls._emit(params, state, batch, out)

    @classmethod
    def resume(cls, params, state: ChunkedState, out: OutputCollector) -> None:
        cls._emit(params, state, pa.ipc.open_stream(state.pending).read_next_batch(), out)

    @classmethod
    def finalize(cls, params: ProcessParams[ChunkedArgs]) -> list[pa.RecordBatch]:
        key = params.substream_id or b"pid"
        rows = [struct.unpack("<q", v)[0] for k, v in params.storage.state_drain(b"rows") if k == key]
        schema = params.output_schema
        columns = {f.name: [None] for f in schema}
        columns[schema.field(0).name] = [-sum(rows)]
        return [pa.RecordBatch.from_pydict(columns, schema=schema)]


class ThirdPartyWorker(Worker):
    catalog = Catalog(name="thirdparty", schemas=[Schema(path=["main"], functions=[RepeatText, Squares, Chunked])])


if __name__ == "__main__":
    ThirdPartyWorker.main()
