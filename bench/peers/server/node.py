"""quiver's Node package in `./quiver bench server`: seed 002's Node table beside the Rust client.

The measuring is node/bench/server_bench.js (the package's own API against a server it starts, over
tcp, unix and unix+shm); this driver runs it with the suite's sizes, checks the checksum each of its
records carries against the closed forms of bench/peers/server/rows.py (same rows, checked, not
assumed; a record that fails becomes an error line), and passes the JSON lines on to the harness.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import rows as measurements
from common import emit, log, parse_args

PEER = "quiver node"
ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "node" / "bench" / "server_bench.js"


def checked(record: dict) -> str | None:
    """Why `record`'s checksum is not the one of its rows (None when it is)."""
    got = record.get("checksum")
    if not isinstance(got, dict):
        return "the record carries no checksum"
    received = measurements.Checksum(
        count=int(got["count"]),
        sum_id=int(got["sum_id"]),
        sum_sensor_id=int(got["sum_sensor_id"]),
        sum_timestamp_offset=int(got["sum_timestamp_offset"]),
        sum_value=float(got["sum_value"]),
    )
    # An insert holds, and a full scan returns, exactly the table's rows.
    want = measurements.expected(int(record["rows"]))
    return None if received.matches(want) else f"checksum {received.as_dict()}, expected {want.as_dict()}"


def main() -> int:
    args = parse_args(__doc__)
    node = shutil.which("node")
    if node is None or not (ROOT / "node" / "node_modules").is_dir():
        emit({"kind": "error", "peer": PEER, "message": "no node, or node/ not set up (tools/setup_node.sh)"})
        return 1
    # --expose-gc: the script collects the previous run's result before each run (untimed).
    argv = [node, "--expose-gc", str(SCRIPT), "--rows", str(args.rows), "--warmup", str(args.warmup)]
    argv += ["--measured", str(args.measured)]
    log(PEER, " ".join(argv))
    failures = 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT / "node") as child:
        assert child.stdout is not None
        for line in child.stdout:
            obj = json.loads(line)
            if obj.get("kind") == "record":
                why = checked(obj)
                if why is not None:
                    failures += 1
                    obj = {
                        "kind": "error",
                        "peer": PEER,
                        "workload": obj["workload"],
                        "api": obj["api"],
                        "message": why,
                    }
                else:
                    obj.pop("checksum")
            elif obj.get("kind") == "error":
                failures += 1
            emit(obj)
    return 1 if failures or child.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
