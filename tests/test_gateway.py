"""quiver gateway end to end: the real binary over the example project (examples/gateway), with
a real quiver server it spawns, over real HTTP — errors and their families, keys and tenants,
formats and encodings, the cache and ETags, cursor paging, the admin port.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

from gateway_support import (
    ACME,
    CATALOG,
    EXPIRED,
    GLOBEX,
    LIMITED,
    REVOKED,
    WAIT_SECONDS,
    Gateway,
    add_gateway_setting,
    copy_example,
    endpoint_path,
    gateway_binary,
    parse_metrics,
    poll,
    request,
    without_request_facts,
    without_request_id,
)

MAY = {"from": "2026-05-01", "to": "2026-05-31"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """The example project with quiver's keyed revalidation (ETags and 304s with keys) on."""
    project = copy_example(tmp_path_factory.mktemp("gateway"))
    add_gateway_setting(project, "keyed_revalidation: true")
    with Gateway.start(project) as running:
        yield running


def test_status_shows_each_dataset_ready(gateway):
    status = gateway.status()
    assert status["ready"] is True
    for dataset in ("customer_usage", "products", "invoices"):
        entry = gateway.dataset(dataset)
        assert entry["state"] == "ready", entry
        assert entry["snapshot_id"], entry
    assert gateway.admin("GET", "/live").status == 200
    ready = gateway.admin("GET", "/ready").json()
    assert ready == {
        "status": "ok",
        "ready": True,
        "datasets": {"customer_usage": "ready", "products": "ready", "invoices": "ready"},
        "keys": "ok",
    }


def test_json_envelope_and_per_request_headers(gateway):
    reply = gateway.call("customer_usage_summary", ACME, **MAY)
    assert reply.status == 200, reply.body
    body = reply.json()
    assert set(body) == {"data", "meta"}
    meta = body["meta"]
    assert meta["endpoint"] == "customer_usage_summary"
    assert meta["version"] == 1
    assert meta["snapshot_id"] == "2026-06-01T00:00:00Z_r0001"
    assert meta["serving_mode"] == "local_table"
    assert meta["row_count"] == len(body["data"]) == 3
    assert [row["account_id"] for row in body["data"]] and all(
        set(row) == {"account_id", "active_users_total", "api_calls_total", "storage_gb_avg"} for row in body["data"]
    )
    totals = [row["api_calls_total"] for row in body["data"]]
    assert totals == sorted(totals, reverse=True), "order_by api_calls_total desc"
    assert reply.header("content-type").startswith("application/json")
    assert reply.header("x-request-id")
    assert reply.header("x-snapshot-id") == meta["snapshot_id"]
    assert reply.header("x-stale") in ("true", "false")
    assert reply.header("x-freshness-age").isdigit()
    assert reply.header("cache-control") == "private, no-cache"
    assert reply.header("vary") == "Accept, Accept-Encoding, Authorization"
    assert reply.header("etag").startswith('W/"')
    assert "total;dur=" in reply.header("server-timing")


def test_unauthorized_for_missing_unknown_revoked_and_expired_keys(gateway):
    for token in (None, "not-a-key", REVOKED, EXPIRED):
        reply = gateway.call("customer_usage_summary", token, **MAY)
        assert reply.status == 401, (token, reply.body)
        body = reply.json()
        assert body["error"]["family"] == "unauthorized"
        assert body["meta"]["request_id"] == reply.header("x-request-id")
        assert reply.header("www-authenticate") == "Bearer"
    malformed = gateway.call("customer_usage_summary", headers={"Authorization": "Basic abc"}, **MAY)
    assert malformed.status == 401


def test_forbidden_endpoint_reads_exactly_like_a_missing_one(gateway):
    forbidden = gateway.call("customer_usage_daily", GLOBEX, account_id="acc_hammock", **MAY)
    missing = gateway.call("no_such_endpoint", GLOBEX)
    assert forbidden.status == missing.status == 404
    assert forbidden.json()["error"]["family"] == "not_found"
    assert without_request_id(forbidden.body) == without_request_id(missing.body)
    assert forbidden.json()["meta"]["request_id"] != missing.json()["meta"]["request_id"]
    # A non-tenant key on a tenant endpoint it does not list: the same.
    catalog_key = gateway.call("customer_usage_summary", CATALOG, **MAY)
    assert without_request_id(catalog_key.body) == without_request_id(missing.body)
    other_path = gateway.get("/v2/elsewhere", ACME)
    assert other_path.status == 404
    posted = request(gateway.http_url, "POST", "/v1/endpoints/product_catalog", {"Authorization": f"Bearer {CATALOG}"})
    assert posted.status == 405 and posted.json()["error"]["family"] == "method_not_allowed"
    assert posted.header("allow") == "GET, HEAD"


