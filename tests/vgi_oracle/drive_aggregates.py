"""Drive a quiver worker's example aggregates with vgi-python 0.47.0's engine-role client.

Runs under the vgi venv (Python >= 3.13): tests/test_vgi_aggregates.py starts it with that
interpreter and asserts on the JSON it prints. Every scenario records what the client saw, or the
error it raised; nothing here decides pass or fail.

usage: drive_aggregates.py WORKER_ARGV_JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from vgi import Arguments
from vgi.client import Client

# Three groups over two batches; group "c" holds only NULLs.
BATCHES = [
    pa.record_batch({"g": ["a", "b", "a", "c"], "x": [1, 2, 3, None], "s": ["p", "q", None, None]}),
    pa.record_batch({"g": ["b", "a", "c", "b"], "x": [40, None, None, 5], "s": ["r", "t", None, "u"]}),
]


def error_of(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"error_class": None, "value": call()}
    except Exception as error:
        return {"error_class": type(error).__name__, "message": str(error).split("\n\nRemote traceback")[0]}


def grouped(client: Client, name: str, column: str, cast: pa.DataType, arguments: Arguments | None = None) -> Any:
    batches = [b.select(["g", column]).cast(pa.schema([("g", pa.string()), (column, cast)])) for b in BATCHES]
    result = client.aggregate_function(
        function_name=name, schema_path=["main"], input=batches, group_by=["g"], arguments=arguments
    )
    groups, values = result.column("g").to_pylist(), result.column(result.num_columns - 1).to_pylist()
    return sorted(zip(groups, values, strict=True))


def main() -> None:
    worker = json.loads(sys.argv[1])
    out: dict[str, Any] = {}
    with Client(worker, pool=None, worker_limit=1) as client:
        out["sum_int"] = error_of(lambda: grouped(client, "sum_int", "x", pa.int64()))
        out["avg_double"] = error_of(lambda: grouped(client, "avg_double", "x", pa.float64()))
        sep = Arguments(positional=(pa.scalar("+"),))
        out["concat_agg"] = error_of(lambda: grouped(client, "concat_agg", "s", pa.string(), sep))
        out["empty"] = error_of(
            lambda: client.aggregate_function(
                function_name="sum_int",
                schema_path=["main"],
                input=[],
                input_schema=pa.schema([("x", pa.int64())]),
            ).to_pylist()
        )

        def combined() -> Any:
            with client.aggregate_session(
                function_name="sum_int", schema_path=["main"], input_schema=pa.schema([("x", pa.int64())])
            ) as session:
                session.update(group_ids=[0, 1, 1], batch=pa.record_batch({"x": [1, 2, 3]}))
                session.update(group_ids=[2, 2], batch=pa.record_batch({"x": [10, None]}))
                session.combine(source_group_ids=[1, 2, 3], target_group_ids=[0, 0, 4])
                return session.finalize([0, 1, 2, 3, 4]).column(0).to_pylist()

        out["combine"] = error_of(combined)
        overflow = [pa.record_batch({"x": pa.array([2**63 - 1, 1], pa.int64())})]
        out["overflow"] = error_of(
            lambda: (
                client.aggregate_function(function_name="sum_int", schema_path=["main"], input=overflow)
                .column(0)
                .to_pylist()
            )
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
