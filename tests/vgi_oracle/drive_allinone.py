"""Drive quiver's `quiver-allinone` worker with vgi-python 0.47.0's engine-role client.

Runs under the vgi venv (Python >= 3.13), never under quiver's own: the pytest
side (tests/test_vgi_allinone.py) starts this script with that interpreter and
asserts on the JSON it prints. Every scenario records what the client saw, or
the error it raised; nothing here decides pass or fail.

usage: drive_allinone.py CONFIG_JSON
  CONFIG_JSON: {"worker": "/path/quiver-allinone", "unix_socket": "/path/or/null",
                "launch_state_dir": "/tmp/dir"}
  "worker_argv": [...] (optional) replaces "worker" by a whole command line,
  e.g. [python, "-m", "quiver.vgi.allinone"].
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

# The client clamps parallelism to the CPU count; a 1-CPU runner would never
# fan out. The scan's correctness does not depend on real cores.
os.cpu_count = lambda: 8  # type: ignore[assignment]

import pyarrow as pa  # noqa: E402
from vgi import Arguments  # noqa: E402
from vgi.catalog.catalog_interface import SchemaObjectType  # noqa: E402
from vgi.client import Client  # noqa: E402
from vgi.filter_v2_builder import build_filter_batch, serialize_filter_batch, value_payload  # noqa: E402
from vgi.invocation import FunctionType  # noqa: E402

UPPER_INPUT = [
    ["hello", None, "wOrLd", ""],
    [None, "straße", "ǆemal", "ünïcödé ☃", "ﬁ", "x"],
]


def error_of(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        value = call()
    except Exception as error:
        return {"error_class": type(error).__name__, "message": str(error).split("\n\nRemote traceback")[0]}
    return {"error_class": None, "value": repr(value)[:500]}


def rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [batch.to_pydict() for batch in batches]


def field_info(field: pa.Field) -> dict[str, Any]:
    metadata = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
    return {"name": field.name, "type": str(field.type), "metadata": metadata}


def catalog(worker: list[str]) -> dict[str, Any]:
    client = Client(worker, pool=None, worker_limit=1)
    out: dict[str, Any] = {"catalogs": [c.name for c in client.catalogs()]}
    attach = client.catalog_attach(name="allinone", data_version_spec=None, implementation_version=None, options=None)
    token = attach.attach_opaque_data
    out["attach"] = {
        "default_schema": attach.default_schema,
        "supports_catalog_contents": attach.supports_catalog_contents,
        "supports_transactions": attach.supports_transactions,
    }
    out["schemas"] = [
        {"path": s.path, "counts": s.estimated_object_count} for s in client.schemas(attach_opaque_data=token)
    ]
    functions = {}
    for kind in (
        SchemaObjectType.SCALAR_FUNCTION,
        SchemaObjectType.TABLE_FUNCTION,
        SchemaObjectType.AGGREGATE_FUNCTION,
    ):
        for info in client.schema_contents(attach_opaque_data=token, path=["main"], type=kind):
            functions[info.name] = {
                "listed_as": kind.name,
                "function_type": info.function_type.name,
                "arguments": [field_info(f) for f in pa.ipc.read_schema(pa.py_buffer(info.arguments))],
                "output": [field_info(f) for f in pa.ipc.read_schema(pa.py_buffer(info.output_schema))],
                "description": info.description,
                "projection_pushdown": info.projection_pushdown,
                "filter_pushdown": info.filter_pushdown,
                "max_workers": info.max_workers,
                "has_finalize": info.has_finalize,
            }
    out["functions"] = functions
    out["declared"] = declared(client, attach, token)
    snapshot = client.load_catalog(attach=attach)
    out["load_catalog"] = {
        "source": str(snapshot.source),
        "fallback_reason": snapshot.fallback_reason,
        "functions": sorted(
            f.name for s in snapshot.schemas for f in [*s.scalar_functions, *s.table_functions, *s.aggregate_functions]
        ),
    }
    contents = client.contents(attach_opaque_data=token, if_none_match=None)
    again = client.contents(attach_opaque_data=token, if_none_match=contents.etag)
    out["contents"] = {"etag": contents.etag, "not_modified_on_revalidation": again.not_modified}
    out["copy_formats"] = client.copy_formats(attach_opaque_data=token)
    out["detach"] = error_of(lambda: client.catalog_detach(attach_opaque_data=token))
    out["forged_token"] = error_of(lambda: client.schemas(attach_opaque_data=b"forged"))
    return out


def declared(client: Client, attach: Any, token: bytes) -> dict[str, Any]:
    """The catalog's, each schema's and each function's comment, tags, examples and categories."""
    schemas = {}
    functions = {}
    for schema in client.schemas(attach_opaque_data=token):
        path = ".".join(schema.path)
        schemas[path] = {"comment": schema.comment, "tags": dict(schema.tags)}
        for kind in (SchemaObjectType.SCALAR_FUNCTION, SchemaObjectType.TABLE_FUNCTION):
            for info in client.schema_contents(attach_opaque_data=token, path=schema.path, type=kind):
                functions[info.name] = {
                    "schema": path,
                    "comment": info.comment,
                    "tags": dict(info.tags),
                    "examples": [[e.sql, e.description] for e in info.examples],
                    "categories": list(info.categories),
                }
    return {
        "default_schema": attach.default_schema,
        "comment": attach.comment,
        "tags": dict(attach.tags),
        "schemas": schemas,
        "functions": functions,
    }


