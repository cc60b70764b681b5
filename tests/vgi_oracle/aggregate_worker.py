#!/usr/bin/env python3
"""vgi-python 0.47.0's own aggregate fixtures (vgi._test_fixtures.aggregate) served by a vgi-python
worker, not by quiver: our DuckDB extension must drive them like its own
(tests/test_extension_aggregates.py). Runs in the Python >= 3.13 venv (.venv-vgi) with
VGI_WORKER_SQLITE_PATH pointing at a writable file.

Catalog "vgiagg", schema "main":
  vgi_count() -> BIGINT, vgi_sum(BIGINT) -> BIGINT, vgi_avg(DOUBLE) -> DOUBLE,
  vgi_listagg(VARCHAR) -> VARCHAR (order dependent)          vgi-python's fixtures, unchanged
  picky_sum(BIGINT) -> BIGINT                                  raises on a negative value
"""

from __future__ import annotations

from typing import Annotated

import pyarrow as pa
import pyarrow.compute as pc
from vgi import Param, Returns, Worker
from vgi._test_fixtures.aggregate._common import SumState
from vgi._test_fixtures.aggregate.basic import AvgFunction, CountFunction, SumFunction
from vgi._test_fixtures.aggregate.listagg import ListAggFunction
from vgi.aggregate_function import AggregateFunction
from vgi.catalog import Catalog, Schema
from vgi.table_function import ProcessParams


class PickySum(AggregateFunction[SumState]):
    """The sum of its values; a negative value is refused by the body."""

    class Meta:
        name = "picky_sum"
        description = "Sums non-negative integers; raises on a negative one"

    @classmethod
    def initial_state(cls, params: ProcessParams[None]) -> SumState:
        return SumState()

    @classmethod
    def update(
        cls,
        states: dict[int, SumState],
        group_ids: pa.Int64Array,
        value: Annotated[pa.Int64Array, Param(doc="values")],
    ) -> None:
        if pc.any(pc.less(value, 0)).as_py():
            raise ValueError("picky_sum refuses negative values")
        for gid, v in zip(group_ids.to_pylist(), value.to_pylist(), strict=True):
            if v is not None:
                states[gid] = SumState(total=states[gid].total + v)

    @classmethod
    def combine(cls, source: SumState, target: SumState, params: ProcessParams[None]) -> SumState:
        return SumState(total=source.total + target.total)

    @classmethod
    def finalize(
        cls,
        group_ids: pa.Int64Array,
        states: dict[int, SumState],
        params: ProcessParams[None],
    ) -> Annotated[pa.RecordBatch, Returns(pa.int64())]:
        totals = [s.total if (s := states[g]) is not None else None for g in group_ids.to_pylist()]
        return pa.record_batch({"result": pa.array(totals, type=pa.int64())})


class AggregateWorker(Worker):
    catalog = Catalog(
        name="vgiagg",
        schemas=[
            Schema(
                path=["main"],
                functions=[CountFunction, SumFunction, AvgFunction, ListAggFunction, PickySum],
            )
        ],
    )


if __name__ == "__main__":
    AggregateWorker.main()
