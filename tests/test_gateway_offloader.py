"""quiver gateway as an offloader client sees it: the real binary over projects in the shape of
offloader's examples (the keyed example project, and a public one with a nested column built
here), asserting what offloader's clients read — `meta`'s fields, params, headers, CORS, the
health and admin routes.
"""

from __future__ import annotations

import datetime
import functools
import gzip
import http.server
import json
import re
import ssl
import subprocess
import threading
import zlib
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gateway_support import (
    ACME,
    CATALOG,
    GLOBEX,
    Gateway,
    Response,
    copy_example,
    gateway_binary,
    moto_server,
    poll,
    request,
    upload,
)

RANGE = {"from": "2026-05-30", "to": "2026-06-01"}
WATERMARK = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)
GENERATED_AT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
META_KEYS = {
    "request_id",
    "endpoint",
    "version",
    "snapshot_id",
    "generated_at",
    "row_count",
    "serving_mode",
    "cache",
    "freshness",
}


def keyed_project(root: Path) -> Path:
    """The example project, its summary endpoint bounded to 120 minutes' staleness (as offloader's
    customer_usage_summary is).
    """
    project = copy_example(root)
    summary = project / "endpoints" / "customer_usage_summary.yml"
    summary.write_text(
        summary.read_text()
        + "freshness:\n  max_staleness_minutes: 120\n"
        + "combinations:\n  - [from, to]\n  - [account_id, from, to]\n"
    )
    return project


CHAMPION_SCHEMA = pa.schema(
    [
        ("champion_id", pa.string()),
        ("patch", pa.string()),
        (
            "data",
            pa.struct(
                [
                    ("num_games", pa.int64()),
                    ("win_rate", pa.float64()),
                    ("tier", pa.int32()),
                    ("by_lane", pa.map_(pa.string(), pa.float64())),
                ]
            ),
        ),
    ]
)
CHAMPIONS = [
    {
        "champion_id": "1",
        "patch": "16.13",
        "data": {"num_games": 136068, "win_rate": 0.497, "tier": 3, "by_lane": [("mid", 0.51), ("top", 0.47)]},
    },
    {
        "champion_id": "11",
        "patch": "16.13",
        "data": {"num_games": 98213, "win_rate": 0.523, "tier": 1, "by_lane": [("jungle", 0.53)]},
    },
    {
        "champion_id": "22",
        "patch": "16.12",
        "data": {"num_games": 41234, "win_rate": 0.488, "tier": 4, "by_lane": [("bot", 0.49)]},
    },
]
CHAMPION_ENDPOINT = """name: champion
version: 1
owner: stats
dataset: champion_stats
params:
  - { name: champion_id, type: string, required: true }
query:
  select:
    - { as: champion_id, column: champion_id }
    - { as: patch, column: patch }
    - { as: data, column: data }
  filters:
    - { column: champion_id, op: eq, param: champion_id }
  order_by:
    - { column: champion_id, dir: asc }
columns: [champion_id, patch, data]
pagination: { default_limit: 50, max_limit: 100 }
cache: { policy: snapshot }
"""
# offloader has no `sort`, `cursor` or `format` params: a project may name its own so.
BY_PATCH_ENDPOINT = """name: champions_by_patch
version: 2
owner: stats
dataset: champion_stats
params:
  - { name: format, type: string, required: false }
  - { name: cursor, type: string, required: false }
  - { name: sort, type: enum, required: false, enum: [tier] }
query:
  select:
    - { as: champion_id, column: champion_id }
    - { as: patch, column: patch }
  filters:
    - { column: patch, op: eq, param: format }
    - { column: champion_id, op: gte, param: cursor }
  order_by:
    - { column: champion_id, dir: asc }
columns: [champion_id, patch]
freshness: { max_staleness_minutes: 5 }
cache: { policy: snapshot }
"""