def test_tenant_is_bound_server_side(gateway):
    acme = gateway.call("customer_usage_summary", ACME, **MAY).json()["data"]
    globex = gateway.call("customer_usage_summary", GLOBEX, **MAY).json()["data"]
    assert {row["account_id"] for row in acme} == {"acc_anvil", "acc_rocket", "acc_magnet"}
    assert {row["account_id"] for row in globex} == {"acc_hammock", "acc_chipotle"}
    # Another tenant's account through a tenant key: nothing, not an error.
    crossing = gateway.call("customer_usage_summary", ACME, account_id="acc_hammock", **MAY)
    assert crossing.status == 200 and crossing.json()["data"] == []
    # The tenant is never a param.
    spoof = gateway.call("customer_usage_summary", ACME, tenant_id="tenant_globex", **MAY)
    assert spoof.status == 422, spoof.body
    assert spoof.json()["error"]["family"] == "invalid_param"
    assert "tenant_id" in spoof.json()["error"]["message"]


def test_invalid_params_name_the_param_and_never_echo_the_value(gateway):
    bad_enum = gateway.call("customer_usage_daily", ACME, account_id="acc_anvil", product_area="sneaky<value>", **MAY)
    assert bad_enum.status == 422
    message = bad_enum.json()["error"]["message"]
    assert "product_area" in message and "sneaky" not in message
    missing_required = gateway.call("customer_usage_summary", ACME, **{"from": "2026-05-01"})
    assert missing_required.status == 422 and "to" in missing_required.json()["error"]["message"]
    bad_date = gateway.call("customer_usage_summary", ACME, **{"from": "May 1st", "to": "2026-05-31"})
    assert bad_date.status == 422
    over_limit = gateway.call("customer_usage_summary", ACME, limit="100000", **MAY)
    assert over_limit.status == 422
    too_many = gateway.get("/v1/endpoints/customer_usage_summary?" + "&".join(f"p{i}=1" for i in range(65)), ACME)
    assert too_many.status == 422
    too_long = gateway.get("/v1/endpoints/customer_usage_summary?from=" + "x" * 9000, ACME)
    assert too_long.status == 414 and too_long.json()["error"]["family"] == "uri_too_long"
    not_acceptable = gateway.call("customer_usage_summary", ACME, headers={"Accept": "image/png"}, **MAY)
    assert not_acceptable.status == 406


def test_formats_carry_the_same_rows(gateway):
    params = {"account_id": "acc_rocket", "from": "2026-05-01", "to": "2026-05-10"}
    reference = gateway.call("customer_usage_daily", ACME, **params).json()["data"]
    assert len(reference) == 30
    keys = [(row["usage_date"], row["product_area"], row["api_calls"]) for row in reference]

    ndjson = gateway.call("customer_usage_daily", ACME, headers={"Accept": "application/x-ndjson"}, **params)
    assert ndjson.status == 200 and ndjson.header("content-type").startswith("application/x-ndjson")
    lines = [json.loads(line) for line in ndjson.body.decode().splitlines() if line.strip()]
    assert [(r["usage_date"], r["product_area"], r["api_calls"]) for r in lines] == keys

    as_csv = gateway.call("customer_usage_daily", ACME, headers={"Accept": "text/csv"}, **params)
    rows = list(csv.DictReader(io.StringIO(as_csv.body.decode())))
    assert [(r["usage_date"], r["product_area"], int(r["api_calls"])) for r in rows] == keys

    arrow = gateway.call(
        "customer_usage_daily", ACME, headers={"Accept": "application/vnd.apache.arrow.stream"}, **params
    )
    table = pa.ipc.open_stream(arrow.body).read_all()
    assert [
        (str(d), a, c)
        for d, a, c in zip(
            table.column("usage_date").to_pylist(),
            table.column("product_area").to_pylist(),
            table.column("api_calls").to_pylist(),
            strict=True,
        )
    ] == keys

    parquet = gateway.call("customer_usage_daily", ACME, format="parquet", **params)
    assert parquet.header("content-type") == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(parquet.body))
    assert table.num_rows == len(keys)
    assert table.column("api_calls").to_pylist() == [key[2] for key in keys]
    # Formats are distinct bodies: distinct tags.
    assert len({arrow.header("etag"), parquet.header("etag"), as_csv.header("etag")}) == 3


