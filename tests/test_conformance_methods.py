"""The methods quiver's Rust conformance worker gained for protocol 2.0.0 (wide types,
sized replies, annotated batches, sticky-session counters off HTTP) answer exactly as
vgi-rpc 0.52.2's reference worker does, through vgi-rpc's own client.

The cases and the comparison live in crates/quiver-conformance/tests/differential.py,
run under the oracle venv's Python (quiver's own Python cannot import vgi-rpc).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "crates" / "quiver-conformance" / "tests" / "differential.py"


def test_new_methods_match_the_reference(oracle_bin: Path, conformance_worker: Path) -> None:
    reference = f"{oracle_bin / 'vgi-rpc-conformance'} --describe"
    done = subprocess.run(
        [str(oracle_bin / "python"), str(SCRIPT), str(conformance_worker), reference],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no output (exit {done.returncode}):\n{done.stderr}"
    summary = json.loads(lines[-1])
    assert summary["cases"] >= 30, summary
    assert summary["differences"] == 0, done.stdout
    assert done.returncode == 0, done.stderr