def public_project(root: Path, gateway_settings: str = "") -> Path:
    """A project in the shape of offloader's public-metrics example.

    `auth: none`, one parquet part with a nested column (a struct holding a map).
    """
    project = root / "public"
    data = project / "data" / "champion_stats"
    data.mkdir(parents=True)
    (project / "datasets").mkdir()
    (project / "endpoints").mkdir()
    pq.write_table(pa.Table.from_pylist(CHAMPIONS, schema=CHAMPION_SCHEMA), data / "champion_stats.parquet")
    manifest = {
        "dataset_id": "champion_stats",
        "snapshot_id": "2026-07-01T00:00:00Z_r0001",
        "created_at": "2026-07-01T00:00:00Z",
        "watermark": "2026-07-01T00:00:00Z",
        "schema": [
            {"name": "champion_id", "type": "VARCHAR"},
            {"name": "patch", "type": "VARCHAR"},
            {"name": "data", "type": "JSON"},
        ],
        "files": [{"path": "champion_stats.parquet", "format": "parquet"}],
        "partition_columns": [],
        "sort_columns": ["champion_id"],
        "row_count": 3,
        "size_bytes": (data / "champion_stats.parquet").stat().st_size,
        "producer": "tests",
        "upstream_run_id": "run-1",
        "schema_version": 1,
        "data_quality_status": "passed",
        "compatibility_policy": "additive_only",
    }
    (data / "manifest.json").write_text(json.dumps(manifest))
    (project / "datasets" / "champion_stats.yml").write_text(
        "id: champion_stats\nmanifest: data/champion_stats/manifest.json\nschema:\n"
        "  - { name: champion_id, type: VARCHAR }\n  - { name: patch, type: VARCHAR }\n"
        "  - { name: data, type: JSON }\n"
    )
    (project / "endpoints" / "champion.yml").write_text(CHAMPION_ENDPOINT)
    (project / "endpoints" / "champions_by_patch.yml").write_text(BY_PATCH_ENDPOINT)
    (project / "offloader.yml").write_text(
        "version: 1\nauth: none\ndatasets_dir: datasets\nendpoints_dir: endpoints\n" + gateway_settings
    )
    return project


@pytest.fixture(scope="module")
def public(tmp_path_factory):
    with Gateway.start(public_project(tmp_path_factory.mktemp("public"))) as running:
        yield running


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    with Gateway.start(keyed_project(tmp_path_factory.mktemp("keyed"))) as running:
        yield running


def age_now() -> int:
    return int((datetime.datetime.now(datetime.UTC) - WATERMARK).total_seconds())


def test_meta_has_every_field_offloader_writes(keyed):
    reply = keyed.call("customer_usage_summary", ACME, account_id="acc_anvil", **RANGE)
    assert reply.status == 200, reply.body
    meta = reply.json()["meta"]
    assert set(meta) == META_KEYS
    assert meta["request_id"] == reply.header("x-request-id")
    assert GENERATED_AT.match(meta["generated_at"]), meta["generated_at"]
    assert meta["cache"] == "miss"
    freshness = meta["freshness"]
    assert set(freshness) == {"watermark", "age_seconds", "max_staleness_minutes", "stale"}
    assert freshness["watermark"] == "2026-06-01T00:00:00Z"
    assert freshness["max_staleness_minutes"] == 120
    assert abs(freshness["age_seconds"] - age_now()) < 600
    assert freshness["stale"] is (freshness["age_seconds"] > 120 * 60)


def test_a_cache_hit_has_its_own_request_id_time_and_cache_state(keyed):
    params = {"account_id": "acc_rocket", **RANGE}
    first = keyed.call("customer_usage_summary", ACME, **params).json()
    second = keyed.call("customer_usage_summary", ACME, **params).json()
    assert (first["meta"]["cache"], second["meta"]["cache"]) == ("miss", "hit")
    assert first["data"] == second["data"]
    assert first["meta"]["request_id"] != second["meta"]["request_id"]
    assert first["meta"]["generated_at"] <= second["meta"]["generated_at"]
    uncached = keyed.call("open_invoices", ACME).json()["meta"]
    assert uncached["cache"] == "off"
    assert uncached["freshness"]["max_staleness_minutes"] is None and uncached["freshness"]["stale"] is False


