"""The Flight SQL targets of `./quiver bench server` (bench/peers/server/targets.py): each is set against
the spine's record over TCP, whatever faster transport the spine also measured, and says so when a side
is missing. Records are made up here; no peer is started.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "peers" / "server"))
import targets
from common import INSERT_ARROW, QUERY_ONE


def record(peer: str, workload: str, variant: str, transport: str, rows_per_s: float) -> dict:
    return {
        "peer": peer,
        "workload": workload,
        "variant": variant,
        "transport": transport,
        "api": "api",
        "rows_per_s": rows_per_s,
    }


SPINE = [
    record(targets.QUIVER, targets.INSERT, INSERT_ARROW, "tcp", 60e6),
    record(targets.QUIVER, targets.INSERT, INSERT_ARROW, "unix+shm", 90e6),
    record(targets.QUIVER, targets.FULL_SCAN, QUERY_ONE, "tcp", 100e6),
    record(targets.QUIVER, targets.FULL_SCAN, QUERY_ONE, "unix+shm", 200e6),
]


def by_name(computed: list[dict]) -> dict[str, dict]:
    return {t["target"]: t for t in computed if t["target"].startswith("Flight SQL")}


def test_flight_sql_is_measured_against_the_spine_over_tcp():
    flight = [
        record(targets.FLIGHT_SQL, targets.INSERT, INSERT_ARROW, "grpc", 45e6),
        record(targets.FLIGHT_SQL, targets.FULL_SCAN, QUERY_ONE, "grpc", 65e6),
    ]
    computed = by_name(targets.compute(SPINE + flight))
    assert len(computed) == 2
    scan = next(t for name, t in computed.items() if "full scan" in name)
    ingest = next(t for name, t in computed.items() if "ingest" in name)
    assert scan["measured"] == 0.65 and not scan["met"]
    assert ingest["measured"] == 0.75 and ingest["met"]
    assert "over tcp" in ingest["detail"] and "unix+shm" not in ingest["detail"]


def test_a_missing_flight_sql_record_is_named():
    computed = by_name(targets.compute(SPINE))
    assert all(t["measured"] is None and not t["met"] for t in computed.values())
    assert all("Flight SQL record is absent" in t["detail"] for t in computed.values())
