"""vgi-python 0.47.0's engine-role client (`vgi.client.Client`) driving the split-planned scan
(`split_numbers`) and the buffered table function (`row_count`) of quiver's example workers: the
reference engine side as the oracle for what quiver's SDKs serve. It plans page by page (cursors,
`max_splits_per_response`), redeems every split on its own init in reverse order, and sends a
buffered call's input batch by batch (tests/vgi_oracle/drive_splits.py, in the vgi venv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "vgi_oracle" / "drive_splits.py"


BIN = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release"))
# The SDKs whose example worker has the buffered table function row_count.
BUFFERED = {"python", "rust", "java"}


def worker_argv(sdk: str) -> list[str]:
    if sdk == "python":
        return [sys.executable, "-m", "quiver.vgi.allinone"]
    if sdk == "java":
        jar = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"
        if not jar.is_file():
            pytest.fail(f"the Java worker is not built ({jar} missing); run java/build.sh")
        return [str(ROOT / "java" / "bin" / "quiver-split-numbers-java")]
    path = BIN / "examples" / "split_numbers"
    if not path.exists():
        pytest.fail(f"{path} is not built: cargo build --release -p quiver-vgi --example split_numbers")
    return [str(path)]


def run_driver(sdk: str) -> dict[str, Any]:
    python = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))
    if not python.exists():
        pytest.fail(f"no vgi-python venv at {python}: run ./quiver test (setup.sh builds .venv-vgi)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    flags = [] if sdk in BUFFERED else ["--splits-only"]
    done = subprocess.run(
        [str(python), str(DRIVER), json.dumps(worker_argv(sdk)), *flags],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module", params=["python", "rust", "java"])
def oracle(request: pytest.FixtureRequest) -> dict[str, Any]:
    return run_driver(request.param)


@pytest.fixture(scope="module", params=sorted(BUFFERED))
def buffered_oracle(request: pytest.FixtureRequest) -> dict[str, Any]:
    return run_driver(request.param)


def test_a_plan_in_pages_redeemed_split_by_split_returns_every_row_once(oracle: dict[str, Any]) -> None:
    paged = oracle["paged"]
    assert paged["error_class"] is None, paged
    assert (paged["value"]["pages"], paged["value"]["splits"]) == (3, 25)
    assert paged["value"]["values"] == list(range(10_000))
    one = oracle["one_page"]["value"]
    assert (one["pages"], one["splits"], one["values"]) == (1, 3, list(range(7)))


def test_a_token_minted_for_another_bind_is_refused(oracle: dict[str, Any]) -> None:
    forged = oracle["forged"]
    assert forged["error_class"] == "ClientError"
    assert "[SPLIT_TOKEN_INVALID]" in forged["message"] and "different bind" in forged["message"]
    assert oracle["after"]["value"]["values"] == [0, 1, 2, 3, 4]


def test_a_buffered_call_sees_the_whole_input(buffered_oracle: dict[str, Any]) -> None:
    assert buffered_oracle["buffered"] == {"error_class": None, "value": [{"rows": 12_345}]}
    assert buffered_oracle["buffered_empty"] == {"error_class": None, "value": [{"rows": 0}]}