def test_a_compressed_cache_hit_carries_its_own_meta(keyed):
    """A gzip body is one member whose tail (this request's meta) follows the cached rows."""
    params = {"account_id": "acc_magnet", "from": "2026-05-01", "to": "2026-06-01"}
    path_headers = {"Accept-Encoding": "gzip"}
    bodies = []
    for _ in range(2):
        reply = keyed.call("customer_usage_daily", ACME, headers=path_headers, **params)
        assert reply.status == 200, reply.body
        assert reply.header("content-encoding") == "gzip"
        member = zlib.decompressobj(wbits=31)
        text = member.decompress(reply.body)
        assert member.eof and member.unused_data == b"", "a single gzip member"
        assert text == gzip.decompress(reply.body)
        body = json.loads(text)
        assert body["meta"]["request_id"] == reply.header("x-request-id")
        bodies.append(body)
    assert [body["meta"]["cache"] for body in bodies] == ["miss", "hit"]
    assert bodies[0]["data"] == bodies[1]["data"] and len(bodies[0]["data"]) > 20
    plain = keyed.call("customer_usage_daily", ACME, **params).json()
    assert plain["data"] == bodies[0]["data"] and plain["meta"]["cache"] == "hit"
    other_tenant = keyed.call("customer_usage_summary", GLOBEX, **RANGE).json()
    assert other_tenant["meta"]["request_id"] != plain["meta"]["request_id"]


def message(reply) -> str:
    assert reply.status == 422, (reply.status, reply.body)
    body = reply.json()
    assert body["error"]["family"] == "invalid_param"
    return body["error"]["message"]


def test_a_repeated_param_takes_its_last_value(keyed):
    path = "/v1/endpoints/customer_usage_summary?from=nonsense&to=2026-06-01&from=2026-05-30"
    twice = keyed.get(path, ACME)
    assert twice.status == 200, twice.body
    once = keyed.call("customer_usage_summary", ACME, **RANGE)
    assert twice.json()["data"] == once.json()["data"]


def test_refusing_repeated_params_is_a_project_setting(tmp_path):
    project = copy_example(tmp_path)
    settings = project / "offloader.yml"
    settings.write_text(settings.read_text() + "  repeated_params: refuse\n")
    with Gateway.start(project) as strict:
        path = "/v1/endpoints/customer_usage_summary?from=2026-05-30&to=2026-06-01&from=2026-05-30"
        assert "more than once" in message(strict.get(path, ACME))
        assert strict.call("customer_usage_summary", ACME, **RANGE).status == 200


def test_errors_never_list_allowed_values_columns_or_combinations(keyed):
    daily = {"account_id": "acc_anvil", **RANGE}
    enum = message(keyed.call("customer_usage_daily", ACME, product_area="billing", **daily))
    assert enum == 'param "product_area" is not an allowed value'
    column = message(keyed.call("customer_usage_summary", ACME, columns="plan", **RANGE))
    assert column == 'unknown column "plan"'
    odd_column = message(keyed.call("customer_usage_summary", ACME, columns="account_id,no such", **RANGE))
    assert odd_column == "unknown column"
    empty_piece = message(keyed.call("customer_usage_summary", ACME, columns="account_id,", **RANGE))
    assert empty_piece == "columns must be a comma-separated list of columns"
    combination = message(keyed.call("customer_usage_summary", ACME, account_id="acc_anvil", to="2026-06-01"))
    assert combination == "params do not match an allowed combination"
    unknown = message(keyed.call("customer_usage_summary", ACME, tenant_id="tenant_globex", **RANGE))
    assert unknown == 'unknown param "tenant_id"'
    missing = message(keyed.call("customer_usage_daily", ACME, account_id="acc_anvil", **{"from": "2026-05-30"}))
    assert missing == 'missing required param "to"'
    for text in (enum, column, combination):
        for revealed in ("dashboards", "exports", "account_id", "api_calls_total", "[from"):
            assert revealed not in text
    assert message(keyed.call("customer_usage_summary", ACME, limit="101", **RANGE)) == "limit exceeds max of 100"
    assert message(keyed.call("customer_usage_summary", ACME, limit="0", **RANGE)) == "limit must be a positive integer"
    assert message(keyed.call("customer_usage_summary", ACME, offset="-1", **RANGE)) == (
        "offset must be a non-negative integer"
    )


