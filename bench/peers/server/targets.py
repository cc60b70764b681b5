"""The issue's targets for `./quiver bench server`: ratios between quiver's records and the peers' of
the same run, matched by workload and connection count (and by transport for shm vs unix).

quiver's own bench prints records with peer "quiver" and transport "tcp", "unix" or "unix+shm" (the
spine), or "grpc" (its queries through the Flight SQL front door with arrow-flight's Rust client); its
single-connection Arrow insert has variant "Arrow, 1 connection", its scans "1 connection". The Flight
SQL front door's records, ADBC's client (bench/peers/server/flight_sql.py, peer "quiver flight sql")
and arrow-flight's (peer "quiver", transport "grpc"), are set against the spine's over TCP, the same
network path. The Node package's records (bench/peers/server/node.py) carry peer "quiver node" and
are set against the Rust client's on the same transport.

In-process DuckDB's records of a query workload are several Arrow paths
(bench/peers/server/duckdb_inprocess.py); the ceiling is the fastest of them in the run (`ceiling`).
Where either side is missing the target stays `measured: null, met: false` with the reason.
"""

from __future__ import annotations

from typing import Any

from common import INSERT_ARROW, INSERT_COPY, QUERY_ONE

QUIVER = "quiver"
FLIGHT_SQL = "quiver flight sql"
NODE = "quiver node"
# The Node API the target names: the whole result as an apache-arrow Table.
NODE_TO_ARROW = "executeQueryToArrow (Table)"
IN_PROCESS = "duckdb in-process"
# quiver's spine transports; "grpc" is the Rust Flight SQL client's (same peer, other protocol).
SPINE_TRANSPORTS = ("tcp", "unix", "unix+shm")
GRPC = "grpc"
INSERT = "insert.bulk"
FULL_SCAN = "query.full_scan"

Record = dict[str, Any]


def best(records: list[Record], **match: Any) -> Record | None:
    """The fastest record whose fields equal `match` (a callable value is a predicate)."""
    found = [r for r in records if all(v(r.get(k)) if callable(v) else r.get(k) == v for k, v in match.items())]
    return max(found, key=lambda r: r["rows_per_s"], default=None)


def spine(transport: Any) -> bool:
    return transport in SPINE_TRANSPORTS


def ceiling(records: list[Record], workload: str, connections: int = 1) -> Record | None:
    """In-process DuckDB's fastest record of `workload` (memory database): the ceiling a server's
    figure is a fraction of, whichever Arrow path it was in this run.
    """
    return best(
        records,
        peer=IN_PROCESS,
        workload=workload,
        connections=connections,
        database=lambda d: d in (None, "memory"),
    )


def describe(r: Record) -> str:
    return f"{r['peer']} {r['api']} over {r['transport']}"


def ratio_target(
    name: str,
    threshold: float,
    ours: Record | None,
    theirs: Record | None,
    missing: str,
    ours_missing: str = "quiver's record is absent",
) -> dict:
    target = {"target": name, "comparison": "≥", "threshold": threshold, "measured": None, "met": False}
    if ours is None or theirs is None:
        target["detail"] = "not measured: " + (ours_missing if ours is None else missing)
        return target
    measured = ours["rows_per_s"] / theirs["rows_per_s"]
    target.update(
        measured=measured,
        met=measured >= threshold,
        detail=f"{ours['rows_per_s'] / 1e6:,.2f} vs {theirs['rows_per_s'] / 1e6:,.2f} Mrows/s "
        f"({describe(ours)} vs {describe(theirs)})",
    )
    return target


def compute(records: list[Record]) -> list[dict]:
    """Every target of the issue, in its order."""

    def one(r: Any) -> bool:
        return r == 1

    q_insert = best(records, peer=QUIVER, workload=INSERT, variant=INSERT_ARROW, transport=spine)
    q_scan = best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport=spine)
    reason = "the peer's record is absent (peer not run or failed)"
    targets = [
        ratio_target(
            "Arrow insert ≥ 0.6× in-process DuckDB's Arrow insert (memory database)",
            0.6,
            q_insert,
            best(records, peer=IN_PROCESS, workload=INSERT, variant=INSERT_ARROW, database="memory"),
            reason,
        )
    ]
    for peer, factor, label in (
        ("postgresql", 3.0, "PostgreSQL's COPY"),
        ("hyper", 2.0, "Hyper's fastest insert"),
        ("quack", 5.0, "Quack's insert"),
    ):
        theirs = best(records, peer=peer, workload=INSERT, connections=one)
        if peer == "postgresql":
            theirs = best(records, peer=peer, workload=INSERT, variant=INSERT_COPY)
        targets.append(
            ratio_target(f"Arrow insert ≥ {factor:g}× {label} (1 connection)", factor, q_insert, theirs, reason)
        )
    targets.append(
        ratio_target(
            "full scan → Arrow ≥ 0.6× the in-process ceiling (in-process DuckDB's fastest Arrow path)",
            0.6,
            q_scan,
            ceiling(records, FULL_SCAN),
            reason,
        )
    )
    targets.append(
        ratio_target(
            "full scan → Arrow ≥ 1.5× Quack",
            1.5,
            q_scan,
            best(records, peer="quack", workload=FULL_SCAN, variant=QUERY_ONE),
            reason,
        )
    )
    targets.append(
        ratio_target(
            "full scan over unix + shm ≥ 1.5× over the unix socket (quiver)",
            1.5,
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport="unix+shm"),
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport="unix"),
            "quiver's unix-socket full scan is absent",
        )
    )
    targets += flight_sql_targets(records)
    targets += python_targets(records)
    targets += node_targets(records)
    return targets


