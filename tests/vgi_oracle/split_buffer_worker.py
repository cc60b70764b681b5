#!/usr/bin/env python3
"""vgi-python 0.47.0's own split and buffered fixtures, served as one worker, plus two functions
written here for what the fixtures do not cover (a plan paged by cursors, a plan that never ends,
buffered bodies that fail). Driven by quiver's DuckDB extension in tests/test_extension_splits.py.
Runs in the Python >= 3.13 venv (.venv-vgi) with VGI_WORKER_SQLITE_PATH pointing at a writable file.

Catalog "splits", schema "main":
  split_sequence(n, splits := 4)   vgi's fixture: [0, n) in `splits` contiguous splits
  split_many(n, splits)            vgi's fixture: many splits, far more than threads
  split_zero(n)                    vgi's fixture: a plan of no splits
  split_empty_ranges(n, splits)    vgi's fixture: empty splits interleaved with full ones
  split_fail_at(n, splits, fail_at, fail_in_init)   vgi's fixture: fails on one split
  paged_sequence(n, splits, per_page)   [0, n) planned `per_page` splits per plan page
  endless_plan(n)                  a plan whose every page names another page
  global_buffered(TABLE)           vgi's fixture: replays its whole input after the input ended
  sum_all_columns_simple_distributed(TABLE)   vgi's fixture: one row of column sums
  buffered_fault(TABLE, mode)      a buffered body that raises, or answers a wrong type, on demand
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Annotated, Any

import pyarrow as pa
from vgi import Worker
from vgi._test_fixtures.global_functions import GlobalBufferedFunction
from vgi._test_fixtures.table.splits import (
    SplitEmptyRangesFunction,
    SplitFailAtFunction,
    SplitManyFunction,
    SplitSequenceArgs,
    SplitSequenceFunction,
    SplitState,
    SplitZeroFunction,
    _encode,
    _ranges,
    _SplitBase,
)
from vgi._test_fixtures.table_in_out import SumAllColumnsSimpleDistributed
from vgi.arguments import Arg, TableInput
from vgi.catalog import Catalog, Schema
from vgi.invocation import BindResponse
from vgi.protocol import PlanResponse, ScanSplit
from vgi.schema_utils import schema
from vgi.table_buffering_function import TableBufferingFunction, TableBufferingParams
from vgi.table_function import BindParams, TableFunctionGenerator, bind_fixed_schema
from vgi_rpc.rpc import OutputCollector


@dataclass(frozen=True)
class PagedArgs:
    n: Annotated[int, Arg("n", doc="rows", ge=0)]
    splits: Annotated[int, Arg("splits", default=4, doc="splits in all", ge=0)]
    per_page: Annotated[int, Arg("per_page", default=1, doc="splits per plan page", ge=1)]


@bind_fixed_schema
class PagedSequence(TableFunctionGenerator[PagedArgs, SplitState]):
    """[0, n) in `splits` splits, `per_page` of them per plan page: the engine follows cursors.
    Redeems and emits exactly as vgi's split_sequence does.
    """

    FIXED_SCHEMA = _SplitBase.FIXED_SCHEMA
    on_split = _SplitBase.__dict__["on_split"]
    initial_state = _SplitBase.__dict__["initial_state"]
    process = _SplitBase.__dict__["process"]

    class Meta:
        name = "paged_sequence"
        supports_splits = True

    @classmethod
    def on_plan(cls, params: BindParams[Any], request: Any) -> PlanResponse:
        ranges = _ranges(params.args.n, params.args.splits)
        page = struct.unpack("<q", request.cursor)[0] if request.cursor else 0
        per = params.args.per_page
        chosen = ranges[page * per : (page + 1) * per]
        more = (page + 1) * per < len(ranges)
        return PlanResponse(
            splits=[ScanSplit(payload=_encode(lo, hi), estimated_rows=hi - lo) for lo, hi in chosen],
            next_cursors=[struct.pack("<q", page + 1)] if more else None,
            estimated_total_splits=len(ranges),
            max_workers=4,
        )


@bind_fixed_schema
class EndlessPlan(_SplitBase):
    """Every plan page names a next page: the engine must stop at its bound, with a clear error."""

    class Meta:
        name = "endless_plan"
        supports_splits = True

    @classmethod
    def on_plan(cls, params: BindParams[SplitSequenceArgs], request: Any) -> PlanResponse:
        page = struct.unpack("<q", request.cursor)[0] if request.cursor else 0
        return PlanResponse(splits=[], next_cursors=[struct.pack("<q", page + 1)])


@dataclass(kw_only=True)
class FaultArgs:
    data: Annotated[TableInput, Arg(0, doc="input")]
    mode: Annotated[str, Arg("mode", default="raise_process", doc="where and how to fail")]


class BufferedFault(TableBufferingFunction[FaultArgs, None]):
    """Fails on demand: `raise_process`, `raise_combine`, `raise_finalize`, `wrong_type`, `die`."""

    class Meta:
        name = "buffered_fault"

    @classmethod
    def on_bind(cls, params: BindParams[FaultArgs]) -> BindResponse:
        return BindResponse(output_schema=schema({"n": pa.int64()}))

    @classmethod
    def process(cls, batch: pa.RecordBatch, params: TableBufferingParams[FaultArgs]) -> bytes:
        if params.args.mode == "raise_process":
            raise ValueError("buffered_fault refuses its input")
        if params.args.mode == "die":
            os._exit(3)
        return b"one"

    @classmethod
    def combine(cls, state_ids: list[bytes], params: TableBufferingParams[FaultArgs]) -> list[bytes]:
        if params.args.mode == "raise_combine":
            raise ValueError("buffered_fault cannot combine")
        return [b"one"]

    @classmethod
    def finalize(cls, params: TableBufferingParams[FaultArgs], fid: bytes, state: None, out: OutputCollector) -> None:
        if params.args.mode == "raise_finalize":
            raise ValueError("buffered_fault cannot finish")
        if params.args.mode == "wrong_type":
            out.emit(pa.record_batch({"n": pa.array(["not a number"])}))
            return
        out.emit(pa.record_batch({"n": pa.array([1], pa.int64())}))
        out.finish()


FUNCTIONS = [
    SplitSequenceFunction,
    SplitManyFunction,
    SplitZeroFunction,
    SplitEmptyRangesFunction,
    SplitFailAtFunction,
    PagedSequence,
    EndlessPlan,
    GlobalBufferedFunction,
    SumAllColumnsSimpleDistributed,
    BufferedFault,
]


class SplitBufferWorker(Worker):
    catalog = Catalog(name="splits", schemas=[Schema(path=["main"], functions=FUNCTIONS)])


if __name__ == "__main__":
    SplitBufferWorker.main()
