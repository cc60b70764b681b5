"""vgi-python 0.47.0's engine-role client (`vgi.client.Client`) driving the example aggregates of
quiver's Rust, Python and Java workers: grouped sums, means and ordered joins, empty input, a raw
combine, and a body that raises. The client runs in the vgi venv as a subprocess
(tests/vgi_oracle/drive_aggregates.py) that prints JSON; the asserts are here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_vgi_allinone import vgi_python

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "vgi_oracle" / "drive_aggregates.py"
JAVA_JAR = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"


@pytest.fixture(scope="module", params=["rust", "python", "java"])
def seen(request: pytest.FixtureRequest, allinone: Path) -> dict[str, Any]:
    worker = {
        "rust": [str(allinone)],
        "python": [sys.executable, "-m", "quiver.vgi.allinone"],
        "java": [str(ROOT / "java" / "bin" / "quiver-allinone-java")],
    }[request.param]
    if request.param == "java" and not JAVA_JAR.is_file():
        pytest.fail(f"the Java worker is not built ({JAVA_JAR} missing); run java/build.sh or ./quiver test")
    done = subprocess.run(
        [str(vgi_python()), str(DRIVER), json.dumps(worker)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_grouped_results(seen: dict[str, Any]) -> None:
    assert seen["sum_int"] == {"error_class": None, "value": [["a", 4], ["b", 47], ["c", None]]}
    assert seen["avg_double"] == {"error_class": None, "value": [["a", 2.0], ["b", 47 / 3], ["c", None]]}
    # Rows reach each group in input order.
    assert seen["concat_agg"] == {"error_class": None, "value": [["a", "p+t"], ["b", "q+r+u"], ["c", None]]}


def test_empty_input_and_combine(seen: dict[str, Any]) -> None:
    assert seen["empty"] == {"error_class": None, "value": [{"result": None}]}
    # 0 <- 1 (2+3) and 2 (10); sources keep their states; 3 and 4 never saw a row.
    assert seen["combine"] == {"error_class": None, "value": [16, 5, 10, None, None]}


def test_a_body_that_raises(seen: dict[str, Any]) -> None:
    assert seen["overflow"]["error_class"] == "ClientError"
    assert "sum_int(): BIGINT overflow" in seen["overflow"]["message"]