def test_compressed_encodings_decode_to_the_identity_body(gateway):
    params = {"account_id": "acc_magnet", **MAY}
    identity = gateway.call("customer_usage_daily", ACME, **params)
    assert identity.header("content-encoding") is None
    gzipped = gateway.call("customer_usage_daily", ACME, headers={"Accept-Encoding": "gzip"}, **params)
    assert gzipped.header("content-encoding") == "gzip"
    assert without_request_facts(gzip.decompress(gzipped.body)) == without_request_facts(identity.body)
    assert gzipped.header("etag") == identity.header("etag")
    for encoding, codec in (("zstd", "zstd"), ("br", "brotli")):
        if not pa.Codec.is_available(codec):
            continue
        reply = gateway.call("customer_usage_daily", ACME, headers={"Accept-Encoding": encoding}, **params)
        assert reply.header("content-encoding") == encoding
        # A stream reader: a zstd body is two frames (the cached rows', then this response's meta).
        decoded = pa.CompressedInputStream(pa.BufferReader(reply.body), codec).read()
        assert without_request_facts(decoded) == without_request_facts(identity.body)
    preferred = gateway.call(
        "customer_usage_daily", ACME, headers={"Accept-Encoding": "gzip;q=0.5, br;q=0.1, zstd;q=0"}, **params
    )
    assert preferred.header("content-encoding") == "gzip"


def test_cache_miss_then_hit_and_304_with_if_none_match(gateway):
    params = {"account_id": "acc_anvil", "from": "2026-05-03", "to": "2026-05-04"}
    first = gateway.call("customer_usage_daily", ACME, **params)
    second = gateway.call("customer_usage_daily", ACME, **params)
    assert first.header("x-cache") == "miss" and second.header("x-cache") == "hit"
    assert without_request_facts(first.body) == without_request_facts(second.body)
    assert first.header("etag") == second.header("etag")
    revalidated = gateway.call("customer_usage_daily", ACME, headers={"If-None-Match": first.header("etag")}, **params)
    assert revalidated.status == 304 and revalidated.body == b""
    assert revalidated.header("etag") == first.header("etag")
    assert revalidated.header("cache-control") == "private, no-cache"
    # Auth comes first: a tag does not open the door.
    unauthenticated = gateway.call(
        "customer_usage_daily", None, headers={"If-None-Match": first.header("etag")}, **params
    )
    assert unauthenticated.status == 401
    stale_tag = gateway.call("customer_usage_daily", ACME, headers={"If-None-Match": 'W/"other"'}, **params)
    assert stale_tag.status == 200
    # Another tenant's identical query is another body, with another tag.
    head = gateway.call("customer_usage_summary", GLOBEX, **MAY)
    assert head.header("etag") != gateway.call("customer_usage_summary", ACME, **MAY).header("etag")
    # An uncached endpoint says so.
    assert gateway.call("open_invoices", ACME).header("x-cache") == "off"


def test_head_answers_headers_only(gateway):
    reply = gateway.call("product_catalog", CATALOG)
    head = request(gateway.http_url, "HEAD", endpoint_path("product_catalog"), {"Authorization": f"Bearer {CATALOG}"})
    assert head.status == 200 and head.body == b""
    assert head.header("etag") == reply.header("etag")