def test_columns_are_trimmed_and_kept_in_the_endpoints_order(keyed):
    reply = keyed.call("customer_usage_summary", ACME, columns="storage_gb_avg, account_id", **RANGE)
    assert reply.status == 200, reply.body
    rows = reply.json()["data"]
    assert rows and all(list(row) == ["account_id", "storage_gb_avg"] for row in rows)
    deep = keyed.call("customer_usage_summary", ACME, offset="5000000", **RANGE)
    assert deep.status == 200 and deep.json()["data"] == []


def test_params_named_sort_cursor_and_format_are_the_endpoints_own(public):
    reply = public.call("champions_by_patch", format="16.13", cursor="11", sort="tier")
    assert reply.status == 200, reply.body
    assert reply.header("content-type").startswith("application/json")
    assert reply.json()["data"] == [{"champion_id": "11", "patch": "16.13"}]
    assert message(public.call("champions_by_patch", sort="name")) == 'param "sort" is not an allowed value'
    # Without a pagination block: offloader's 50 by default, at most 100.
    assert message(public.call("champions_by_patch", limit="101")) == "limit exceeds max of 100"
    by_patch = next(e for e in public.admin("GET", "/schema").json()["endpoints"] if e["name"] == "champions_by_patch")
    assert by_patch["pagination"] == {"default_limit": 50, "max_limit": 100}
    # quiver's format choice is still there through Accept.
    as_csv = public.call("champions_by_patch", headers={"Accept": "text/csv"}, format="16.12")
    assert as_csv.status == 200 and as_csv.body.decode().splitlines() == ["champion_id,patch", "22,16.12"]
    # On an endpoint that declares none of them they stay quiver's.
    assert public.call("champion", champion_id="1", format="csv").header("content-type").startswith("text/csv")


def test_not_ready_does_not_name_the_dataset(tmp_path):
    project = copy_example(tmp_path)
    (project / "data" / "products" / "manifest.json").write_text("{ not json")
    with Gateway.start(project, wait_ready=False) as gateway:
        poll(lambda: gateway.dataset("products")["state"] == "failed", "the products dataset to fail")
        reply = gateway.call("product_catalog", CATALOG)
        assert reply.status == 503, reply.body
        assert reply.json()["error"] == {"family": "not_ready", "message": "snapshot is not ready"}
        assert b"products" not in reply.body
        # Not every dataset serves: /ready says so, as offloader's does; /healthz does not care.
        ready = gateway.admin("GET", "/ready")
        assert ready.status == 503 and ready.json()["status"] == "ok" and ready.json()["ready"] is False
        assert gateway.get("/healthz").status == 200


REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{20}$")
STRONG_ETAG = re.compile(r'^"[0-9a-f]{20}"$')


def test_keyed_responses_are_no_store_without_an_etag(keyed):
    reply = keyed.call("customer_usage_summary", ACME, **RANGE)
    assert reply.status == 200, reply.body
    assert reply.header("cache-control") == "private, no-store"
    assert reply.header("etag") is None
    assert reply.header("content-type") == "application/json; charset=utf-8"
    assert reply.header("x-content-type-options") == "nosniff"
    assert REQUEST_ID.match(reply.header("x-request-id"))
    # Nothing to revalidate: any If-None-Match gets the body.
    again = keyed.call("customer_usage_summary", ACME, headers={"If-None-Match": "*"}, **RANGE)
    assert again.status == 200 and again.json()["data"] == reply.json()["data"]
    error = keyed.call("customer_usage_summary", None, **RANGE)
    assert error.status == 401
    assert error.header("cache-control") == "max-age=0, private, must-revalidate"
    assert error.header("content-type") == "application/json; charset=utf-8"
    assert error.header("x-content-type-options") == "nosniff"