def numbers_args(n: int, batch_rows: int | None = None) -> Arguments:
    named = {"batch_rows": pa.scalar(batch_rows, pa.int64())} if batch_rows else None
    return Arguments(positional=(pa.scalar(n, pa.int64()),), named=named)


def filter_batch() -> pa.RecordBatch:
    def column() -> dict[str, Any]:
        return {"node": "column_ref", "column_index": 0, "column_name": "n"}

    document = {
        "encoding": "vgi.filters.v2",
        "semantics": "vgi.duckdb.standard.v1",
        "kind": "snapshot",
        "predicates": [
            {
                "id": "q0",
                "revision": 0,
                "mode": "required",
                "source": "query",
                "expression": {
                    "node": "comparison",
                    "op": "ge",
                    "left": column(),
                    "right": {"node": "literal", "value_ref": 0},
                },
            },
            {
                "id": "q1",
                "revision": 0,
                "mode": "required",
                "source": "query",
                "expression": {
                    "node": "or",
                    "children": [
                        {
                            "node": "comparison",
                            "op": "lt",
                            "left": column(),
                            "right": {"node": "literal", "value_ref": 1},
                        },
                        {
                            "node": "in",
                            "expression": column(),
                            "set": {"kind": "literal", "value_ref": 2},
                            "negated": False,
                        },
                    ],
                },
            },
            {
                "id": "q2",
                "revision": 0,
                "mode": "required",
                "source": "query",
                "expression": {
                    "node": "not",
                    "expression": {
                        "node": "comparison",
                        "op": "eq",
                        "left": column(),
                        "right": {"node": "literal", "value_ref": 3},
                    },
                },
            },
            # Not evaluated by the worker: advisory, so it is left to the engine.
            {
                "id": "q3",
                "revision": 0,
                "mode": "advisory",
                "source": "query",
                "expression": {"node": "arithmetic", "op": "add", "left": column(), "right": column()},
            },
        ],
    }
    payload = [
        value_payload(0, 3, pa.int64()),
        value_payload(1, 6, pa.int64()),
        value_payload(2, [8, 9, 50, None], pa.list_(pa.int64())),
        value_payload(3, 4, pa.int64()),
    ]
    return serialize_filter_batch(build_filter_batch(document, payload))


def functions(worker: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with Client(worker, pool=None, worker_limit=1) as client:
        batches = [pa.record_batch({"value": pa.array(values, pa.string())}) for values in UPPER_INPUT]
        out["upper_case"] = rows(
            list(
                client.scalar_function(
                    function_name="upper_case", schema_path=["main"], input=iter(batches), arguments=None
                )
            )
        )
        out["numbers_projection"] = rows(
            list(
                client.table_function(
                    function_name="numbers", schema_path=["main"], arguments=numbers_args(10, 4), projection_ids=[0]
                )
            )
        )
        out["numbers_empty_projection"] = [
            b.num_rows
            for b in client.table_function(
                function_name="numbers", schema_path=["main"], arguments=numbers_args(10, 4), projection_ids=[]
            )
        ]
        out["numbers_filtered"] = rows(
            list(
                client.table_function(
                    function_name="numbers",
                    schema_path=["main"],
                    arguments=numbers_args(20, 6),
                    projection_ids=[0],
                    pushdown_filters=filter_batch(),
                )
            )
        )
        echo_input = [
            pa.record_batch({"x": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["a", None, "ç"])}),
            pa.record_batch({"x": pa.array([4, 5], pa.int64()), "s": pa.array(["d", "e"])}),
        ]
        out["echo_input"] = rows(echo_input)
        out["echo"] = rows(
            list(
                client.table_in_out_function(
                    function_name="echo",
                    schema_path=["main"],
                    input=iter(echo_input),
                    arguments=None,
                    has_finalize=True,
                )
            )
        )
    return out


