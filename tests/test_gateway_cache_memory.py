"""The response cache's byte bound is the gateway's memory bound: 10,000 distinct requests whose
bodies (identity and gzip copies) sum to several times the cap grow the gateway process's RSS
by little more than the cap, measured from a process warmed by the same load uncached.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gateway_support import Gateway, poll, request

#: The cache's bound in the project.
CAP_BYTES = 48 << 20
#: The most RSS may grow, as a multiple of the cap.
RSS_GROWTH_MAX = 1.4
#: Distinct requests (each its own page of the table).
REQUESTS = 10_000
#: Requests before the first measure: the runtime's threads and their allocator heaps grown.
WARM = 1_000
ROWS = REQUESTS + 100
PAGE = 100

ENDPOINT = """name: NAME
version: 1
owner: tests
dataset: wide
query:
  select:
    - { as: id, column: id }
    - { as: label, column: label }
    - { as: score, column: score }
  order_by:
    - { column: id, dir: asc }
columns: [id, label, score]
pagination: { default_limit: 100, max_limit: 100 }
cache: { policy: POLICY }
"""


def endpoint(name: str, policy: str) -> str:
    return ENDPOINT.replace("NAME", name).replace("POLICY", policy)


def wide_project(root: Path) -> Path:
    """One table of ``ROWS`` rows with ~90 bytes of distinct text each: a page is ~12 KB of JSON."""
    project = root / "project"
    data = project / "data" / "wide"
    data.mkdir(parents=True)
    (project / "datasets").mkdir()
    (project / "endpoints").mkdir()
    rows = {
        "id": list(range(ROWS)),
        "label": [f"row {index:08d} " + f"{index * 2654435761 % 4294967296:010d}" * 8 for index in range(ROWS)],
        "score": [index / 7 for index in range(ROWS)],
    }
    pq.write_table(pa.table(rows), data / "wide.parquet")
    schema = [
        {"name": "id", "type": "BIGINT"},
        {"name": "label", "type": "VARCHAR"},
        {"name": "score", "type": "DOUBLE"},
    ]
    manifest = {
        "dataset_id": "wide",
        "snapshot_id": "w1",
        "created_at": "2026-07-01T00:00:00Z",
        "watermark": "2026-07-01T00:00:00Z",
        "schema": schema,
        "files": [{"path": "wide.parquet", "format": "parquet"}],
        "partition_columns": [],
        "sort_columns": ["id"],
        "row_count": ROWS,
        "size_bytes": (data / "wide.parquet").stat().st_size,
        "producer": "tests",
        "upstream_run_id": "run-1",
        "schema_version": 1,
        "data_quality_status": "passed",
        "compatibility_policy": "additive_only",
    }
    (data / "manifest.json").write_text(json.dumps(manifest))
    (project / "datasets" / "wide.yml").write_text(
        "id: wide\nmanifest: data/wide/manifest.json\nschema:\n"
        + "".join(f"  - {{ name: {column['name']}, type: {column['type']} }}\n" for column in schema)
    )
    (project / "endpoints" / "pages.yml").write_text(endpoint("pages", "snapshot"))
    # The same pages, never cached: the warm-up's, which grows what serving grows besides the cache.
    (project / "endpoints" / "uncached.yml").write_text(endpoint("uncached", "none"))
    (project / "offloader.yml").write_text(
        "version: 1\nauth: none\ndatasets_dir: datasets\nendpoints_dir: endpoints\n"
        f"gateway:\n  cache:\n    max_bytes: {CAP_BYTES}\n"
    )
    return project


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def fetch_pages(gateway: Gateway, offsets: range, endpoint: str = "pages", threads: int = 4) -> int:
    """Requests each offset's page (every other one gzip-encoded); the bytes received."""
    received = [0] * threads

    def run(worker: int) -> None:
        for offset in offsets[worker::threads]:
            headers = {"Accept-Encoding": "gzip"} if offset % 2 else {}
            reply = request(gateway.http_url, "GET", f"/v1/endpoints/{endpoint}?offset={offset}", headers)
            assert reply.status == 200, reply.body[:300]
            received[worker] += len(reply.body)

    workers = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(received)


def test_rss_grows_by_little_more_than_the_cache_cap(tmp_path):
    project = wide_project(tmp_path)
    with Gateway.start(project) as gateway:
        pid = gateway.process.pid
        # Warm, as the measured load runs but with nothing cached: the runtime's threads (and their
        # allocator heaps), the pool's connections, the encoders' buffers.
        fetch_pages(gateway, range(WARM), endpoint="uncached")
        before = rss_bytes(pid)
        held_before = gateway.status()["cache"]["bytes"]
        assert held_before == 0, "the warm-up caches nothing"
        received = fetch_pages(gateway, range(REQUESTS))
        status = gateway.status()["cache"]
        after = rss_bytes(pid)
        growth = after - before
        print(
            f"cap {CAP_BYTES >> 20} MiB; received {received >> 20} MiB; cache {status['bytes'] >> 20} MiB "
            f"in {status['entries']} entries, {status['evictions']} evictions; "
            f"RSS {before >> 20} -> {after >> 20} MiB (+{growth >> 20} MiB, {growth / CAP_BYTES:.2f}x the cap)"
        )
        # The bodies did not fit: the cache turned over more than once under its bound.
        assert received > CAP_BYTES
        assert status["evictions"] > status["entries"]
        assert status["bytes"] <= CAP_BYTES
        # Measured: 2.24x the cap when bodies kept their vectors' spare capacity, 1.26x since. The
        # bound leaves room for a noisy machine, and still fails on the old behaviour.
        assert growth <= RSS_GROWTH_MAX * CAP_BYTES, f"RSS grew {growth >> 20} MiB under a {CAP_BYTES >> 20} MiB cap"
        poll(lambda: gateway.admin("GET", "/live").status == 200, "the gateway to stay live")