def test_public_responses_are_cacheable_with_a_strong_etag(public):
    reply = public.call("champion", champion_id="1")
    assert reply.status == 200, reply.body
    assert reply.json()["data"] == [
        {
            "champion_id": "1",
            "patch": "16.13",
            "data": {"num_games": 136068, "win_rate": 0.497, "tier": 3, "by_lane": {"mid": 0.51, "top": 0.47}},
        }
    ]
    etag = reply.header("etag")
    assert STRONG_ETAG.match(etag), etag
    assert reply.header("cache-control") == "public, max-age=60, stale-while-revalidate=60"
    assert reply.header("vary") == "Accept, Accept-Encoding"
    bounded = public.call("champions_by_patch")
    assert bounded.header("cache-control") == "public, max-age=300, stale-while-revalidate=60"
    for matching in (etag, f'"x", {etag}', f"W/{etag}", "*"):
        revalidated = public.call("champion", headers={"If-None-Match": matching}, champion_id="1")
        assert revalidated.status == 304, matching
        assert revalidated.body == b""
        assert revalidated.header("etag") == etag
        assert revalidated.header("cache-control") == reply.header("cache-control")
        assert revalidated.header("x-content-type-options") == "nosniff"
        assert REQUEST_ID.match(revalidated.header("x-request-id"))
    embedded = public.call("champion", headers={"If-None-Match": f"junk{etag}junk"}, champion_id="1")
    assert embedded.status == 200
    other = public.call("champion", champion_id="11")
    assert STRONG_ETAG.match(other.header("etag")) and other.header("etag") != etag
    stray_key = public.call("champion", "whatever", champion_id="1")
    assert stray_key.status == 200 and stray_key.header("etag") == etag
    only_data = public.call("champion", champion_id="1", columns="data").json()["data"]
    assert [list(row) for row in only_data] == [["data"]]
    assert public.call("champion", champion_id="does_not_exist").json()["data"] == []


def test_without_cors_there_are_no_cors_headers(public):
    reply = public.call("champion", headers={"Origin": "https://app.example"}, champion_id="1")
    assert not any(name.startswith("access-control-") for name in reply.headers)
    preflight = request_method(public, "OPTIONS", "/v1/endpoints/champion", {"Origin": "https://app.example"})
    assert preflight.status != 204
    assert not any(name.startswith("access-control-") for name in preflight.headers)


def request_method(gateway: Gateway, method: str, path: str, headers: dict[str, str]) -> Response:
    return request(gateway.http_url, method, path, headers)


def assert_preflight(reply, allowed: bool) -> None:
    assert reply.status == 204 and reply.body == b""
    expected = {
        "access-control-allow-methods": "GET, OPTIONS",
        "access-control-allow-headers": "authorization, content-type, if-none-match",
        "access-control-max-age": "600",
    }
    for name, value in expected.items():
        assert reply.header(name) == (value if allowed else None), (name, reply.headers)


def test_cors_for_any_origin(tmp_path):
    with Gateway.start(public_project(tmp_path), "--cors-origins", "*") as gateway:
        for headers in ({}, {"Origin": "https://app.example"}):
            reply = gateway.call("champion", headers=headers, champion_id="1")
            assert reply.header("access-control-allow-origin") == "*"
            assert reply.header("access-control-allow-credentials") is None
            assert "origin" not in reply.header("vary").lower()
        missing = gateway.call("nope", headers={"Origin": "https://app.example"})
        assert missing.status == 404 and missing.header("access-control-allow-origin") == "*"
        # A preflight is answered before routing and auth, on any path.
        for path in ("/v1/endpoints/champion", "/anything/else"):
            preflight = request_method(gateway, "OPTIONS", path, {"Origin": "https://app.example"})
            assert_preflight(preflight, allowed=True)
            assert preflight.header("access-control-allow-origin") == "*"


def test_cors_for_listed_origins_from_the_project(tmp_path):
    settings = "gateway:\n  cors_origins: [https://app.example, https://admin.example]\n"
    with Gateway.start(public_project(tmp_path, settings)) as gateway:
        listed = gateway.call("champion", headers={"Origin": "https://app.example"}, champion_id="1")
        assert listed.header("access-control-allow-origin") == "https://app.example"
        assert listed.header("access-control-allow-credentials") == "true"
        assert "origin" in listed.header("vary").lower()
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "https://APP.example"}, {}):
            other = gateway.call("champion", headers=headers, champion_id="1")
            assert other.header("access-control-allow-origin") is None
            assert other.header("access-control-allow-credentials") is None
            assert "origin" in other.header("vary").lower(), "every response varies by origin"
        error = gateway.call("champion", headers={"Origin": "https://admin.example"})
        assert error.status == 422 and error.header("access-control-allow-origin") == "https://admin.example"
        allowed = request_method(gateway, "OPTIONS", "/v1/endpoints/champion", {"Origin": "https://app.example"})
        assert_preflight(allowed, allowed=True)
        assert allowed.header("access-control-allow-origin") == "https://app.example"
        refused = request_method(gateway, "OPTIONS", "/v1/endpoints/champion", {"Origin": "https://evil.example"})
        assert_preflight(refused, allowed=False)
        assert refused.header("access-control-allow-origin") is None


