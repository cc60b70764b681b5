"""The suite's scenarios (seed 004's, plus the Arrow format) as each service is asked them.

- local_table: a customer drawn per request → every request queries the snapshot table (the
  gateway's endpoint with `cache: none`, as offloader's local_table measures).
- cache_hit: one customer, again and again (the gateway's `cache: snapshot` endpoint).
- revalidate_304: cache_hit's request with `If-None-Match` of the body's ETag → 304, no body.
- arrow_format: local_table asked for `application/vnd.apache.arrow.stream`.

nginx serves each scenario's response bytes as a static file (its ceiling for the same bytes);
ROAPI and Datasette answer the same query (one tenant's customer, five columns, ordered, ≤ 100 rows)
through their own REST APIs.
"""

from __future__ import annotations

import json
from typing import Any

import data
from wrk import Scenario

SCENARIOS = ["local_table", "cache_hit", "revalidate_304", "arrow_format"]
FIXED_CUSTOMER = 17
ARROW = "application/vnd.apache.arrow.stream"


def gateway_path(endpoint: str, customer: str) -> str:
    return f"/v1/endpoints/{endpoint}?customer_id={customer}"


def gateway(etag: str) -> dict[str, Scenario]:
    auth = {"Authorization": f"Bearer {data.TOKEN}"}
    return {
        "local_table": Scenario(
            "local_table", gateway_path(data.ENDPOINT_UNCACHED, "{n}"), auth, vary_max=data.CUSTOMERS
        ),
        "cache_hit": Scenario("cache_hit", gateway_path(data.ENDPOINT, str(FIXED_CUSTOMER)), auth),
        "revalidate_304": Scenario(
            "revalidate_304",
            gateway_path(data.ENDPOINT, str(FIXED_CUSTOMER)),
            {**auth, "If-None-Match": etag},
            expect_status=304,
        ),
        "arrow_format": Scenario(
            "arrow_format",
            gateway_path(data.ENDPOINT_UNCACHED, "{n}"),
            {**auth, "Accept": ARROW},
            vary_max=data.CUSTOMERS,
        ),
    }


def nginx(etag: str) -> dict[str, Scenario]:
    """Static files named after the scenarios.

    The query string of local_table is ignored by nginx but kept, so the request line is as long as
    the gateway's.
    """
    return {
        "local_table": Scenario("local_table", "/local_table.json?customer_id={n}", vary_max=data.CUSTOMERS),
        "cache_hit": Scenario("cache_hit", "/cache_hit.json"),
        "revalidate_304": Scenario("revalidate_304", "/cache_hit.json", {"If-None-Match": etag}, expect_status=304),
        "arrow_format": Scenario("arrow_format", "/arrow_format.arrows?customer_id={n}", vary_max=data.CUSTOMERS),
    }


def roapi_path(customer: str) -> str:
    columns = ",".join(data.COLUMNS)
    return (
        f"/api/tables/orders?columns={columns}&filter[tenant_id]='{data.TENANT}'"
        f"&filter[customer_id]={customer}&sort=order_date,order_id&limit={data.LIMIT}"
    )


def roapi() -> dict[str, Scenario]:
    return {
        "local_table": Scenario("local_table", roapi_path("{n}"), vary_max=data.CUSTOMERS),
        "cache_hit": Scenario("cache_hit", roapi_path(str(FIXED_CUSTOMER))),
    }


def datasette_path(customer: str) -> str:
    columns = "".join(f"&_col={c}" for c in data.COLUMNS if c != "order_id")
    return (
        f"/orders/orders.json?tenant_id={data.TENANT}&customer_id={customer}&_sort=order_date"
        f"{columns}&_shape=array&_size={data.LIMIT}&_nocount=1"
    )


def datasette() -> dict[str, Scenario]:
    return {
        "local_table": Scenario("local_table", datasette_path("{n}"), vary_max=data.CUSTOMERS),
        "cache_hit": Scenario("cache_hit", datasette_path(str(FIXED_CUSTOMER))),
    }


def rows_of(peer: str, body: bytes) -> list[dict[str, Any]]:
    """The rows of a JSON response, whatever the peer's envelope."""
    parsed = json.loads(body)
    rows = parsed["data"] if peer == "quiver gateway" else parsed
    return [{c: row[c] for c in data.COLUMNS} for row in rows]
