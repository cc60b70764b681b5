"""Every conformance method answers as vgi-rpc 0.52.2's reference worker does, through vgi-rpc's client.

``conformance_parity.py`` runs under the oracle's Python (quiver never imports vgi_rpc), calls
each method on both workers with the same arguments and prints what differs: over stdio, and
over HTTP (where streams resume across requests).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from quiver.conformance import ConformanceService, Secondary
from quiver.rpc.method import protocol_spec

from . import test_http
from .test_http import start, stop

SCRIPT = Path(__file__).with_name("conformance_parity.py")
METHOD_COUNT = 93

# The oracle Python, once it is known to have vgi-rpc's HTTP extra.
oracle_http = test_http.oracle_http


def parity(oracle_python: Path, reference: list[str] | str, ours: list[str] | str, env: dict[str, str]) -> None:
    command = [str(oracle_python), str(SCRIPT), json.dumps(reference), json.dumps(ours)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)

    expected = {f"ConformanceService.{name}" for name in protocol_spec(ConformanceService).methods}
    expected |= {f"Secondary.{name}" for name in protocol_spec(Secondary).methods}
    assert len(expected) == METHOD_COUNT
    assert set(report["methods"]) == expected
    assert report["cases"] >= METHOD_COUNT
    assert report["differences"] == {}, json.dumps(report["differences"], indent=1)[:8000]


def test_every_method_matches_the_reference_over_stdio(
    oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str]
) -> None:
    reference = [str(oracle_cli.with_name("vgi-rpc-conformance"))]
    parity(oracle_cli.with_name("python"), reference, python_worker, worker_env)


def test_every_method_matches_the_reference_over_http(
    oracle_http: Path, oracle_cli: Path, python_worker: list[str], worker_env: dict[str, str]
) -> None:
    reference, reference_url = start([str(oracle_cli.with_name("vgi-rpc-conformance")), "--http", "0"])
    try:
        ours, our_url = start([*python_worker, "--http"], worker_env)
        try:
            parity(oracle_http, reference_url, our_url, worker_env)
        finally:
            stop(ours)
    finally:
        stop(reference)