def test_cors_from_offloaders_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLOADER_CORS_ORIGINS", " https://env.example , ")
    with Gateway.start(public_project(tmp_path)) as gateway:
        reply = gateway.call("champion", headers={"Origin": "https://env.example"}, champion_id="1")
        assert reply.header("access-control-allow-origin") == "https://env.example"


def test_healthz_on_the_public_port_only(keyed):
    reply = keyed.get("/healthz")
    assert reply.status == 200 and reply.json() == {"status": "ok"}
    assert reply.header("content-type") == "application/json; charset=utf-8"
    assert reply.header("x-content-type-options") == "nosniff"
    assert keyed.get("/healthz", accept="text/csv").status == 406
    for path in ("/live", "/ready", "/status", "/metrics", "/diagnostics", "/docs", "/openapi.json", "/schema"):
        assert keyed.get(path).status == 404, path
    assert keyed.admin("GET", "/healthz").status == 404


def test_admin_probes_have_offloaders_bodies(keyed):
    live = keyed.admin("GET", "/live")
    assert live.status == 200 and live.json() == {"status": "ok"}
    assert live.header("content-type") == "application/json; charset=utf-8"
    assert live.header("x-content-type-options") == "nosniff" and REQUEST_ID.match(live.header("x-request-id"))
    ready = keyed.admin("GET", "/ready").json()
    assert ready["status"] == "ok" and ready["ready"] is True
    status = keyed.admin("GET", "/status").json()
    assert status["status"] == "ok" and status["ready"] is True
    assert status["service"] and re.fullmatch(r"\d+\.\d+\.\d+.*", status["version"])


def test_docs_and_schema_describe_every_endpoint(keyed, public):
    docs = keyed.admin("GET", "/docs").json()
    names = [endpoint["name"] for endpoint in docs["endpoints"]]
    assert names == sorted(names) and "customer_usage_summary" in names
    assert docs["auth"]["mode"] == "required"
    summary = next(endpoint for endpoint in docs["endpoints"] if endpoint["name"] == "customer_usage_summary")
    assert summary["method"] == "GET" and summary["path"] == "/v1/endpoints/customer_usage_summary"
    assert [param["name"] for param in summary["params"]][-3:] == ["limit", "offset", "columns"]
    assert summary["pagination"] == {"default_limit": 50, "max_limit": 100}
    assert summary["freshness_minutes"] == 120 and summary["auth"]["tenant"] is True
    assert {error["family"] for error in summary["errors"]} >= {"invalid_param", "unauthorized", "not_found"}
    assert set(summary["snippets"]) == {"curl", "typescript", "python"}
    schema = public.admin("GET", "/schema").json()
    assert schema["count"] == len(schema["endpoints"]) == 2
    champion = schema["endpoints"][0]
    assert champion["name"] == "champion" and champion["public"] is True and champion["tenant_scoped"] is False
    assert champion["params"] == [
        {"name": "champion_id", "type": "string", "required": True, "enum": None, "default": None, "aliases": {}}
    ]
    assert champion["filters"] == [{"column": "champion_id", "op": "eq", "param": "champion_id"}]
    assert {column["name"]: column["nested"] for column in champion["response_columns"]} == {
        "champion_id": False,
        "patch": False,
        "data": True,
    }


def test_diagnostics_fails_closed_without_a_token(keyed):
    reply = keyed.admin("GET", "/diagnostics")
    assert reply.status == 503
    assert reply.json()["error"] == {
        "family": "not_ready",
        "message": "admin token not configured (set OFFLOADER_ADMIN_TOKEN)",
    }