def test_catalog_filters_in_between_prefix_and_sort(gateway):
    software = gateway.call("product_catalog", CATALOG, category="software,training", limit="100").json()["data"]
    assert software and {row["category"] for row in software} == {"software", "training"}
    ranged = gateway.call("product_catalog", CATALOG, price_range="100,500", limit="100").json()["data"]
    assert ranged and all(100 <= row["price"] <= 500 for row in ranged)
    prefixed = gateway.call("product_catalog", CATALOG, name_prefix="anvil").json()["data"]
    assert prefixed and all(row["name"].startswith("anvil") for row in prefixed)
    by_price = gateway.call("product_catalog", CATALOG, sort="-price", limit="100").json()["data"]
    prices = [row["price"] for row in by_price]
    assert prices == sorted(prices, reverse=True)
    assert gateway.call("product_catalog", CATALOG, sort="name").status == 422
    subset = gateway.call("product_catalog", CATALOG, columns="product_id,price").json()["data"]
    assert set(subset[0]) == {"product_id", "price"}
    invoices = gateway.call("open_invoices", ACME).json()["data"]
    assert invoices and all(row["paid_at"] is None for row in invoices)
    paid = gateway.call("open_invoices", ACME, unpaid="false").json()["data"]
    assert paid and all(row["paid_at"] is not None for row in paid)


def test_cursor_paging_walks_every_row_exactly_once(gateway):
    params = {"account_id": "acc_anvil", **MAY}
    everything = gateway.call("customer_usage_daily", ACME, limit="500", **params).json()
    assert everything["meta"].get("next_cursor") is None
    expected = [(row["usage_date"], row["product_area"]) for row in everything["data"]]
    assert len(expected) == 93
    seen: list[tuple[str, str]] = []
    cursor = None
    for _ in range(100):
        page_params = dict(params, limit="10")
        if cursor:
            page_params["cursor"] = cursor
        page = gateway.call("customer_usage_daily", ACME, **page_params)
        assert page.status == 200, page.body
        body = page.json()
        seen += [(row["usage_date"], row["product_area"]) for row in body["data"]]
        cursor = body["meta"].get("next_cursor")
        if not cursor:
            break
    assert seen == expected
    # Formats without an envelope carry the next page's cursor in a header.
    first_csv = gateway.call("customer_usage_daily", ACME, format="csv", limit="10", **params)
    assert first_csv.header("x-next-cursor")
    second_csv = gateway.call(
        "customer_usage_daily", ACME, format="csv", limit="10", cursor=first_csv.header("x-next-cursor"), **params
    )
    assert second_csv.body.decode().splitlines()[1].startswith(expected[10][0])
    tampered = gateway.call("customer_usage_daily", ACME, cursor="eyJ4IjoxfQ", **params)
    assert tampered.status == 422 and "cursor" in tampered.json()["error"]["message"]


def test_rate_limit_answers_429_then_recovers(gateway):
    refused = None
    for _ in range(50):
        reply = gateway.call("customer_usage_summary", LIMITED, **MAY)
        if reply.status == 429:
            refused = reply
            break
        assert reply.status == 200, reply.body
    assert refused is not None, "a key limited to 2/s is refused within 50 quick requests"
    assert refused.json()["error"]["family"] == "rate_limited"
    assert int(refused.header("retry-after")) >= 1
    poll(lambda: gateway.call("customer_usage_summary", LIMITED, **MAY).status == 200, "the bucket to refill")


def test_keys_file_edits_apply_without_restart(gateway):
    keys_file = gateway.project / "keys" / "keys.yml"
    original = keys_file.read_text()
    assert gateway.call("customer_usage_summary", GLOBEX, **MAY).status == 200
    revoked = original.replace(
        "    tenant: tenant_globex\n    endpoints: [customer_usage_summary, open_invoices]\n    status: active",
        "    tenant: tenant_globex\n    endpoints: [customer_usage_summary, open_invoices]\n    status: revoked",
    )
    assert revoked != original
    try:
        keys_file.write_text(revoked)
        poll(lambda: gateway.call("customer_usage_summary", GLOBEX, **MAY).status == 401, "the revocation")
        # A file that does not parse puts no key in force (fail closed), and says so.
        failed_before = gateway.status()["keys"]["reloads_failed"]
        keys_file.write_text("keys: [this is not: a key list\n")
        poll(lambda: gateway.status()["keys"]["reloads_failed"] > failed_before, "the failed reload")
        assert gateway.status()["keys"]["state"] == "degraded"
        assert gateway.call("customer_usage_summary", ACME, **MAY).status == 401
        assert gateway.call("customer_usage_summary", GLOBEX, **MAY).status == 401
    finally:
        keys_file.write_text(original)
    poll(lambda: gateway.call("customer_usage_summary", GLOBEX, **MAY).status == 200, "the key restored")


