"""Drive a quiver example worker's split-planned scan and buffered table function with vgi-python
0.47.0's engine-role client (`vgi.client.Client`): the reference engine side as the oracle.

Runs under the vgi venv (Python >= 3.13); tests/test_vgi_splits_oracle.py starts it and asserts on
the JSON it prints. Nothing here decides pass or fail.

usage: drive_splits.py WORKER_ARGV_JSON [--splits-only]
  --splits-only: the worker has no buffered table function row_count.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from vgi import Arguments
from vgi.client import Client


def split_args(n: int, splits: int) -> Arguments:
    return Arguments(positional=(pa.scalar(n, pa.int64()),), named={"splits": pa.scalar(splits, pa.int64())})


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"error_class": None, "value": call()}
    except Exception as error:
        return {"error_class": type(error).__name__, "message": str(error).split("\n\nRemote traceback")[0]}


def plan_and_redeem(client: Client, n: int, splits: int, per_page: int) -> dict[str, Any]:
    """Plans `split_numbers(n, splits)` page by page, then redeems every split on its own init."""
    tokens: list[bytes] = []
    pages, cursor = 0, None
    while True:
        response = client.table_function_plan(
            function_name="split_numbers",
            schema_path=["main"],
            arguments=split_args(n, splits),
            max_splits_per_response=per_page,
            cursor=cursor,
        )
        pages += 1
        tokens.extend(split.token for split in response.splits)
        if not response.next_cursors:
            break
        cursor = response.next_cursors[0]
    values: list[int] = []
    for token in reversed(tokens):  # any order, any connection: a split names its work
        for batch in client.table_function(
            function_name="split_numbers", schema_path=["main"], arguments=split_args(n, splits), split_tokens=[token]
        ):
            values.extend(batch.column("n").to_pylist())
    return {"pages": pages, "splits": len(tokens), "values": sorted(values), "count": len(values)}


def forged_token(client: Client) -> list[int]:
    bad = b"\x01\x00\x00\x00" + b"\x00" * 16 + b"\x00" * 16
    return [
        v
        for batch in client.table_function(
            function_name="split_numbers", schema_path=["main"], arguments=split_args(10, 2), split_tokens=[bad]
        )
        for v in batch.column("n").to_pylist()
    ]


def buffered(client: Client, rows: int) -> list[dict[str, Any]]:
    batches = [
        pa.record_batch({"x": pa.array(range(i, min(rows, i + 1000)), pa.int64())}) for i in range(0, rows, 1000)
    ]
    out = client.table_buffering_function(
        function_name="row_count",
        schema_path=["main"],
        input=iter(batches),
        input_schema=pa.schema([("x", pa.int64())]),
    )
    return [row for batch in out for row in batch.to_pylist()]


def main() -> None:
    worker = json.loads(sys.argv[1])
    result: dict[str, Any] = {}
    with Client(worker, pool=None, worker_limit=1) as client:
        result["paged"] = outcome(lambda: plan_and_redeem(client, 10_000, 25, 10))
        result["one_page"] = outcome(lambda: plan_and_redeem(client, 7, 3, 100))
        result["forged"] = outcome(lambda: forged_token(client))
        if "--splits-only" not in sys.argv[2:]:
            result["buffered"] = outcome(lambda: buffered(client, 12_345))
            result["buffered_empty"] = outcome(lambda: buffered(client, 0))
        result["after"] = outcome(lambda: plan_and_redeem(client, 5, 1, 10))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
