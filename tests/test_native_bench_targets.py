"""The native Python module's targets of `./quiver bench server` (bench/peers/server/targets.py): the
native full scan is set against the Rust client's over the same transport, and says so when a side is
missing. Records are made up here; no peer is started.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "peers" / "server"))
import targets
from common import QUERY_ONE


def scan(peer: str, transport: str, rows_per_s: float) -> dict:
    return {
        "peer": peer,
        "workload": targets.FULL_SCAN,
        "variant": QUERY_ONE,
        "transport": transport,
        "api": "api",
        "rows_per_s": rows_per_s,
    }


def native_targets(records: list[dict]) -> dict[str, dict]:
    found = {t["target"]: t for t in targets.compute(records) if t["target"].startswith("Python native")}
    assert len(found) == 2
    return {
        transport: t
        for t in found.values()
        for transport in ("tcp", "unix+shm")
        if t["target"].endswith(f"over {transport} (1 connection)")
    }


def test_native_scan_is_set_against_the_rust_client_over_the_same_transport() -> None:
    records = [
        scan(targets.QUIVER, "tcp", 100e6),
        scan(targets.QUIVER, "unix+shm", 200e6),
        scan(targets.PYTHON_NATIVE, "tcp", 95e6),
        scan(targets.PYTHON_NATIVE, "unix+shm", 150e6),
    ]
    found = native_targets(records)
    assert found["tcp"]["measured"] == 0.95 and found["tcp"]["met"]
    assert found["unix+shm"]["measured"] == 0.75 and not found["unix+shm"]["met"]


def test_a_missing_native_record_is_reported_not_met() -> None:
    found = native_targets([scan(targets.QUIVER, "tcp", 100e6)])
    assert found["tcp"]["measured"] is None and not found["tcp"]["met"]
    assert "python_native" in found["tcp"]["detail"]
    assert (
        "Rust record over unix+shm is absent"
        in native_targets([scan(targets.PYTHON_NATIVE, "unix+shm", 1.0)])["unix+shm"]["detail"]
    )