def test_metrics_parse_and_count_requests(gateway):
    for _ in range(3):
        gateway.call("product_catalog", CATALOG)
    gateway.call("no_such_endpoint", CATALOG)
    reply = gateway.admin("GET", "/metrics")
    assert reply.status == 200
    samples = parse_metrics(reply.body.decode())
    ok = samples['quiver_gateway_requests_total{endpoint="product_catalog",status_class="2xx"}']
    assert ok >= 3
    assert samples['quiver_gateway_requests_total{endpoint="_unknown",status_class="4xx"}'] >= 1
    assert samples["quiver_gateway_up"] == 1 and samples["quiver_gateway_ready"] == 1
    assert samples["quiver_gateway_cache_hits_total"] >= 1
    assert samples["quiver_gateway_cache_bytes"] > 0
    assert samples['quiver_gateway_snapshot_stale{dataset="products"}'] in (0, 1)
    assert any(name.startswith("quiver_gateway_request_duration_seconds_bucket") for name in samples)
    assert any(name.startswith("quiver_gateway_pool_wait_seconds_bucket") for name in samples)
    assert "quiver_gateway_load_shed_total" in samples


def test_openapi_lists_every_endpoint(gateway):
    reply = gateway.admin("GET", "/openapi.json")
    assert reply.status == 200
    document = reply.json()
    assert document["openapi"].startswith("3.")
    paths = document["paths"]
    for name in ("customer_usage_daily", "customer_usage_summary", "product_catalog", "open_invoices"):
        assert f"/v1/endpoints/{name}" in paths, sorted(paths)


def test_answers_match_the_openapi_document(gateway):
    # The published schemas are what a generated client trusts: an answer and an error validate,
    # and every field they carry is documented (the schemas leave extra fields open).
    from jsonschema import Draft202012Validator

    schemas = gateway.admin("GET", "/openapi.json").json()["components"]["schemas"]
    answer = gateway.call("product_catalog", CATALOG, limit="2")
    assert answer.status == 200, answer.body
    failed = gateway.call("product_catalog", CATALOG, limit="not-a-number")
    assert failed.status == 422, failed.body
    for body, name in ((answer.json()["meta"], "Meta"), (failed.json(), "Error")):
        schema = schemas[name]
        Draft202012Validator(schema).validate(body)
        assert set(body) <= set(schema["properties"]), (name, sorted(set(body) - set(schema["properties"])))
    documented = schemas["Meta"]["properties"]["freshness"]["properties"]
    assert set(answer.json()["meta"]["freshness"]) <= set(documented)


def test_request_logs_are_json_lines_with_request_ids(gateway):
    reply = gateway.call("product_catalog", CATALOG, headers={"X-Request-Id": "trace-abc-123-0123456789"})
    assert reply.header("x-request-id") == "trace-abc-123-0123456789"

    def logged():
        for line in gateway.logs().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            fields = record.get("fields", record)
            if fields.get("request_id") == "trace-abc-123-0123456789":
                return fields
        return None

    fields = poll(logged, "the request's log line")
    assert fields["status"] == 200 and fields["endpoint"] == "product_catalog"
    assert fields["key"] == "demo_catalog" and fields["method"] == "GET"
    assert CATALOG not in gateway.logs(), "tokens never reach the logs"


def test_public_project_revalidates_without_keys(tmp_path):
    project = copy_example(tmp_path)
    (project / "offloader.yml").write_text("version: 1\nauth: none\ndatasets_dir: datasets\nendpoints_dir: endpoints\n")
    for dataset in ("customer_usage", "invoices"):
        (project / "datasets" / f"{dataset}.yml").unlink()
    for endpoint in ("customer_usage_daily", "customer_usage_summary", "open_invoices"):
        (project / "endpoints" / f"{endpoint}.yml").unlink()
    with Gateway.start(project) as public:
        first = public.call("product_catalog")
        assert first.status == 200, first.body
        assert first.header("cache-control") == "public, max-age=60, stale-while-revalidate=60"
        assert re.fullmatch(r'"[0-9a-f]{20}"', first.header("etag"))
        again = public.call("product_catalog", headers={"If-None-Match": first.header("etag")})
        assert again.status == 304
        assert public.stop() == 0, "a stop by stdin's end exits cleanly"


