"""Every conformance method answers as vgi-rpc 0.52.2's reference worker does, through vgi-rpc's client.

``conformance_parity.py`` runs under the oracle's Python (quiver never imports vgi_rpc), calls
each method on both workers with the same arguments and prints what differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quiver.conformance import ConformanceService, Secondary
from quiver.rpc.method import protocol_spec

from .conftest import REPO

SCRIPT = Path(__file__).with_name("conformance_parity.py")


def _oracle(name: str) -> Path:
    configured = os.environ.get("QUIVER_ORACLE_BIN")
    path = Path(configured or REPO / ".venv-oracle" / "bin") / name
    if not path.exists():
        if configured:
            pytest.fail(f"{path} not found (from $QUIVER_ORACLE_BIN)")
        pytest.skip(f"{path} not found; run tools/setup.sh or set $QUIVER_ORACLE_BIN")
    return path


def test_every_method_matches_the_reference(python_worker: list[str], worker_env: dict[str, str]) -> None:
    reference = [str(_oracle("vgi-rpc-conformance"))]
    command = [str(_oracle("python")), str(SCRIPT), json.dumps(reference), json.dumps(python_worker)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=worker_env, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)

    expected = {f"ConformanceService.{name}" for name in protocol_spec(ConformanceService).methods}
    expected |= {f"Secondary.{name}" for name in protocol_spec(Secondary).methods}
    assert len(expected) == 93
    assert set(report["methods"]) == expected
    assert report["differences"] == {}, json.dumps(report["differences"], indent=1)[:8000]
    assert report["cases"] >= len(expected)
    assert sys.executable in python_worker