def test_diagnostics_with_offloaders_admin_token(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLOADER_ADMIN_TOKEN", "diagnostics-secret")
    with Gateway.start(copy_example(tmp_path)) as gateway:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "diagnostics-secret"}):
            refused = request(gateway.admin_url, "GET", "/diagnostics", headers)
            assert refused.status == 401, headers
            assert refused.json()["error"] == {"family": "unauthorized", "message": "invalid admin token"}
        reply = request(gateway.admin_url, "GET", "/diagnostics", {"Authorization": "Bearer diagnostics-secret"})
        assert reply.status == 200, reply.body
        document = reply.json()
        assert document["ready"] is True and document["config_sync"] == {"enabled": False}
        usage = next(entry for entry in document["datasets"] if entry["dataset"] == "customer_usage")
        assert usage["active_snapshot"]["snapshot_id"] == "2026-06-01T00:00:00Z_r0001"
        assert usage["active_snapshot"]["watermark"] == "2026-06-01T00:00:00Z"
        assert usage["last_attempted"]["status"] == "ok" and usage["refresh_error"] is None
        keys = (gateway.project / "keys" / "keys.yml").read_text()
        hashes = re.findall(r'hash: "([0-9a-f]{64})"', keys)
        assert hashes and not any(digest in reply.body.decode() for digest in hashes)
        assert b"diagnostics-secret" not in reply.body
        # The descriptions and probes stay open, as offloader's are.
        for path in ("/docs", "/schema", "/openapi.json", "/metrics", "/live", "/ready"):
            assert gateway.admin("GET", path).status == 200, path


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """Serves a directory, remembering each request's target instead of logging it."""

    targets: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.targets.append(self.path)
        super().do_GET()

    def do_HEAD(self) -> None:
        self.targets.append("HEAD " + self.path)
        super().do_HEAD()

    def log_message(self, format: str, *args: object) -> None:
        pass


def point_part_at(project: Path, path: str, extra_dataset_yaml: str = "") -> None:
    """Names the champion dataset's one part by `path` (a URL) in its manifest."""
    manifest_path = project / "data" / "champion_stats" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][0]["path"] = path
    manifest_path.write_text(json.dumps(manifest))
    (project / "data" / "champion_stats" / "champion_stats.parquet").unlink()
    dataset = project / "datasets" / "champion_stats.yml"
    dataset.write_text(dataset.read_text() + extra_dataset_yaml)


