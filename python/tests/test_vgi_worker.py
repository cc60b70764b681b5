"""quiver.vgi: unit tests (filters, projection, bind), and the vgi-python oracle.

The oracle is vgi-python 0.47.0's engine-role client (`vgi.client.Client`); it drives
`python -m quiver.vgi.allinone`.

The client needs Python >= 3.13, so it runs in its own venv (QUIVER_VGI_PYTHON, default
/work/main/.venv-vgi/bin/python) through tests/vgi_oracle/drive_allinone.py, which prints
JSON; the asserts are here.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from quiver.vgi import ArgumentValidationError, FilterDeserializationError, InvalidArgumentError, NotFoundError, wire
from quiver.vgi import filters as vgi_filters
from quiver.vgi.allinone import worker as allinone
from quiver.vgi.bind import bind
from quiver.vgi.execution import FileCounter, MemoryCounter
from quiver.vgi.init import _shape

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "vgi_oracle" / "drive_allinone.py"
WORKER = [sys.executable, "-m", "quiver.vgi.allinone"]
UPPER_INPUT = [
    ["hello", None, "wOrLd", ""],
    [None, "straße", "ǆemal", "ünïcödé ☃", "ﬁ", "x"],
]
IDLE_S = 2.0
# How much longer than its idle timeout a worker may take to exit on a loaded machine.
IDLE_EXIT_SLACK_S = 60.0


# -- unit: filters ----------------------------------------------------------------------------

N_SCHEMA = pa.schema([pa.field("n", pa.int64()), pa.field("s", pa.string())])


def col(index: int = 0, name: str = "n") -> dict[str, Any]:
    return {"node": "column_ref", "column_index": index, "column_name": name}


def lit(ref: int) -> dict[str, Any]:
    return {"node": "literal", "value_ref": ref}


def container(predicates: list[dict[str, Any]], values: dict[int, pa.Scalar], context: str = "vgi.none.v1") -> bytes:
    document = {
        "encoding": "vgi.filters.v2",
        "semantics": "vgi.duckdb.standard.v1",
        "kind": "snapshot",
        "predicates": [{"id": f"q{i}", "revision": 0, "source": "query", **p} for i, p in enumerate(predicates)],
    }
    fields = [pa.field("filter_spec", pa.string(), nullable=False)]
    arrays = [pa.array([json.dumps(document)])]
    for ref, value in sorted(values.items()):
        fields.append(pa.field(f"value_{ref}", value.type))
        arrays.append(pa.array([value.as_py()], value.type))
    schema = pa.schema(
        fields,
        metadata={
            "vgi_filter_encoding": "vgi.filters.v2",
            "vgi_filter_version": "2",
            "vgi_evaluation_context": context,
        },
    )
    return wire.stream_bytes([pa.RecordBatch.from_arrays(arrays, schema=schema)], schema)


def required(expression: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "required", "expression": expression}


def kept(predicates: list[dict[str, Any]], values: dict[int, pa.Scalar], n: list[int | None]) -> list[int | None]:
    batch = pa.RecordBatch.from_arrays([pa.array(n, pa.int64()), pa.array([str(v) for v in n])], schema=N_SCHEMA)
    return vgi_filters.parse(container(predicates, values), N_SCHEMA).apply(batch).column(0).to_pylist()


def test_comparisons_and_three_valued_logic() -> None:
    n = [0, 1, 2, 3, 4, 5, None]
    ge = required({"node": "comparison", "op": "ge", "left": col(), "right": lit(0)})
    assert kept([ge], {0: pa.scalar(3, pa.int64())}, n) == [3, 4, 5]
    either = required(
        {
            "node": "or",
            "children": [
                {"node": "comparison", "op": "lt", "left": col(), "right": lit(0)},
                {"node": "comparison", "op": "eq", "left": col(), "right": lit(1)},
            ],
        }
    )
    assert kept([either], {0: pa.scalar(2, pa.int64()), 1: pa.scalar(5, pa.int64())}, n) == [0, 1, 5]
    negated = required(
        {"node": "not", "expression": {"node": "comparison", "op": "eq", "left": col(), "right": lit(0)}}
    )
    assert kept([negated], {0: pa.scalar(4, pa.int64())}, n) == [0, 1, 2, 3, 5]  # NOT NULL is NULL: dropped
    distinct = required({"node": "comparison", "op": "distinct_from", "left": col(), "right": lit(0)})
    assert kept([distinct], {0: pa.scalar(4, pa.int64())}, n) == [0, 1, 2, 3, 5, None]
    same = required({"node": "comparison", "op": "not_distinct_from", "left": col(), "right": lit(0)})
    assert kept([same], {0: pa.scalar(None, pa.int64())}, n) == [None]


def test_is_null_and_in_follow_sql() -> None:
    n = [1, 2, 3, None]
    assert kept([required({"node": "is_null", "expression": col(), "negated": False})], {}, n) == [None]
    assert kept([required({"node": "is_null", "expression": col(), "negated": True})], {}, n) == [1, 2, 3]
    in_set = {"node": "in", "expression": col(), "set": {"kind": "literal", "value_ref": 0}, "negated": False}
    with_null = {0: pa.scalar([1, 3, None], pa.list_(pa.int64()))}
    assert kept([required(in_set)], with_null, n) == [1, 3]
    # NOT IN with a NULL candidate is never TRUE.
    assert kept([required({**in_set, "negated": True})], with_null, n) == []
    assert kept([required({**in_set, "negated": True})], {0: pa.scalar([1], pa.list_(pa.int64()))}, n) == [2, 3]


def test_advisory_predicates_are_left_to_the_engine() -> None:
    advisory = {"mode": "advisory", "expression": {"node": "arithmetic", "op": "add", "left": col(), "right": col()}}
    assert kept([advisory], {}, [1, 2]) == [1, 2]


@pytest.mark.parametrize(
    "expression",
    [
        {"node": "arithmetic", "op": "add", "left": col(), "right": col()},
        {"node": "call", "function": "starts_with", "arguments": [col(1, "s"), lit(0)]},
        {
            "node": "in",
            "expression": col(),
            "set": {"kind": "external", "batch_index": 0, "column_index": 0, "column_name": "k"},
            "negated": False,
        },
        {"node": "comparison", "op": "eq", "left": col(0, "wrong"), "right": lit(0)},
    ],
)
def test_required_predicates_outside_the_subset_are_declined(expression: dict[str, Any]) -> None:
    with pytest.raises(FilterDeserializationError):
        vgi_filters.parse(container([required(expression)], {0: pa.scalar("x")}), N_SCHEMA)


def test_session_context_is_declined() -> None:
    with pytest.raises(FilterDeserializationError, match="evaluation context"):
        vgi_filters.parse(container([], {}, context="vgi.duckdb.session.v1"), N_SCHEMA)


# -- unit: projection ---------------------------------------------------------------------------


def test_projection_selects_after_filtering() -> None:
    batch = pa.record_batch({"n": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    ge = required({"node": "comparison", "op": "ge", "left": col(), "right": lit(0)})
    parsed = vgi_filters.parse(container([ge], {0: pa.scalar(2, pa.int64())}), N_SCHEMA)
    assert _shape(batch, N_SCHEMA, parsed, [1]).to_pydict() == {"s": ["b", "c"]}
    empty = _shape(batch, N_SCHEMA, None, [])
    assert (empty.num_columns, empty.num_rows) == (0, 3)


# -- unit: bind ---------------------------------------------------------------------------------


def arguments(positional: list[pa.Scalar] = (), named: dict[str, pa.Scalar] | None = None) -> bytes:
    children = {f"positional_{i}": v for i, v in enumerate(positional)}
    children.update({f"named_{k}": v for k, v in (named or {}).items()})
    struct = (
        pa.StructArray.from_arrays(
            [pa.array([v.as_py()], v.type) for v in children.values()],
            fields=[pa.field(k, v.type) for k, v in children.items()],
        )
        if children
        else pa.array([{}], pa.struct([]))
    )
    batch = pa.RecordBatch.from_arrays([struct], names=["args"])
    return wire.stream_bytes([batch], batch.schema)


def request(name: str, args: bytes, function_type: str = "TABLE", input_schema: pa.Schema | None = None) -> dict:
    return {
        "function_name": name,
        "arguments": args,
        "function_type": function_type,
        "schema_path": ["main"],
        "input_schema": None if input_schema is None else wire.schema_bytes(input_schema),
    }


def test_bind_checks_arguments_and_fills_defaults() -> None:
    bound = bind(allinone, request("numbers", arguments([pa.scalar(10, pa.int64())])))
    assert bound.args == {"n": 10, "batch_rows": 1 << 20}
    assert bound.output_schema == pa.schema([pa.field("n", pa.int64())])
    # an INTEGER literal widens to BIGINT
    named = arguments([pa.scalar(5, pa.int32())], {"batch_rows": pa.scalar(2, pa.int64())})
    assert bind(allinone, request("numbers", named)).args == {"n": 5, "batch_rows": 2}
    upper = bind(allinone, request("upper_case", arguments(), "SCALAR", pa.schema([("v", pa.string())])))
    assert upper.output_schema == pa.schema([pa.field("result", pa.string())])
    echo_in = pa.schema([("x", pa.int64()), ("s", pa.string())])
    assert bind(allinone, request("echo", arguments(), "TABLE", echo_in)).output_schema == echo_in


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (request("nope", arguments()), NotFoundError, "Unknown function: 'nope'"),
        (request("numbers", arguments([pa.scalar("abc")])), ArgumentValidationError, "must be BIGINT, got VARCHAR"),
        (request("numbers", arguments()), ArgumentValidationError, "missing argument 0 'n' (BIGINT)"),
        (
            request("numbers", arguments([pa.scalar(1), pa.scalar(2)])),
            ArgumentValidationError,
            "takes 1 positional argument(s) but 2 were given",
        ),
        (
            request("numbers", arguments([pa.scalar(1)], {"nope": pa.scalar(1)})),
            ArgumentValidationError,
            "no named argument 'nope'",
        ),
        (request("numbers", arguments([pa.scalar(-1)])), ArgumentValidationError, "-1 is too small (must be >= 0)"),
        (request("upper_case", arguments()), InvalidArgumentError, "is a scalar function, but was bound as TABLE"),
        (
            request("numbers", arguments([pa.scalar(1)]), "SCALAR"),
            InvalidArgumentError,
            "is a table function, but was bound as SCALAR",
        ),
        (request("echo", arguments()), InvalidArgumentError, "is a table-in-out function: it needs an input table"),
        (
            request("numbers", arguments([pa.scalar(1)]), "TABLE", pa.schema([("x", pa.int64())])),
            InvalidArgumentError,
            "is a table function: it takes no input table",
        ),
        (
            request("upper_case", arguments(), "SCALAR", pa.schema([("a", pa.string()), ("b", pa.string())])),
            ArgumentValidationError,
            "takes 1 column argument(s), got 2",
        ),
    ],
)
def test_bind_rejects_bad_calls(call: dict, error: type, text: str) -> None:
    with pytest.raises(error) as raised:
        bind(allinone, call)
    assert text in str(raised.value)


def test_counters_hand_out_each_unit_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = MemoryCounter(10)
    assert [memory.claim(4), memory.claim(4), memory.claim(4), memory.claim(4)] == [(0, 4), (4, 8), (8, 10), None]
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    first = FileCounter.create(b"\x01" * 16, 5)
    second = FileCounter.join(b"\x01" * 16)
    assert [first.claim(3), second.claim(3), first.claim(3), second.claim(3)] == [(0, 3), (3, 5), None, None]
    assert not first.path.exists()


# -- the oracle ------------------------------------------------------------------------------------


def vgi_python() -> Path:
    path = Path(os.environ.get("QUIVER_VGI_PYTHON", "/work/main/.venv-vgi/bin/python"))
    if not path.exists():
        pytest.fail(
            f"no vgi-python interpreter at {path}: set QUIVER_VGI_PYTHON to a Python 3.13 venv with vgi-python==0.47.0"
        )
    return path


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="quiver-vgi-py-") as directory:
        directory = Path(directory)
        socket_path = directory / "allinone.sock"
        state_dir = directory / "launch"
        state_dir.mkdir()
        stderr_path = directory / "unix.stderr"
        with stderr_path.open("w+") as unix_stderr:
            unix_worker = subprocess.Popen(
                [*WORKER, "--unix", str(socket_path), "--idle-timeout", str(IDLE_S), "--debug"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=unix_stderr,
                text=True,
            )
            try:
                announced = unix_worker.stdout.readline().strip()
                config = {"worker_argv": WORKER, "unix_socket": str(socket_path), "launch_state_dir": str(state_dir)}
                # An open connection keeps the worker from going idle before the driver reaches
                # "unix", however slow a loaded machine makes the scenarios before it.
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as keep_alive:
                    keep_alive.connect(str(socket_path))
                    done = subprocess.run(
                        [str(vgi_python()), str(DRIVER), json.dumps(config)],
                        capture_output=True,
                        text=True,
                        timeout=180,
                    )
                if done.returncode != 0:
                    pytest.fail(f"the vgi driver failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
                results = json.loads(done.stdout)
                started = time.monotonic()
                exit_code = unix_worker.wait(timeout=IDLE_S + IDLE_EXIT_SLACK_S)
                results["unix_process"] = {
                    "announced": announced,
                    "socket": str(socket_path),
                    "exit_code": exit_code,
                    "exit_after_s": time.monotonic() - started,
                    "stdout_rest": unix_worker.stdout.read(),
                    "socket_left": socket_path.exists(),
                    "stderr": stderr_path.read_text(),
                }
            finally:
                if unix_worker.poll() is None:
                    unix_worker.kill()
                    unix_worker.wait()
    for name, result in results.items():
        if isinstance(result, dict) and "crashed" in result:
            pytest.fail(f"scenario {name} crashed in the driver:\n{result['crashed']}")
    return results


def test_oracle_catalog_lists_the_functions(oracle: dict[str, Any]) -> None:
    catalog = oracle["catalog"]
    assert catalog["catalogs"] == ["allinone"]
    assert catalog["attach"] == {
        "default_schema": "main",
        "supports_catalog_contents": True,
        "supports_transactions": False,
    }
    assert catalog["schemas"][0]["counts"] == {
        "aggregate_function": 3,
        "index": 0,
        "macro": 0,
        "scalar_function": 2,
        "table": 0,
        "table_function": 4,
        "view": 0,
    }
    functions = catalog["functions"]
    assert set(functions) == {
        "numbers",
        "echo",
        "upper_case",
        "multiply",
        "split_numbers",
        "row_count",
        "sum_int",
        "avg_double",
        "concat_agg",
    }
    assert functions["row_count"]["function_type"] == "TABLE_BUFFERING"
    assert functions["split_numbers"]["function_type"] == "TABLE"
    concat = functions["concat_agg"]
    assert (concat["listed_as"], concat["function_type"]) == ("AGGREGATE_FUNCTION", "AGGREGATE")
    upper = functions["upper_case"]
    assert (upper["listed_as"], upper["function_type"]) == ("SCALAR_FUNCTION", "SCALAR")
    assert [(a["name"], a["type"]) for a in upper["arguments"]] == [("s", "string")]
    assert [(o["name"], o["type"]) for o in upper["output"]] == [("result", "string")]
    numbers = functions["numbers"]
    assert (numbers["listed_as"], numbers["function_type"]) == ("TABLE_FUNCTION", "TABLE")
    assert [(a["name"], a["type"]) for a in numbers["arguments"]] == [("n", "int64"), ("batch_rows", "int64")]
    assert numbers["arguments"][0]["metadata"]["vgi_range"] == "[0, +inf)"
    assert numbers["arguments"][1]["metadata"]["vgi_arg"] == "named"
    assert numbers["arguments"][1]["metadata"]["vgi_default"] == str(1 << 20)
    assert numbers["projection_pushdown"] is True and numbers["filter_pushdown"] is True
    assert numbers["max_workers"] > 1
    echo = functions["echo"]
    assert [(a["name"], a["type"], a["metadata"].get("vgi_type")) for a in echo["arguments"]] == [
        ("data", "null", "table")
    ]
    assert echo["max_workers"] == 1 and echo["has_finalize"] is True
    assert all(f["description"] for f in functions.values())
    assert catalog["load_catalog"] == {
        "source": "catalog_contents",
        "fallback_reason": None,
        "functions": [
            "avg_double",
            "concat_agg",
            "echo",
            "multiply",
            "numbers",
            "row_count",
            "split_numbers",
            "sum_int",
            "upper_case",
        ],
    }
    assert catalog["contents"]["not_modified_on_revalidation"] is True
    assert catalog["copy_formats"] == []
    assert catalog["detach"]["error_class"] is None
    assert "OpaqueDataNotRecognizedError" in catalog["forged_token"]["message"]


def test_oracle_reads_the_declared_catalog(oracle: dict[str, Any]) -> None:
    declared = oracle["catalog"]["declared"]
    assert (declared["default_schema"], declared["tags"]["vgi.title"]) == ("main", "quiver all-in-one example")
    assert declared["schemas"]["main"]["comment"] == "The example functions"
    assert declared["functions"]["numbers"] == {
        "schema": "main",
        "comment": "The integers 0..n-1, generated in parallel",
        "tags": {"vgi.category": "generators"},
        "examples": [["SELECT sum(n) FROM allinone.main.numbers(1000)", "The sum of 0..999: 499500"]],
        "categories": ["generators"],
    }


def test_oracle_upper_case_keeps_nulls_and_handles_unicode(oracle: dict[str, Any]) -> None:
    # Full case mapping, as str.upper and the Rust and Java example workers: ß -> SS, ﬁ -> FI.
    expected = [{"result": [None if s is None else s.upper() for s in batch]} for batch in UPPER_INPUT]
    assert oracle["functions"]["upper_case"] == expected
    assert expected[0]["result"] == ["HELLO", None, "WORLD", ""]
    assert expected[1]["result"][1:5] == ["STRASSE", "ǄEMAL", "ÜNÏCÖDÉ ☃", "FI"]


def test_oracle_numbers_projection_and_filters(oracle: dict[str, Any]) -> None:
    functions = oracle["functions"]
    assert functions["numbers_projection"] == [{"n": [0, 1, 2, 3]}, {"n": [4, 5, 6, 7]}, {"n": [8, 9]}]
    assert functions["numbers_empty_projection"] == [4, 4, 2]
    values = [v for batch in functions["numbers_filtered"] for v in batch["n"]]
    assert values == [n for n in range(20) if n >= 3 and (n < 6 or n in (8, 9, 50)) and n != 4]


def test_oracle_numbers_on_two_workers_returns_each_value_once(oracle: dict[str, Any]) -> None:
    parallel = oracle["parallel"]
    assert sorted(parallel["values"]) == list(range(1000))
    stderr = parallel["stderr"]
    started = re.findall(r"execution ([0-9a-f]{32}) started", stderr)
    joined = re.findall(r"secondary init of execution ([0-9a-f]{32})", stderr)
    assert len(started) == 1 and joined == started, stderr
    emitted = re.findall(r"\[(\d+)\] debug: numbers\(\): connection emitted (\d+) row", stderr)
    assert len({pid for pid, _ in emitted}) == 2, stderr  # two stdio processes shared one file counter
    assert sum(int(rows) for _, rows in emitted) == 1000, stderr


def test_oracle_echo_with_finalize_returns_its_input(oracle: dict[str, Any]) -> None:
    assert oracle["functions"]["echo"] == oracle["functions"]["echo_input"]


@pytest.mark.parametrize(
    ("case", "error_type", "text"),
    [
        ("unknown_function", "NotFoundError", "Unknown function: 'nope'"),
        ("wrong_argument_type", "ArgumentValidationError", "must be BIGINT, got VARCHAR"),
        ("missing_argument", "ArgumentValidationError", "missing argument 0 'n' (BIGINT)"),
        ("extra_argument", "ArgumentValidationError", "takes 1 positional argument(s) but 2 were given"),
        ("unknown_named_argument", "ArgumentValidationError", "no named argument 'nope'"),
        ("out_of_range", "ArgumentValidationError", "-1 is too small (must be >= 0)"),
        ("scalar_bound_as_table", "InvalidArgumentError", "upper_case() is a scalar function, but was bound as TABLE"),
        ("table_bound_as_scalar", "InvalidArgumentError", "numbers() is a table function, but was bound as SCALAR"),
        ("table_in_out_as_table", "InvalidArgumentError", "echo() is a table-in-out function: it needs an input table"),
        ("table_as_table_in_out", "InvalidArgumentError", "numbers() is a table function: it takes no input table"),
        ("scalar_wrong_column_count", "ArgumentValidationError", "upper_case() takes 1 column argument(s), got 2"),
    ],
)
def test_oracle_bad_input_is_a_clear_error(oracle: dict[str, Any], case: str, error_type: str, text: str) -> None:
    result = oracle["errors"][case]
    assert result["error_class"] == "ClientError", result
    assert result["message"].startswith(f"{error_type}: {error_type}: "), result
    assert text in result["message"], result


def test_oracle_worker_keeps_serving_after_bad_input(oracle: dict[str, Any]) -> None:
    assert oracle["errors"]["still_serving"] == [{"n": [0, 1, 2]}]


def test_oracle_unix_socket_serves_concurrent_connections(oracle: dict[str, Any]) -> None:
    assert sorted(oracle["unix"]["values"]) == list(range(500))
    # With two workers the client spreads the input batches over two connections, and says that the
    # answers may come back in either order; each answer must still match its own batch.
    answers = sorted(oracle["unix"]["upper_case"], key=lambda answer: answer["result"])
    assert answers == [{"result": ["A", "É"]}, {"result": ["B"]}]
    process = oracle["unix_process"]
    assert process["announced"] == f"UNIX:{process['socket']}"
    assert process["stdout_rest"] == ""
    stderr = process["stderr"]
    started = re.findall(r"execution ([0-9a-f]{32}) started", stderr)
    joined = re.findall(r"secondary init of execution ([0-9a-f]{32})", stderr)
    assert started and started[0] in joined, stderr
    assert len(set(re.findall(r"quiver-vgi-py \[(\d+)\]", stderr))) == 1
    assert process["exit_code"] == 0 and process["exit_after_s"] < IDLE_S + IDLE_EXIT_SLACK_S
    assert not process["socket_left"]


def test_oracle_launcher_starts_a_shared_worker(oracle: dict[str, Any]) -> None:
    assert sorted(oracle["launch"]["values"]) == list(range(300))
    assert any(name.endswith(".sock") for name in oracle["launch"]["state_files"])


def test_stdio_worker_exits_cleanly_when_stdin_closes() -> None:
    done = subprocess.run(WORKER, input=b"", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