def test_sigterm_stops_the_gateway_and_its_server(tmp_path):
    project = copy_example(tmp_path)
    running = Gateway.start(project, "--server-threads", "1", "--server-memory-limit", "1GB")
    server = running.status()["server"]
    assert server["spawned"] is True and server["pid"] > 0
    argv = Path(f"/proc/{server['pid']}/cmdline").read_bytes().split(b"\0")
    assert argv[argv.index(b"--threads") + 1] == b"1", argv
    assert argv[argv.index(b"--memory-limit") + 1] == b"1GB", argv
    os.kill(running.process.pid, signal.SIGTERM)
    assert running.process.wait(WAIT_SECONDS) == 0
    poll(lambda: not Path(f"/proc/{server['pid']}").exists(), "the spawned server to exit")


def test_a_non_loopback_admin_port_needs_a_token(tmp_path, monkeypatch):
    project = copy_example(tmp_path)
    refused = subprocess.run(
        [str(gateway_binary()), "serve", str(project), "--admin-listen", "0.0.0.0:0", "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode != 0 and "--admin-token-env" in refused.stderr
    # A server reached by address is not this gateway's to size.
    conflicting = subprocess.run(
        [str(gateway_binary()), "serve", str(project), "--server", "unix:///nowhere", "--server-threads", "1"],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert conflicting.returncode == 2 and "--server-threads" in conflicting.stderr
    monkeypatch.setenv("QGW_TEST_ADMIN_TOKEN", "admin-secret")
    with Gateway.start(project, "--admin-token-env", "QGW_TEST_ADMIN_TOKEN") as guarded:
        assert guarded.admin("GET", "/live").status == 200
        # As offloader's, /status is open, but quiver's details need the token.
        summary = guarded.admin("GET", "/status")
        assert summary.status == 200 and set(summary.json()) == {"status", "service", "version", "ready"}
        wrong = request(guarded.admin_url, "GET", "/status", {"Authorization": "Bearer wrong"})
        assert "datasets" not in wrong.json()
        reply = request(guarded.admin_url, "GET", "/status", {"Authorization": "Bearer admin-secret"})
        assert reply.status == 200 and reply.json()["ready"] is True and "datasets" in reply.json()
        assert guarded.admin("POST", "/refresh").status == 401


def test_a_restart_warm_starts_from_the_state_directory(tmp_path):
    project = copy_example(tmp_path)
    add_gateway_setting(project, "keyed_revalidation: true")
    with Gateway.start(project) as first:
        cold = first.dataset("customer_usage")
        assert cold["materialized_this_run"] == 1
        etag = first.call("customer_usage_summary", ACME, **MAY).header("etag")
    with Gateway.start(project) as second:
        warm = second.dataset("customer_usage")
        assert warm["state"] == "ready" and warm["materialized_this_run"] == 0, warm
        assert warm["snapshot_id"] == cold["snapshot_id"]
        again = second.call("customer_usage_summary", ACME, **MAY)
        assert again.status == 200 and again.header("etag") == etag


def test_a_gateway_uses_a_server_reached_by_address_and_leaves_it_running(tmp_path, monkeypatch):
    from server_support import ServerProcess

    server = ServerProcess("--listen", "tcp://127.0.0.1:0")
    try:
        assert server.port and server.token
        monkeypatch.setenv("QGW_TEST_SERVER_TOKEN", server.token)
        project = copy_example(tmp_path)
        address = f"tcp://127.0.0.1:{server.port}"
        with Gateway.start(project, "--server", address, "--server-token-env", "QGW_TEST_SERVER_TOKEN") as gateway:
            assert gateway.status()["server"] == {"spawned": False, "pid": None}
            reply = gateway.call("customer_usage_summary", ACME, **MAY)
            assert reply.status == 200 and len(reply.json()["data"]) == 3
        assert server.process.poll() is None, "a server the gateway did not spawn outlives it"
    finally:
        assert server.stop() == 0
