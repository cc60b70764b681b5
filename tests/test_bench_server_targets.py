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


def spine() -> list[dict]:
    """The spine's records as single-connection memory-database records (fresh copies)."""
    return [{**r, "connections": 1, "database": "memory"} for r in SPINE]


def in_process(api: str, rows_per_s: float) -> dict:
    r = record(targets.IN_PROCESS, targets.FULL_SCAN, QUERY_ONE, "in-process", rows_per_s)
    return {**r, "api": api, "connections": 1, "database": "memory"}


def named(computed: list[dict], prefix: str) -> dict:
    return next(t for t in computed if t["target"].startswith(prefix))


def test_the_rust_flight_sql_client_is_its_own_target_and_never_the_spine():
    # arrow-flight's client prints peer "quiver" with transport "grpc": it is set against the spine
    # over TCP, and never stands in for the spine's own scan even when it is the fastest record.
    rust_flight = {**record(targets.QUIVER, targets.FULL_SCAN, QUERY_ONE, "grpc", 80e6), "api": "flight"}
    rust = named(targets.compute([*SPINE, rust_flight]), "Rust Flight SQL")
    assert rust["measured"] == 0.8 and rust["met"]
    assert "over grpc vs quiver api over tcp" in rust["detail"]
    fast_grpc = {**rust_flight, "rows_per_s": 900e6}
    computed = targets.compute([*spine(), fast_grpc, in_process("drain", 400e6)])
    assert named(computed, "full scan → Arrow ≥ 0.6× the in-process")["measured"] == 0.5  # 200 (unix+shm) / 400
    assert "grpc" not in named(computed, "full scan over unix + shm")["detail"]


def test_the_scan_ceiling_is_the_fastest_in_process_path_of_the_run():
    paths = [in_process("to_arrow_table", 100e6), in_process("drain", 250e6), in_process("reader", 125e6)]
    records = [*spine(), *paths]
    target = named(targets.compute(records), "full scan → Arrow ≥ 0.6× the in-process")
    assert target["measured"] == 0.8 and target["met"]
    assert "duckdb in-process drain over in-process" in target["detail"]
    targets.add_baselines(records)
    assert {r["api"]: r["vs_in_process"] for r in paths} == {"to_arrow_table": 0.4, "drain": 1.0, "reader": 0.5}
    shm_scan = next(r for r in records if r["transport"] == "unix+shm" and r["workload"] == targets.FULL_SCAN)
    assert shm_scan["baseline"] == "duckdb in-process: drain"


def test_node_is_measured_by_execute_query_to_arrow_alone():
    stream = {
        **record(targets.NODE, targets.FULL_SCAN, QUERY_ONE, "tcp", 95e6),
        "api": "executeQueryStream (RecordBatch)",
    }
    to_arrow = {**record(targets.NODE, targets.FULL_SCAN, QUERY_ONE, "tcp", 70e6), "api": targets.NODE_TO_ARROW}
    node = named(targets.compute([*SPINE, stream, to_arrow]), "Node executeQueryToArrow")
    assert node["measured"] == 0.7 and not node["met"]
    assert targets.NODE_TO_ARROW in node["detail"]
