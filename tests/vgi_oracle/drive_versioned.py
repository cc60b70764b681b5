"""Drive a worker with whichever vgi-python release runs this script (0.30.0, 0.39.0, 0.40.0 or
0.47.0):
its engine-role `vgi.client.Client` lists the catalogs, attaches, calls a scalar and a table
function, and the script prints what it saw as JSON. Nothing here decides pass or fail; the
asserts are in tests/test_extension_vgi_versions.py.

usage: drive_versioned.py CONFIG_JSON
  CONFIG_JSON: {"worker_argv": [...], "catalog": "allinone",
                "scalar": {"name": "upper_case", "column": "value"},
                "table": {"name": "numbers", "n": 5}}
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import pyarrow as pa
from vgi import Arguments
from vgi.client import Client


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"error_class": None, "value": call()}
    except Exception as error:
        return {"error_class": type(error).__name__, "message": str(error).split("\n\nRemote traceback")[0]}


def where(method: Callable[..., Any]) -> dict[str, Any]:
    """The schema argument as this release spells it (0.30: a name; later: a path)."""
    if "schema_path" in inspect.signature(method).parameters:
        return {"schema_path": ["main"]}
    return {"schema_name": "main"}


def main() -> None:
    config = json.loads(sys.argv[1])
    out: dict[str, Any] = {"release": version("vgi-python")}
    with Client(config["worker_argv"], pool=None, worker_limit=1) as client:
        drive(client, config, out)
    print(json.dumps(out))


def drive(client: Client, config: dict[str, Any], out: dict[str, Any]) -> None:
    out["catalogs"] = outcome(lambda: sorted(c.name for c in client.catalogs()))
    out["attach"] = outcome(
        lambda: (
            client.catalog_attach(
                name=config["catalog"], data_version_spec=None, implementation_version=None, options=None
            ).default_schema
        )
    )
    scalar = config["scalar"]
    batch = pa.record_batch({scalar["column"]: pa.array(["ab", None, "c"], pa.string())})
    out["scalar"] = outcome(
        lambda: [
            b.column(0).to_pylist()
            for b in client.scalar_function(
                function_name=scalar["name"], input=iter([batch]), arguments=None, **where(client.scalar_function)
            )
        ]
    )
    table = config["table"]
    arguments = Arguments(positional=(pa.scalar(table["n"], pa.int64()),))
    out["table"] = outcome(
        lambda: sorted(
            row
            for b in client.table_function(
                function_name=table["name"], arguments=arguments, **where(client.table_function)
            )
            for row in b.column(0).to_pylist()
        )
    )


if __name__ == "__main__":
    main()
