"""The gateway's failure lab (offloader's, and more): each failure gives its documented error or
state, and the other datasets keep serving — asserted after every one. One gateway serves a copy
of the example project with failing datasets added: a bad manifest, a missing part file, a stale
snapshot, a column narrowed on refresh, and a materialize over its budget.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import socket
import threading
import time
import urllib.parse
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

from gateway_support import (
    ACME,
    CATALOG,
    GLOBEX,
    REVOKED,
    WAIT_SECONDS,
    Gateway,
    add_gateway_setting,
    copy_example,
    poll,
    without_request_facts,
    without_request_id,
)

MAY = {"from": "2026-05-01", "to": "2026-05-31"}
HEALTHY_DATASETS = ["customer_usage", "products", "invoices"]
LAB_ENDPOINTS = ["bad_manifest_rows", "missing_part_rows", "stale_catalog", "narrowing_rows", "slow_rows"]


def dataset_yaml(dataset_id: str, columns: list[tuple[str, str]], extra: str = "") -> str:
    schema = "\n".join(f"  - {{ name: {name}, type: {kind} }}" for name, kind in columns)
    return f"id: {dataset_id}\nmanifest: data/{dataset_id}/manifest.json\n{extra}schema:\n{schema}\n"


def endpoint_yaml(name: str, dataset: str, columns: list[str], order: str, extra: str = "") -> str:
    select = "\n".join(f"    - {{ as: {column}, column: {column} }}" for column in columns)
    return (
        f"name: {name}\nversion: 1\ndataset: {dataset}\nserving_mode: local_table\n{extra}"
        f"params: []\nquery:\n  select:\n{select}\n  order_by:\n    - {{ column: {order}, dir: asc }}\n"
        f"columns: [{', '.join(columns)}]\npagination:\n  default_limit: 10\n  max_limit: 100\n"
        "cache:\n  policy: snapshot\n"
    )


def manifest(
    dataset_id: str,
    snapshot_id: str,
    schema: list[tuple[str, str]],
    files: list[tuple[str, str]],
    watermark: str = "2026-06-01T00:00:00Z",
    sort_columns: list[str] | None = None,
) -> str:
    return json.dumps(
        {
            "dataset_id": dataset_id,
            "snapshot_id": snapshot_id,
            "created_at": watermark,
            "watermark": watermark,
            "schema": [{"name": name, "type": kind} for name, kind in schema],
            "files": [{"path": path, "format": fmt} for path, fmt in files],
            "sort_columns": sort_columns or [schema[0][0]],
        }
    )


def add_dataset(project: Path, dataset_id: str, schema, manifest_text: str, extra: str = "") -> Path:
    data = project / "data" / dataset_id
    data.mkdir(parents=True, exist_ok=True)
    (data / "manifest.json").write_text(manifest_text)
    (project / "datasets" / f"{dataset_id}.yml").write_text(dataset_yaml(dataset_id, schema, extra))
    return data


NARROW_SCHEMA = [("id", "BIGINT"), ("value", "BIGINT")]
SLOW_SCHEMA = [("id", "BIGINT"), ("score", "DOUBLE"), ("label", "VARCHAR")]


def build_lab(project: Path) -> None:
    settings = (project / "offloader.yml").read_text()
    (project / "offloader.yml").write_text(
        settings.replace("  ready: all", "  ready: [customer_usage, products, invoices]")
    )
    # A manifest that is not JSON at all.
    add_dataset(project, "bad_manifest", NARROW_SCHEMA, '{"dataset_id": "bad_manifest", "snapshot_id": ')
    # A manifest naming a part that is not there.
    add_dataset(
        project,
        "missing_part",
        NARROW_SCHEMA,
        manifest("missing_part", "s1", NARROW_SCHEMA, [("gone.parquet", "parquet")]),
    )
    # The products' data under an old watermark, served by an endpoint allowing an hour.
    stale = add_dataset(
        project,
        "stale_products",
        [("product_id", "BIGINT"), ("name", "VARCHAR")],
        manifest(
            "stale_products",
            "old",
            [("product_id", "BIGINT"), ("name", "VARCHAR")],
            [("products.parquet", "parquet")],
            watermark="2020-01-01T00:00:00Z",
        ),
    )
    shutil.copy(project / "data" / "products" / "products.parquet", stale / "products.parquet")
    # BIGINT today; a later snapshot narrows `value` to INTEGER.
    narrowing = add_dataset(
        project, "narrowing", NARROW_SCHEMA, manifest("narrowing", "n1", NARROW_SCHEMA, [("n1.parquet", "parquet")])
    )
    pq.write_table(
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "value": pa.array([10, 20, 30], pa.int64())}),
        narrowing / "n1.parquet",
    )
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64()), "value": pa.array([7, 8], pa.int32())}), narrowing / "n2.parquet"
    )
    # Tens of millions of rows to sort, with a one-second budget.
    slow = add_dataset(
        project,
        "slow",
        SLOW_SCHEMA,
        # The one file four times over: 24M rows to read and sort, several times the budget even on a
        # quiet machine (6M rows once took 0.93 s here, under the 1 s budget).
        manifest("slow", "big", SLOW_SCHEMA, [("big.csv", "csv")] * 4, sort_columns=["score"]),
        extra="materialize_budget_seconds: 1\n",
    )
    with duckdb.connect() as db:
        db.execute("SET enable_progress_bar = false")
        db.execute(
            "COPY (SELECT range AS id, hash(range) % 1000003 / 7.0 AS score, 'l' || (range % 1000) AS label "
            f"FROM range(6000000)) TO '{slow / 'big.csv'}' (HEADER)"
        )
    endpoints = project / "endpoints"
    (endpoints / "bad_manifest_rows.yml").write_text(
        endpoint_yaml("bad_manifest_rows", "bad_manifest", ["id", "value"], "id")
    )
    (endpoints / "missing_part_rows.yml").write_text(
        endpoint_yaml("missing_part_rows", "missing_part", ["id", "value"], "id")
    )
    (endpoints / "narrowing_rows.yml").write_text(endpoint_yaml("narrowing_rows", "narrowing", ["id", "value"], "id"))
    (endpoints / "slow_rows.yml").write_text(endpoint_yaml("slow_rows", "slow", ["id", "score"], "id"))
    (endpoints / "stale_catalog.yml").write_text(
        endpoint_yaml(
            "stale_catalog",
            "stale_products",
            ["product_id", "name"],
            "product_id",
            extra="freshness:\n  max_staleness_minutes: 60\n",
        )
    )
    keys = project / "keys" / "keys.yml"
    keys.write_text(
        keys.read_text().replace(
            "endpoints: [product_catalog]", f"endpoints: [product_catalog, {', '.join(LAB_ENDPOINTS)}]"
        )
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    project = copy_example(tmp_path_factory.mktemp("lab"))
    build_lab(project)
    add_gateway_setting(project, "keyed_revalidation: true")
    with Gateway.start(project) as running:
        yield running


def others_keep_serving(gateway: Gateway) -> None:
    assert gateway.admin("GET", "/ready").status == 200
    for dataset in HEALTHY_DATASETS:
        assert gateway.dataset(dataset)["state"] == "ready"
    assert gateway.call("customer_usage_summary", ACME, **MAY).status == 200
    assert gateway.call("product_catalog", CATALOG).status == 200
    assert gateway.call("open_invoices", GLOBEX).status == 200


def failed(gateway: Gateway, dataset: str) -> dict:
    try:
        return poll(lambda: (entry := gateway.dataset(dataset))["state"] == "failed" and entry, f"{dataset} to fail")
    except AssertionError as timeout:
        # Whether it still refreshes or ended well, and what the gateway logged about it.
        logged = [line for line in gateway.logs().splitlines() if f'"{dataset}"' in line]
        raise AssertionError(f"{timeout}; its status: {gateway.dataset(dataset)}; its log: {logged[-20:]}") from None


def test_bad_manifest_fails_its_dataset_only(lab):
    entry = failed(lab, "bad_manifest")
    assert entry["last_error"], entry
    ready = lab.admin("GET", "/ready")
    assert ready.status == 200, "the ready policy names only the healthy datasets"
    assert ready.json()["datasets"]["bad_manifest"] == "failed"
    reply = lab.call("bad_manifest_rows", CATALOG)
    assert reply.status == 503 and reply.json()["error"]["family"] == "not_ready"
    assert int(reply.header("retry-after")) >= 1
    others_keep_serving(lab)


def test_missing_part_file_fails_its_dataset_only(lab):
    entry = failed(lab, "missing_part")
    assert "gone.parquet" in entry["last_error"], entry
    assert lab.call("missing_part_rows", CATALOG).status == 503
    others_keep_serving(lab)


def test_materialize_over_its_budget_fails_while_others_serve(lab):
    entry = failed(lab, "slow")
    assert "budget" in entry["last_error"], entry
    assert lab.call("slow_rows", CATALOG).status == 503
    others_keep_serving(lab)


def test_stale_snapshot_is_served_and_marked(lab):
    poll(lambda: lab.dataset("stale_products")["state"] == "ready", "the stale dataset to load")
    reply = lab.call("stale_catalog", CATALOG)
    assert reply.status == 200, reply.body
    assert reply.header("x-stale") == "true"
    assert int(reply.header("x-freshness-age")) > 3600
    assert reply.json()["meta"]["freshness"]["max_staleness_minutes"] == 60
    fresh_enough = lab.call("product_catalog", CATALOG)
    assert fresh_enough.header("x-stale") == "false", "an endpoint without a staleness bound is never stale"
    metrics = lab.admin("GET", "/metrics").body.decode()
    assert 'quiver_gateway_snapshot_stale{dataset="stale_products"} 1' in metrics
    others_keep_serving(lab)


def test_narrowed_column_is_refused_and_the_previous_snapshot_serves(lab):
    poll(lambda: lab.dataset("narrowing")["state"] == "ready", "the narrowing dataset to load")
    before = lab.call("narrowing_rows", CATALOG)
    assert before.status == 200 and before.json()["meta"]["snapshot_id"] == "n1"
    (lab.project / "data" / "narrowing" / "manifest.json").write_text(
        manifest("narrowing", "n2", [("id", "BIGINT"), ("value", "INTEGER")], [("n2.parquet", "parquet")])
    )
    refreshed = lab.admin("POST", "/refresh/narrowing")
    assert refreshed.status == 200, refreshed.body
    entry = lab.dataset("narrowing")
    assert entry["snapshot_id"] == "n1", entry
    assert "value" in (entry["last_error"] or ""), entry
    after = lab.call("narrowing_rows", CATALOG)
    assert after.status == 200 and after.json()["meta"]["snapshot_id"] == "n1"
    assert [row["value"] for row in after.json()["data"]] == [10, 20, 30]
    others_keep_serving(lab)


def test_a_new_snapshot_changes_the_etag_and_the_data_then_rolls_back(lab):
    products = lab.project / "data" / "products"
    first = lab.call("product_catalog", CATALOG, limit="5")
    assert first.status == 200
    table = pq.read_table(products / "products.parquet")
    doubled = table.set_column(3, "price", pa.compute.multiply(table.column("price"), 2))
    pq.write_table(doubled, products / "products-2.parquet")
    body = json.loads((products / "manifest.json").read_text())
    body["snapshot_id"] = "2026-06-02T00:00:00Z_p0002"
    body["files"] = [{"path": "products-2.parquet", "format": "parquet"}]
    (products / "manifest.json").write_text(json.dumps(body))
    assert lab.admin("POST", "/refresh/products").status == 200
    second = lab.call("product_catalog", CATALOG, limit="5")
    assert second.header("x-snapshot-id") == "2026-06-02T00:00:00Z_p0002"
    assert second.header("etag") != first.header("etag")
    assert [row["price"] for row in second.json()["data"]] == pytest.approx(
        [row["price"] * 2 for row in first.json()["data"]]
    )
    stale_tag = lab.call("product_catalog", CATALOG, headers={"If-None-Match": first.header("etag")}, limit="5")
    assert stale_tag.status == 200, "a tag of the previous snapshot does not revalidate"
    assert lab.admin("POST", "/rollback/products").status == 200
    rolled = lab.call("product_catalog", CATALOG, limit="5")
    assert rolled.header("x-snapshot-id") == first.header("x-snapshot-id")
    assert without_request_facts(rolled.body) == without_request_facts(first.body)
    others_keep_serving(lab)


def test_bad_enum_and_forbidden_tenant_are_422(lab):
    bad_enum = lab.call("customer_usage_daily", ACME, account_id="acc_anvil", product_area="mobile", **MAY)
    assert bad_enum.status == 422 and bad_enum.json()["error"]["family"] == "invalid_param"
    forbidden_tenant = lab.call("customer_usage_summary", GLOBEX, tenant_id="tenant_acme", **MAY)
    assert forbidden_tenant.status == 422
    others_keep_serving(lab)


def test_forbidden_endpoint_and_revoked_key(lab):
    forbidden = lab.call("customer_usage_daily", GLOBEX, account_id="acc_hammock", **MAY)
    missing = lab.call("customer_usage_nightly", GLOBEX)
    assert forbidden.status == missing.status == 404
    assert without_request_id(forbidden.body) == without_request_id(missing.body)
    revoked = lab.call("customer_usage_summary", REVOKED, **MAY)
    assert revoked.status == 401 and revoked.json()["error"]["family"] == "unauthorized"
    others_keep_serving(lab)


def test_a_request_over_its_timeout_is_504_and_the_gateway_keeps_serving(tmp_path):
    project = copy_example(tmp_path)
    settings = (project / "offloader.yml").read_text()
    (project / "offloader.yml").write_text(settings.replace("request_timeout_ms: 30000", "request_timeout_ms: 1"))
    bulk = add_dataset(
        project, "bulk", SLOW_SCHEMA, manifest("bulk", "b1", SLOW_SCHEMA, [("bulk.csv", "csv")]), extra=""
    )
    with duckdb.connect() as db:
        db.execute("SET enable_progress_bar = false")
        db.execute(
            "COPY (SELECT range AS id, hash(range) % 1000003 / 7.0 AS score, 'l' || (range % 1000) AS label "
            f"FROM range(300000)) TO '{bulk / 'bulk.csv'}' (HEADER)"
        )
    # Every request re-reads and sorts the CSV: far over a millisecond.
    endpoint = endpoint_yaml("bulk_scan", "bulk", ["id", "score"], "score").replace(
        "serving_mode: local_table", "serving_mode: remote_scan"
    )
    (project / "endpoints" / "bulk_scan.yml").write_text(endpoint.replace("policy: snapshot", "policy: none"))
    keys = project / "keys" / "keys.yml"
    keys.write_text(keys.read_text().replace("endpoints: [product_catalog]", "endpoints: [product_catalog, bulk_scan]"))
    with Gateway.start(project) as gateway:
        for _ in range(3):
            reply = gateway.call("bulk_scan", CATALOG)
            assert reply.status == 504, reply.body
            assert reply.json()["error"]["family"] == "timeout"
        status = gateway.status()
        assert status["ready"] is True and gateway.dataset("bulk")["state"] == "ready"
        assert Path(f"/proc/{status['server']['pid']}").exists(), "the server outlives cancelled statements"
        metrics = gateway.admin("GET", "/metrics").body.decode()
        assert 'quiver_gateway_requests_total{endpoint="bulk_scan",status_class="5xx"} 3' in metrics


def test_callers_that_hang_up_mid_query_never_fail_another_callers_query(tmp_path):
    """A hung-up caller's statement is cancelled on the server, and only its own: the cancel
    cannot reach the next statement its pooled connection runs for somebody else.
    """
    project = copy_example(tmp_path)
    with Gateway.start(project) as gateway:
        port = urllib.parse.urlsplit(gateway.http_url).port
        # open_invoices reads its parquet parts on every request (remote_scan, never cached).
        raw = (
            f"GET /v1/endpoints/open_invoices?min_amount={{}} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {ACME}\r\n\r\n"
        )
        stop = threading.Event()
        hung_up = [0]

        def hang_up() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                with socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS) as conn:
                    conn.sendall(raw.format(n % 97).encode())
                    time.sleep((n % 4) / 1000)
                hung_up[0] += 1

        def ask(rounds: int) -> list[int]:
            return [gateway.call("open_invoices", ACME, min_amount=str(n % 89)).status for n in range(rounds)]

        hangers = [threading.Thread(target=hang_up) for _ in range(3)]
        for thread in hangers:
            thread.start()
        try:
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                statuses = [s for batch in pool.map(ask, [150] * 3) for s in batch]
        finally:
            stop.set()
            for thread in hangers:
                thread.join(WAIT_SECONDS)
        assert hung_up[0] > 100, "the callers hung up mid-query"
        assert statuses == [200] * len(statuses), sorted(set(statuses))