PYTHON_NATIVE = "quiver python native"


def python_targets(records: list[Record]) -> list[dict]:
    """The native Python module (bench/peers/server/quiver_python.py) against the Rust client it wraps,
    one connection each over the same transport: what crossing into pyarrow costs.
    """
    absent = "the native Python record is absent (peer python_native not run or failed)"
    return [
        ratio_target(
            f"Python native full scan → pyarrow ≥ 0.9× the Rust client over {transport} (1 connection)",
            0.9,
            best(records, peer=PYTHON_NATIVE, workload=FULL_SCAN, variant=QUERY_ONE, transport=transport),
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport=transport),
            f"quiver's Rust record over {transport} is absent",
            absent,
        )
        for transport in ("tcp", "unix+shm")
    ]


def flight_sql_targets(records: list[Record]) -> list[dict]:
    """The Flight SQL front door against the spine, both over TCP on loopback, one connection each:
    through arrow-flight's Rust client (the server's own share), then through ADBC's.
    """
    absent = "the Flight SQL record is absent (peer flight_sql not run or failed)"
    spine_absent = "quiver's spine record over tcp is absent"
    return [
        ratio_target(
            "Rust Flight SQL client (arrow-flight) full scan ≥ 0.7× the spine's full scan over TCP "
            "(quiver's Rust client, 1 connection)",
            0.7,
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport=GRPC),
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport="tcp"),
            spine_absent,
            "quiver's grpc record is absent (the Rust bench ran without --transports grpc, or it failed)",
        ),
        ratio_target(
            "Flight SQL (ADBC's client) full scan → Arrow ≥ 0.7× the spine's full scan over TCP (quiver, 1 connection)",
            0.7,
            best(records, peer=FLIGHT_SQL, workload=FULL_SCAN, variant=QUERY_ONE),
            best(records, peer=QUIVER, workload=FULL_SCAN, variant=QUERY_ONE, transport="tcp"),
            spine_absent,
            absent,
        ),
        ratio_target(
            "Flight SQL (ADBC's client) ingest ≥ 0.7× the spine's Arrow insert over TCP (quiver, 1 connection)",
            0.7,
            best(records, peer=FLIGHT_SQL, workload=INSERT, variant=INSERT_ARROW),
            best(records, peer=QUIVER, workload=INSERT, variant=INSERT_ARROW, transport="tcp"),
            spine_absent,
            absent,
        ),
    ]


def add_baselines(records: list[Record]) -> None:
    """Each record's ratio to the in-process ceiling of the same workload and connection count."""
    for r in records:
        base = ceiling(records, r["workload"], r["connections"])
        r["baseline"] = None if base is None or base is r else f"{IN_PROCESS}: {base['api']}"
        r["vs_in_process"] = None if base is None else r["rows_per_s"] / base["rows_per_s"]


def node_targets(records: list[Record]) -> list[dict]:
    """The Node package against the Rust client it wraps: its best record, and the Rust client's best on
    the same transport, one connection each.
    """
    absent = "the Node record is absent (peer node not run or failed)"
    rust_absent = "the Rust client's record on the same transport is absent"
    insert = best(records, peer=NODE, workload=INSERT, variant=INSERT_ARROW)
    query = best(records, peer=NODE, workload=FULL_SCAN, api=NODE_TO_ARROW)

    def rust(ours: Record | None, **match: Any) -> Record | None:
        return None if ours is None else best(records, peer=QUIVER, transport=ours["transport"], **match)

    return [
        ratio_target(
            "Node Arrow insert ≥ 0.8× the Rust client's Arrow insert (same transport, 1 connection)",
            0.8,
            insert,
            rust(insert, workload=INSERT, variant=INSERT_ARROW),
            rust_absent,
            absent,
        ),
        ratio_target(
            "Node executeQueryToArrow ≥ 0.8× the Rust client's full scan (same transport, 1 connection)",
            0.8,
            query,
            rust(query, workload=FULL_SCAN, variant=QUERY_ONE),
            rust_absent,
            absent,
        ),
    ]