def test_a_part_named_by_an_http_url_is_downloaded(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    pq.write_table(pa.Table.from_pylist(CHAMPIONS, schema=CHAMPION_SCHEMA), served / "stats.parquet")
    handler = functools.partial(QuietFiles, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        project = public_project(tmp_path)
        url = f"http://127.0.0.1:{server.server_address[1]}/stats.parquet?X-Signature=abc%2Fdef"
        point_part_at(project, url)
        manifest = json.loads((project / "data" / "champion_stats" / "manifest.json").read_text())
        manifest["files"][0]["size_bytes"] = (served / "stats.parquet").stat().st_size
        (project / "data" / "champion_stats" / "manifest.json").write_text(json.dumps(manifest))
        with Gateway.start(project) as gateway:
            reply = gateway.call("champion", champion_id="11")
            assert reply.status == 200, reply.body
            assert reply.json()["data"][0]["data"]["by_lane"] == {"jungle": 0.53}
            downloaded = list((project / ".quiver-gateway" / "parts").rglob("part-*.parquet"))
            assert len(downloaded) == 1, "the part is kept in the state directory"
        assert "/stats.parquet?X-Signature=abc%2Fdef" in QuietFiles.targets, "the signed URL's query is kept"
    finally:
        server.shutdown()
        server.server_close()


def test_an_https_part_is_fetched_over_tls_and_an_untrusted_certificate_is_named(tmp_path):
    # A TLS server whose self-signed certificate no trust store holds: the gateway's HTTPS client (rustls
    # on ring, installed as the process's provider) must get as far as verifying it, refuse it by name,
    # and keep serving.
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    done = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(QuietFiles, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        project = public_project(tmp_path)
        url = f"https://127.0.0.1:{server.server_address[1]}/stats.parquet"
        point_part_at(project, url, "materialize_budget_seconds: 5\n")
        with Gateway.start(project, wait_ready=False) as gateway:
            entry = poll(
                lambda: (entry := gateway.dataset("champion_stats"))["state"] == "failed" and entry,
                "the https:// dataset to fail",
            )
            assert url in entry["last_error"], entry
            assert "certificate" in entry["last_error"].lower(), entry
            assert gateway.get("/healthz").status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_a_gs_part_that_cannot_be_reached_fails_its_dataset_clearly(tmp_path):
    project = public_project(tmp_path)
    point_part_at(project, "gs://quiver-no-such-bucket/stats/champion_stats.parquet", "materialize_budget_seconds: 3\n")
    with Gateway.start(project, wait_ready=False) as gateway:
        entry = poll(
            lambda: (entry := gateway.dataset("champion_stats"))["state"] == "failed" and entry,
            "the gs:// dataset to fail",
        )
        assert "gs://quiver-no-such-bucket/stats/champion_stats.parquet" in entry["last_error"], entry
        reply = gateway.call("champion", champion_id="1")
        assert reply.status == 503 and reply.json()["error"]["message"] == "snapshot is not ready"
        assert gateway.get("/healthz").status == 200


def test_unsupported_part_schemes_are_named_by_check(tmp_path):
    project = public_project(tmp_path)
    point_part_at(project, "az://container/champion_stats.parquet")
    checked = subprocess.run([str(gateway_binary()), "check", str(project)], capture_output=True, text=True, timeout=60)
    assert checked.returncode != 0
    assert "az:// parts are not supported" in checked.stdout + checked.stderr


@pytest.fixture
def moto(monkeypatch):
    """An S3-compatible server (moto) on a free port, and the environment that reaches it."""
    with moto_server(monkeypatch) as client:
        yield client


def test_a_project_in_a_bucket_is_downloaded_and_served(tmp_path, moto):
    moto.create_bucket(Bucket="projects")
    upload(moto, "projects", copy_example(tmp_path / "source"), "teams/analytics")
    # A sibling prefix is not part of the project, and a broken file there changes nothing.
    moto.put_object(Bucket="projects", Key="teams/analytics2/offloader.yml", Body=b"version: [broken")
    state = tmp_path / "state"
    (state / "config").mkdir(parents=True)
    (state / "config" / "leftover.yml").write_text("from an earlier run")
    with Gateway.start(state, "--state-dir", str(state), location="s3://projects/teams/analytics") as gateway:
        reply = gateway.call("customer_usage_summary", ACME, **RANGE)
        assert reply.status == 200, reply.body
        assert reply.json()["meta"]["snapshot_id"] == "2026-06-01T00:00:00Z_r0001"
    assert (state / "config" / "offloader.yml").is_file()
    assert not (state / "config" / "leftover.yml").exists(), "the download directory is emptied first"


def test_a_bucket_without_a_project_file_is_refused(tmp_path, moto):
    moto.create_bucket(Bucket="empty")
    moto.put_object(Bucket="empty", Key="p/data.csv", Body=b"a\n1\n")
    refused = subprocess.run(
        [str(gateway_binary()), "serve", "s3://empty/p", "--state-dir", str(tmp_path / "s"), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode != 0
    assert "s3://empty/p: no project file" in refused.stderr
    https = subprocess.run(
        [str(gateway_binary()), "serve", "https://example.com/p", "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert https.returncode != 0 and "https:// is not supported" in https.stderr


def test_refusals_use_offloaders_words(keyed):
    def refusal(reply, status: int) -> dict:
        assert reply.status == status, reply.body
        return reply.json()["error"]

    assert refusal(keyed.call("customer_usage_summary", None, **RANGE), 401) == {
        "family": "unauthorized",
        "message": "missing or malformed bearer token",
    }
    for token in ("offl_unknown_key", "qgw_demo_revoked_key"):
        assert refusal(keyed.call("customer_usage_summary", token, **RANGE), 401)["message"] == (
            "invalid or revoked API key"
        )
    missing = refusal(keyed.call("no_such_endpoint", ACME), 404)
    forbidden = refusal(keyed.call("customer_usage_daily", GLOBEX, account_id="acc_x", **RANGE), 404)
    assert missing == forbidden == {"family": "not_found", "message": "endpoint not found"}


def test_timestamps_are_written_as_offloader_writes_them(keyed):
    rows = keyed.call("open_invoices", ACME, unpaid="false").json()["data"]
    assert rows, "the example has paid invoices"
    for row in rows:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}", row["issued_at"]), row
