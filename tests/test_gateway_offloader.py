"""quiver gateway as an offloader client sees it: the real binary over projects in the shape of
offloader's examples (the keyed example project, and a public one with a nested column built
here), asserting what offloader's clients read — `meta`'s fields, params, headers, CORS, the
health and admin routes.
"""

from __future__ import annotations

import datetime
import gzip
import json
import re
import zlib
from pathlib import Path

import pytest

from gateway_support import ACME, GLOBEX, Gateway, copy_example

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
    customer_usage_summary is)."""
    project = copy_example(root)
    summary = project / "endpoints" / "customer_usage_summary.yml"
    summary.write_text(summary.read_text() + "freshness:\n  max_staleness_minutes: 120\n")
    return project


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
