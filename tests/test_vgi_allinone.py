"""vgi-python 0.47.0's engine-role client (`vgi.client.Client`) against quiver's
`quiver-allinone` worker and the Java SDK's `AllInOne` (java/bin/quiver-allinone-java),
the same checks for both: the external oracle for the VGI engine<->worker protocol
(vgi.v2 2.2.0). If that client cannot drive our workers, we are not compatible.

vgi-python needs Python >= 3.13, quiver's test venv is 3.11, so the client runs
in its own venv (QUIVER_VGI_PYTHON, default .venv-vgi) as a subprocess
(tests/vgi_oracle/drive_allinone.py) that prints JSON; the asserts are here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket as sockets
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "vgi_oracle" / "drive_allinone.py"
UPPER_INPUT = [
    ["hello", None, "wOrLd", ""],
    [None, "straße", "ǆemal", "ünïcödé ☃", "ﬁ", "x"],
]
UNIX_IDLE_TIMEOUT_S = 2.0
# How much longer than its idle timeout a worker may take to exit on a loaded machine.
IDLE_EXIT_SLACK_S = 60.0


def vgi_python() -> Path:
    """The vgi venv's interpreter: QUIVER_VGI_PYTHON, then .venv-vgi, then the
    bootstrap venv used before setup.sh builds .venv-vgi.
    """
    candidates = [os.environ.get("QUIVER_VGI_PYTHON"), ROOT / ".venv-vgi" / "bin" / "python", "/tmp/vgi047/bin/python"]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    pytest.fail("no vgi-python venv: run ./quiver test (setup.sh builds .venv-vgi from tools/requirements-vgi.txt)")


@pytest.fixture(scope="module", params=["rust", "java"])
def allinone(request: pytest.FixtureRequest) -> list[str]:
    """The worker's command line: the Rust `quiver-allinone`, or the Java SDK's example."""
    if request.param == "java":
        jar = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"
        if not jar.is_file():
            pytest.fail(f"the Java worker is not built ({jar} missing); run java/build.sh or ./quiver test")
        return [str(ROOT / "java" / "bin" / "quiver-allinone-java")]
    path = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-allinone"
    if not path.exists():
        pytest.fail(f"quiver-allinone not found at {path}; run ./quiver test (it builds the workspace)")
    return [str(path)]


@contextlib.contextmanager
def held_open(socket_path: Path) -> Iterator[None]:
    """One idle client connection to a socket worker for the duration of the block."""
    with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as client:
        client.connect(str(socket_path))
        yield


@pytest.fixture(scope="module")
def oracle(allinone: list[str]) -> dict[str, Any]:
    """Runs every scenario once (one interpreter start), plus a worker on a Unix
    socket that the client reaches the way `launch:` does.
    """
    with tempfile.TemporaryDirectory(prefix="quiver-vgi-") as directory:
        directory = Path(directory)
        socket = directory / "allinone.sock"
        state_dir = directory / "launch"
        state_dir.mkdir()
        unix_stderr = (directory / "unix.stderr").open("w+")
        unix_worker = subprocess.Popen(
            [*allinone, "--unix", str(socket), "--idle-timeout", str(UNIX_IDLE_TIMEOUT_S), "--debug"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=unix_stderr,
            text=True,
        )
        try:
            announced = unix_worker.stdout.readline().strip()
            # An open connection keeps the worker from going idle while the driver starts and runs
            # the scenarios before "unix", however slow a loaded machine makes them.
            with held_open(socket):
                config = {"worker_argv": allinone, "unix_socket": str(socket), "launch_state_dir": str(state_dir)}
                env = {**os.environ, "VGI_WORKER_SQLITE_PATH": str(directory / "vgi-worker.sqlite")}
                done = subprocess.run(
                    [str(vgi_python()), str(DRIVER), json.dumps(config)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                    env=env,
                )
            if done.returncode != 0:
                pytest.fail(f"the vgi driver failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
            results = json.loads(done.stdout)
            # The socket worker exits on its own once idle: wait for that with a generous bound.
            started = time.monotonic()
            exit_code = unix_worker.wait(timeout=UNIX_IDLE_TIMEOUT_S + IDLE_EXIT_SLACK_S)
            results["unix_process"] = {
                "announced": announced,
                "socket": str(socket),
                "exit_code": exit_code,
                "exit_after_s": time.monotonic() - started,
                "stdout_rest": unix_worker.stdout.read(),
                "socket_left": socket.exists(),
                "stderr": (directory / "unix.stderr").read_text(),
            }
        finally:
            if unix_worker.poll() is None:
                unix_worker.kill()
                unix_worker.wait()
            unix_stderr.close()
    for name, result in results.items():
        if isinstance(result, dict) and "crashed" in result:
            pytest.fail(f"scenario {name} crashed in the driver:\n{result['crashed']}")
    return results


def test_catalog_lists_the_functions_with_their_signatures(oracle: dict[str, Any]) -> None:
    catalog = oracle["catalog"]
    assert catalog["catalogs"] == ["allinone"]
    assert catalog["attach"] == {
        "default_schema": "main",
        "supports_catalog_contents": True,
        "supports_transactions": False,
    }
    assert catalog["schemas"] == [
        {
            "path": ["main"],
            "counts": {
                "aggregate_function": 3,
                "index": 0,
                "macro": 0,
                "scalar_function": 2,
                "table": 0,
                "table_function": 4,
                "view": 0,
            },
        }
    ]
    functions = catalog["functions"]
    assert set(functions) == {
        "numbers",
        "split_numbers",
        "echo",
        "row_count",
        "upper_case",
        "multiply",
        "sum_int",
        "avg_double",
        "concat_agg",
    }
    assert functions["row_count"]["function_type"] == "TABLE_BUFFERING"
    assert functions["split_numbers"]["function_type"] == "TABLE"
    concat = functions["concat_agg"]
    assert (concat["listed_as"], concat["function_type"]) == ("AGGREGATE_FUNCTION", "AGGREGATE")
    assert [(a["name"], a["type"], a["metadata"].get("vgi_const")) for a in concat["arguments"]] == [
        ("s", "string", None),
        ("sep", "string", "true"),
    ]
    assert [(o["name"], o["type"]) for o in concat["output"]] == [("result", "string")]

    upper = functions["upper_case"]
    assert (upper["listed_as"], upper["function_type"]) == ("SCALAR_FUNCTION", "SCALAR")
    assert [(a["name"], a["type"]) for a in upper["arguments"]] == [("s", "string")]
    assert [(o["name"], o["type"]) for o in upper["output"]] == [("result", "string")]

    numbers = functions["numbers"]
    assert (numbers["listed_as"], numbers["function_type"]) == ("TABLE_FUNCTION", "TABLE")
    assert [(a["name"], a["type"]) for a in numbers["arguments"]] == [("n", "int64"), ("batch_rows", "int64")]
    assert numbers["arguments"][0]["metadata"]["vgi_range"] == "[0, +inf)"
    assert numbers["arguments"][1]["metadata"]["vgi_arg"] == "named"
    assert numbers["arguments"][1]["metadata"]["vgi_default"] == str(4 << 20)
    assert numbers["projection_pushdown"] is True and numbers["filter_pushdown"] is True
    assert numbers["max_workers"] > 1

    echo = functions["echo"]
    assert (echo["listed_as"], echo["function_type"]) == ("TABLE_FUNCTION", "TABLE")
    assert [(a["name"], a["type"], a["metadata"].get("vgi_type")) for a in echo["arguments"]] == [
        ("data", "null", "table")
    ]
    assert echo["max_workers"] == 1
    assert all(f["description"] for f in functions.values())


def test_vgi_pythons_client_reads_the_declared_catalog(oracle: dict[str, Any]) -> None:
    declared = oracle["catalog"]["declared"]
    assert declared["default_schema"] == "main"
    assert declared["comment"].startswith("quiver's example VGI worker")
    assert declared["tags"]["vgi.title"] == "quiver all-in-one example"
    assert declared["schemas"]["main"]["comment"] == "The example functions"
    assert [c["name"] for c in json.loads(declared["schemas"]["main"]["tags"]["vgi.categories"])] == [
        "aggregates",
        "generators",
        "math",
        "tables",
        "text",
    ]
    assert declared["functions"]["upper_case"] == {
        "schema": "main",
        "comment": "Upper-cases text with Unicode full case mapping",
        "tags": {"vgi.category": "text"},
        "examples": [["SELECT allinone.main.upper_case('straße')", "STRASSE: full case mapping turns ß into SS"]],
        "categories": ["text"],
    }
    assert {name: f["categories"] for name, f in declared["functions"].items()} == {
        "echo": ["tables"],
        "multiply": ["math"],
        "numbers": ["generators"],
        "row_count": ["tables"],
        "split_numbers": ["generators"],
        "upper_case": ["text"],
    }


def test_catalog_contents_is_accepted_without_fallback(oracle: dict[str, Any]) -> None:
    catalog = oracle["catalog"]
    # The client checks every category's schema for exact equality with its own
    # dataclass schema and falls back to per-schema calls on any mismatch.
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


def test_upper_case_keeps_nulls_and_handles_unicode(oracle: dict[str, Any]) -> None:
    got = oracle["functions"]["upper_case"]
    expected = [{"result": [None if v is None else v.upper() for v in batch]} for batch in UPPER_INPUT]
    assert got == expected
    assert got[1]["result"][1] == "STRASSE"


def test_numbers_honours_projection(oracle: dict[str, Any]) -> None:
    functions = oracle["functions"]
    assert functions["numbers_projection"] == [{"n": [0, 1, 2, 3]}, {"n": [4, 5, 6, 7]}, {"n": [8, 9]}]
    # count(*)-style: no columns, rows still counted.
    assert functions["numbers_empty_projection"] == [4, 4, 2]


def test_numbers_applies_pushed_down_filters(oracle: dict[str, Any]) -> None:
    # n >= 3 AND (n < 6 OR n IN (8, 9, 50, NULL)) AND NOT n = 4; the advisory
    # arithmetic predicate is left to the engine.
    values = [v for batch in oracle["functions"]["numbers_filtered"] for v in batch["n"]]
    assert values == [n for n in range(20) if n >= 3 and (n < 6 or n in (8, 9, 50)) and n != 4]


def test_numbers_on_two_workers_returns_each_value_once(oracle: dict[str, Any]) -> None:
    parallel = oracle["parallel"]
    assert sorted(parallel["values"]) == list(range(1000))
    stderr = parallel["stderr"]
    # Two worker processes (stdio: one per connection) shared one execution.
    started = re.findall(r"execution ([0-9a-f]{32}) started", stderr)
    joined = re.findall(r"secondary init of execution ([0-9a-f]{32})", stderr)
    assert len(started) == 1 and joined == started, stderr
    emitted = re.findall(r"\[(\d+)\] debug: numbers\(\): connection emitted (\d+) row", stderr)
    assert len({pid for pid, _ in emitted}) == 2, stderr
    assert sum(int(rows) for _, rows in emitted) == 1000, stderr


def test_echo_with_finalize_returns_its_input(oracle: dict[str, Any]) -> None:
    functions = oracle["functions"]
    assert functions["echo"] == functions["echo_input"]


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
def test_bad_input_is_a_clear_error(oracle: dict[str, Any], case: str, error_type: str, text: str) -> None:
    result = oracle["errors"][case]
    assert result["error_class"] == "ClientError", result
    assert result["message"].startswith(f"{error_type}: {error_type}: "), result
    assert text in result["message"], result


def test_worker_keeps_serving_after_bad_input(oracle: dict[str, Any]) -> None:
    assert oracle["errors"]["still_serving"] == [{"n": [0, 1, 2]}]


def test_unix_socket_serves_concurrent_connections_from_one_process(oracle: dict[str, Any]) -> None:
    unix = oracle["unix"]
    assert sorted(unix["values"]) == list(range(500))
    # vgi's Client may run the two batches on two connections at once: results arrive in either order.
    assert sorted(unix["upper_case"], key=lambda r: r["result"]) == [{"result": ["A", "É"]}, {"result": ["B"]}]
    process = oracle["unix_process"]
    assert process["announced"] == f"UNIX:{process['socket']}"
    assert process["stdout_rest"] == "", "nothing but the UNIX line on stdout"
    stderr = process["stderr"]
    started = re.findall(r"execution ([0-9a-f]{32}) started", stderr)
    joined = re.findall(r"secondary init of execution ([0-9a-f]{32})", stderr)
    assert started and started[0] in joined, stderr
    assert len(set(re.findall(r"quiver-vgi \[(\d+)\]", stderr))) == 1, "one process served every connection"


def test_unix_worker_exits_when_idle(oracle: dict[str, Any]) -> None:
    process = oracle["unix_process"]
    assert process["exit_code"] == 0
    assert process["exit_after_s"] < UNIX_IDLE_TIMEOUT_S + IDLE_EXIT_SLACK_S
    assert not process["socket_left"]


def test_launcher_starts_a_shared_worker(oracle: dict[str, Any]) -> None:
    launch = oracle["launch"]
    assert sorted(launch["values"]) == list(range(300))
    assert any(name.endswith(".sock") for name in launch["state_files"])


def test_stdio_worker_exits_cleanly_when_stdin_closes(allinone: list[str]) -> None:
    worker = subprocess.Popen(allinone, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = worker.communicate(input=b"", timeout=60)
    assert worker.returncode == 0, stderr
    assert stdout == b""