def parallel(worker: list[str]) -> dict[str, Any]:
    # --debug: each worker process logs its init and what it emitted, on stderr.
    client = Client([*worker, "--debug"], pool=None, worker_limit=2)
    with client:
        batches = list(
            client.table_function(
                function_name="numbers", schema_path=["main"], arguments=numbers_args(1000, 10), projection_ids=[0]
            )
        )
    values = [v for b in batches for v in b.column(0).to_pylist()]
    return {"values": values, "stderr": client.get_worker_stderr()}


def errors(worker: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # passthrough_stderr: otherwise the client waits a second per error for a
    # live worker's stderr to reach EOF, to quote it in the message.
    with Client(worker, pool=None, worker_limit=1, passthrough_stderr=True) as client:

        def bind(name: str, args: Arguments, kind: FunctionType = FunctionType.TABLE) -> Callable[[], Any]:
            return lambda: client.bind(function_name=name, schema_path=["main"], arguments=args, function_type=kind)

        out["unknown_function"] = error_of(bind("nope", Arguments(positional=())))
        out["wrong_argument_type"] = error_of(bind("numbers", Arguments(positional=(pa.scalar("abc"),))))
        out["missing_argument"] = error_of(bind("numbers", Arguments(positional=())))
        out["extra_argument"] = error_of(bind("numbers", Arguments(positional=(pa.scalar(1), pa.scalar(2)))))
        out["unknown_named_argument"] = error_of(
            bind("numbers", Arguments(positional=(pa.scalar(1),), named={"nope": pa.scalar(1)}))
        )
        out["out_of_range"] = error_of(bind("numbers", Arguments(positional=(pa.scalar(-1),))))
        out["scalar_bound_as_table"] = error_of(bind("upper_case", Arguments(positional=())))
        out["table_bound_as_scalar"] = error_of(bind("numbers", numbers_args(3), FunctionType.SCALAR))
        out["table_in_out_as_table"] = error_of(
            lambda: list(
                client.table_function(function_name="echo", schema_path=["main"], arguments=Arguments(positional=()))
            )
        )
        out["table_as_table_in_out"] = error_of(
            lambda: list(
                client.table_in_out_function(
                    function_name="numbers",
                    schema_path=["main"],
                    input=iter([pa.record_batch({"x": [1]})]),
                    arguments=numbers_args(3),
                )
            )
        )
        out["scalar_wrong_column_count"] = error_of(
            lambda: list(
                client.scalar_function(
                    function_name="upper_case",
                    schema_path=["main"],
                    input=iter([pa.record_batch({"a": ["x"], "b": ["y"]})]),
                    arguments=None,
                )
            )
        )
        out["still_serving"] = rows(
            list(client.table_function(function_name="numbers", schema_path=["main"], arguments=numbers_args(3)))
        )
    return out


def unix(worker: list[str], socket: str) -> dict[str, Any]:
    client = Client(transport="launch", launch_argv=worker, launch_socket_path=socket, pool=None, worker_limit=2)
    with client:
        batches = list(
            client.table_function(function_name="numbers", schema_path=["main"], arguments=numbers_args(500, 7))
        )
        values = [v for b in batches for v in b.column(0).to_pylist()]
        upper = rows(
            list(
                client.scalar_function(
                    function_name="upper_case",
                    schema_path=["main"],
                    input=iter([pa.record_batch({"v": pa.array(["a", "é"])}), pa.record_batch({"v": pa.array(["b"])})]),
                    arguments=None,
                )
            )
        )
    return {"values": values, "upper_case": upper}


def launch(worker: list[str], state_dir: str) -> dict[str, Any]:
    client = Client(
        transport="launch",
        launch_argv=worker,
        launch_state_dir=state_dir,
        launch_idle_timeout=2.0,
        pool=None,
        worker_limit=2,
    )
    with client:
        batches = list(
            client.table_function(function_name="numbers", schema_path=["main"], arguments=numbers_args(300, 9))
        )
    return {
        "values": [v for b in batches for v in b.column(0).to_pylist()],
        "state_files": sorted(os.listdir(state_dir)),
    }


def main() -> None:
    config = json.loads(sys.argv[1])
    worker = list(config.get("worker_argv") or [config["worker"]])
    results: dict[str, Any] = {}
    scenarios: dict[str, Callable[[], Any]] = {
        "catalog": lambda: catalog(worker),
        "functions": lambda: functions(worker),
        "parallel": lambda: parallel(worker),
        "errors": lambda: errors(worker),
    }
    if config.get("unix_socket"):
        scenarios["unix"] = lambda: unix(worker, config["unix_socket"])
    if config.get("launch_state_dir"):
        scenarios["launch"] = lambda: launch(worker, config["launch_state_dir"])
    for name, scenario in scenarios.items():
        try:
            results[name] = scenario()
        except Exception:
            results[name] = {"crashed": traceback.format_exc()}
    json.dump(results, sys.stdout, default=str)


if __name__ == "__main__":
    main()
