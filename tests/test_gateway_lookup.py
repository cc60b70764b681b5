"""Keyed lookups answer exactly as statements do: the real binary twice over the same project, one
with lookups off (`gateway: lookup: max_bytes: 0`, every request runs its statement on the
server), one with them on, every request sent to both in every format and the bodies compared
byte for byte (JSON's `generated_at` and `age_seconds`, true of one response only, masked).
The lookup side's `quiver_gateway_lookups` counter shows which requests it answered from memory.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gateway_support import ACME, GLOBEX, Gateway, parse_metrics, poll, request
from test_gateway_offloader import keyed_project, public_project

PARQUET = "application/vnd.apache.parquet"
ARROW = "application/vnd.apache.arrow.stream"
FORMATS = [
    "application/json",
    "application/x-ndjson",
    "text/csv",
    ARROW,
    PARQUET,
]
PER_RESPONSE = re.compile(rb'"(generated_at|age_seconds)":("[^"]*"|-?\d+)')
# A cursor's signature: each process signs with a key of its own (the signed contents must match).
CURSOR_SIGNATURE = re.compile(rb"([A-Za-z0-9_-]{16,})\.[A-Za-z0-9_-]{43}")
LOOKUPS = "quiver_gateway_lookups_total"


def same_arrow(left: bytes, right: bytes) -> bool:
    streams = [pa.ipc.open_stream(body) for body in (left, right)]
    assert streams[0].schema.equals(streams[1].schema)
    metadata = [{key: masked(value) for key, value in (s.schema.metadata or {}).items()} for s in streams]
    assert metadata[0] == metadata[1]
    batches = [list(stream) for stream in streams]
    assert [b.num_rows for b in batches[0]] == [b.num_rows for b in batches[1]]
    return all(a.equals(b) for a, b in zip(*batches, strict=True))


def same_parquet(left: bytes, right: bytes) -> bool:
    tables = [pq.read_table(io.BytesIO(body)) for body in (left, right)]
    metadata = [
        {key: masked(value) for key, value in (table.schema.metadata or {}).items() if key != b"ARROW:schema"}
        for table in tables
    ]
    assert metadata[0] == metadata[1]
    assert b"next_cursor" in b"".join(metadata[0].values()), "only a cursor may differ"
    return tables[0].equals(tables[1], check_metadata=False) and tables[0].schema == tables[1].schema


def masked(body: bytes) -> bytes:
    return CURSOR_SIGNATURE.sub(rb"\1.-", PER_RESPONSE.sub(rb'"\1":"-"', body))


class Pair:
    """The same project served twice: by statements only, and with keyed lookups."""

    def __init__(self, statements: Gateway, lookups: Gateway) -> None:
        self.statements = statements
        self.lookups = lookups

    def lookups_made(self) -> float:
        return parse_metrics(self.lookups.admin("GET", "/metrics").body.decode()).get(LOOKUPS, 0.0)

    def same(self, path: str, token: str | None = None) -> list[bytes]:
        """Sends `path` in every format to both; asserts equal statuses, types and bodies."""
        bodies = []
        for number, media_type in enumerate(FORMATS):
            url = path
            headers = {"X-Request-Id": f"lookup-equivalence-{number:04d}", "Accept": media_type}
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            by_statement = request(self.statements.http_url, "GET", url, headers)
            by_lookup = request(self.lookups.http_url, "GET", url, headers)
            assert by_statement.status == by_lookup.status, (url, by_statement.body, by_lookup.body)
            assert by_statement.header("content-type") == by_lookup.header("content-type"), url
            if media_type == ARROW and by_statement.body != by_lookup.body:
                # Bytes the format leaves unspecified (validity bits past a column's length, values
                # under NULLs) are the server's in one and arrow-rs's in the other: compared decoded.
                assert same_arrow(by_statement.body, by_lookup.body), url
            elif media_type == PARQUET and by_statement.body != by_lookup.body:
                # A page with a next cursor carries it in the file's metadata, inside the base64
                # Arrow schema too: the files are then compared as tables and masked metadata.
                assert same_parquet(by_statement.body, by_lookup.body), url
            else:
                assert masked(by_statement.body) == masked(by_lookup.body), (url, by_statement.body, by_lookup.body)
            bodies.append(by_lookup.body)
        return bodies

    def answered_by_lookup(self, path: str, token: str | None = None) -> list[bytes]:
        """`same`, and every format of it was a lookup on one side and a statement on the other."""
        before = self.lookups_made()
        bodies = self.same(path, token)
        assert self.lookups_made() == before + len(FORMATS), path
        assert parse_metrics(self.statements.admin("GET", "/metrics").body.decode()).get(LOOKUPS, 0.0) == 0
        return bodies

    def run_by_statement(self, path: str, token: str | None = None) -> list[bytes]:
        before = self.lookups_made()
        bodies = self.same(path, token)
        assert self.lookups_made() == before, f"{path} is no lookup"
        return bodies

    def refresh(self, dataset: str) -> None:
        for gateway in (self.statements, self.lookups):
            reply = gateway.admin("POST", f"/refresh/{dataset}")
            assert reply.status == 200, reply.body


def lookups_off(project: Path) -> Path:
    """A copy of `project` beside it whose gateway runs every request as a statement."""
    copy = project.parent / f"{project.name}-statements"
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(".quiver-gateway"))
    settings = copy / "offloader.yml"
    text = settings.read_text()
    if "\ngateway:\n" not in text:
        text = text.rstrip("\n") + "\ngateway:\n"
    settings.write_text(text.rstrip("\n") + "\n  lookup:\n    max_bytes: 0\n")
    return copy


def serve_pair(project: Path) -> Iterator[Pair]:
    with Gateway.start(lookups_off(project)) as statements, Gateway.start(project) as lookups:
        pair = Pair(statements, lookups)
        # Indexes are built with the snapshot; a restored one gets its own at its first refresh.
        poll(lambda: gauge(lookups, "quiver_gateway_lookup_bytes") > 0, "the lookup side to hold rows")
        assert gauge(statements, "quiver_gateway_lookup_bytes") == 0
        yield pair


def gauge(gateway: Gateway, name: str) -> float:
    return parse_metrics(gateway.admin("GET", "/metrics").body.decode()).get(name, 0.0)


# --- offloader's example projects ---------------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Iterator[Pair]:
    yield from serve_pair(keyed_project(tmp_path_factory.mktemp("example")))


def test_every_endpoint_of_the_example_project_answers_the_same(example):
    looked_up = [
        "/v1/endpoints/customer_usage_daily?account_id=acc_anvil&from=2026-05-01&to=2026-05-31",
        "/v1/endpoints/customer_usage_daily?account_id=acc_anvil&from=2026-05-10&to=2026-05-12&product_area=api",
        "/v1/endpoints/customer_usage_daily?account_id=acc_rocket&from=2026-05-30&to=2026-06-30&limit=2",
        "/v1/endpoints/customer_usage_daily?account_id=acc_rocket&from=2026-05-01&to=2026-05-31&offset=40&limit=7",
        "/v1/endpoints/customer_usage_daily?account_id=acc_magnet&from=2026-05-01&to=2026-05-31&sort=-api_calls",
        "/v1/endpoints/customer_usage_daily?account_id=acc_magnet&from=2026-05-05&to=2026-05-20"
        "&sort=active_users,-usage_date&columns=api_calls,usage_date",
        # Another tenant's account: the key includes the tenant, nothing is found.
        "/v1/endpoints/customer_usage_daily?account_id=acc_chipotle&from=2026-05-01&to=2026-05-31",
        "/v1/endpoints/customer_usage_daily?account_id=acc_nobody&from=2026-05-01&to=2026-05-31",
        "/v1/endpoints/customer_usage_daily?account_id=acc_anvil&from=2026-05-31&to=2026-05-01",
    ]
    for path in looked_up:
        example.answered_by_lookup(path, ACME)
    globex = "/v1/endpoints/customer_usage_daily?account_id=acc_chipotle&from=2026-05-01&to=2026-05-31"
    # A key not granted the endpoint: the same 404 on both sides, before any lookup.
    assert b"not_found" in example.run_by_statement(globex, GLOBEX)[0]
    statements = [
        # An aggregate, a file scan and in/between/prefix filters stay statements.
        "/v1/endpoints/customer_usage_summary?from=2026-05-01&to=2026-05-31",
        "/v1/endpoints/customer_usage_summary?account_id=acc_anvil&from=2026-05-01&to=2026-05-31",
        "/v1/endpoints/open_invoices",
        "/v1/endpoints/open_invoices?unpaid=false&status=paid",
        "/v1/endpoints/product_catalog?category=tools,toys&price_range=1,500",
    ]
    for path in statements:
        example.run_by_statement(path, ACME)
    example.run_by_statement("/v1/endpoints/product_catalog?name_prefix=W", ACME)


def test_a_cursor_continues_where_a_lookups_page_ended(example):
    first = "/v1/endpoints/customer_usage_daily?account_id=acc_anvil&from=2026-05-01&to=2026-05-31&limit=10"
    example.answered_by_lookup(first, ACME)
    # Each side continues with its own cursor (signed by its own key); the cursor's predicate is
    # the statement's on both sides, and the pages agree.
    headers = {"Authorization": f"Bearer {ACME}", "X-Request-Id": "lookup-equivalence-next"}
    pages = []
    for gateway in (example.statements, example.lookups):
        cursor = json.loads(request(gateway.http_url, "GET", first, headers).body)["meta"]["next_cursor"]
        assert cursor
        pages.append(request(gateway.http_url, "GET", f"{first}&cursor={cursor}", headers))
    assert pages[0].status == pages[1].status == 200
    assert masked(pages[0].body) == masked(pages[1].body)
    assert json.loads(pages[1].body)["data"][0]["usage_date"] == "2026-05-04"


@pytest.fixture(scope="module")
def public(tmp_path_factory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("public")
    project = public_project(root)
    # A JSON output or no column always compared: no endpoint of this project is a lookup, so its
    # gateway holds no rows. Its requests still answer the same on both sides.
    with Gateway.start(lookups_off(project)) as statements, Gateway.start(project) as lookups:
        yield Pair(statements, lookups)


def test_the_public_example_runs_statements_and_answers_the_same(public):
    for path in [
        "/v1/endpoints/champion?champion_id=11",
        "/v1/endpoints/champions_by_patch",
        "/v1/endpoints/champions_by_patch?format=16.13",
    ]:
        public.run_by_statement(path)
    assert gauge(public.lookups, "quiver_gateway_lookup_bytes") == 0


# --- edge cases: nulls, missing keys, many rows per key, coercion, a swap -------------------------

ORDERS_SCHEMA = [
    ("order_id", "BIGINT"),
    ("tenant_id", "VARCHAR"),
    ("customer_id", "INTEGER"),
    ("code", "VARCHAR"),
    ("day", "DATE"),
    ("amount", "DOUBLE"),
    ("status", "VARCHAR"),
]


def write_orders(part: Path, version: int, count: int | None = None) -> None:
    """600 orders of two tenants (or `count`); customer 1 of acme has 300 (several pages); NULL
    customers, amounts and statuses; codes that read as integers (`007`, `7`).
    """
    con = duckdb.connect()
    con.execute(
        f"""
        COPY (
            SELECT i::BIGINT AS order_id,
                   CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END AS tenant_id,
                   CASE WHEN i % 13 = 0 THEN NULL WHEN i < 600 AND i % 2 = 0 THEN 1
                        ELSE (i % 9)::INTEGER END AS customer_id,
                   CASE i % 3 WHEN 0 THEN '007' WHEN 1 THEN '7' ELSE 'x' || (i % 5) END AS code,
                   DATE '2026-01-01' + (i % 40)::INTEGER AS day,
                   CASE WHEN i % 11 = 0 THEN NULL ELSE round((i * 37 % 1000) / 10.0, 1) END AS amount,
                   CASE WHEN i % 7 = 0 THEN NULL ELSE ['open', 'paid', 'void'][i % 3 + 1] END AS status
            FROM range({count or 600 + (version - 1) * 10}) t(i)
        ) TO '{part}' (FORMAT parquet)
        """
    )
    con.close()


def write_manifest(project: Path, version: int, count: int | None = None) -> None:
    data = project / "data"
    part = data / f"orders-{version}.parquet"
    write_orders(part, version, count)
    manifest = {
        "dataset_id": "orders",
        "snapshot_id": f"orders-{version}",
        "created_at": "2026-06-01T06:00:00Z",
        "watermark": "2026-06-01T00:00:00Z",
        "schema": [{"name": name, "type": kind} for name, kind in ORDERS_SCHEMA],
        "files": [{"path": part.name, "format": "parquet"}],
        "partition_columns": [],
        "sort_columns": ["order_id"],
    }
    (data / "manifest.json").write_text(json.dumps(manifest))


ENDPOINT = """name: {name}
version: 1
dataset: orders
serving_mode: local_table
tenant:
  column: tenant_id
params:
{params}
query:
  select:
    - {{ as: order_id, column: order_id }}
    - {{ as: customer, column: customer_id }}
    - {{ as: code, column: code }}
    - {{ as: day, column: day }}
    - {{ as: amount, column: amount }}
    - {{ as: status, column: status }}
  filters:
{filters}
  order_by:
    - {{ column: amount, dir: desc }}
columns: [order_id, customer, code, day, amount, status]
sort: [amount, day, status, order_id]
pagination:
  default_limit: 50
  max_limit: 500
cache:
  policy: {cache}
"""


def endpoint(name: str, params: list[str], filters: list[str], cache: str = "none") -> str:
    return ENDPOINT.format(
        name=name,
        params="\n".join(f"  - {p}" for p in params),
        filters="\n".join(f"    - {f}" for f in filters),
        cache=cache,
    )


def orders_project(root: Path, count: int | None = None) -> Path:
    project = root / "orders"
    for sub in ("data", "datasets", "endpoints", "keys"):
        (project / sub).mkdir(parents=True)
    write_manifest(project, 1, count)
    schema = "\n".join(f"  - {{ name: {n}, type: {t} }}" for n, t in ORDERS_SCHEMA)
    (project / "datasets" / "orders.yml").write_text(
        f"id: orders\nmanifest: data/manifest.json\ntenant_column: tenant_id\nschema:\n{schema}\n"
    )
    endpoints = {
        "by_customer": endpoint(
            "by_customer",
            [
                "{ name: customer_id, type: integer, required: true }",
                "{ name: status, type: enum, required: false, enum: [open, paid, void] }",
                "{ name: since, type: date, required: false }",
                "{ name: code, type: string, required: false }",
            ],
            [
                "{ column: customer_id, op: eq, param: customer_id }",
                "{ column: status, op: eq, param: status }",
                "{ column: day, op: gte, param: since }",
                "{ column: code, op: ne, param: code }",
            ],
        ),
        "by_customer_cached": endpoint(
            "by_customer_cached",
            ["{ name: customer_id, type: integer, required: true }"],
            ["{ column: customer_id, op: eq, param: customer_id }"],
            cache="snapshot",
        ),
        "by_code": endpoint(
            "by_code",
            ["{ name: code, type: string, required: true }"],
            ["{ column: code, op: eq, param: code }"],
        ),
        # The param's type is not the column's: the statement's coercion decides, not a lookup.
        "by_amount_integer": endpoint(
            "by_amount_integer",
            ["{ name: amount, type: integer, required: true }"],
            ["{ column: amount, op: eq, param: amount }"],
        ),
        "by_customer_number": endpoint(
            "by_customer_number",
            ["{ name: customer_id, type: number, required: true }"],
            ["{ column: customer_id, op: eq, param: customer_id }"],
        ),
        "by_day": endpoint(
            "by_day",
            ["{ name: day, type: date, required: false, default: '2026-01-05' }"],
            ["{ column: day, op: eq, param: day }"],
        ),
    }
    for name, text in endpoints.items():
        (project / "endpoints" / f"{name}.yml").write_text(text)
    names = ", ".join(endpoints)
    (project / "keys" / "keys.yml").write_text(
        "keys:\n"
        f'  - {{ id: acme, hash: "{sha256(ACME)}", tenant: acme, endpoints: [{names}], status: active }}\n'
        f'  - {{ id: globex, hash: "{sha256(GLOBEX)}", tenant: globex, endpoints: [{names}], status: active }}\n'
    )
    (project / "offloader.yml").write_text(
        "version: 1\nauth: required\ndatasets_dir: datasets\nendpoints_dir: endpoints\nkeys: keys/keys.yml\n"
        "gateway:\n  ready: all\n"
    )
    return project


def sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def orders(tmp_path_factory) -> Iterator[Pair]:
    yield from serve_pair(orders_project(tmp_path_factory.mktemp("orders")))


def test_many_rows_per_key_page_the_same(orders):
    base = "/v1/endpoints/by_customer?customer_id=1"
    first = orders.answered_by_lookup(base, ACME)[0]
    assert len(json.loads(first)["data"]) == 50
    for query in ["&limit=500", "&limit=7&offset=290", "&offset=100000", "&sort=day,-status", "&sort=-order_id"]:
        orders.answered_by_lookup(base + query, ACME)
    orders.answered_by_lookup("/v1/endpoints/by_customer_cached?customer_id=1&limit=500", ACME)
    # The cached body is the lookup's: asked again, the cache answers on both sides.
    orders.answered_by_lookup("/v1/endpoints/by_customer_cached?customer_id=2", GLOBEX)


def test_residual_filters_and_null_values(orders):
    for query in [
        "customer_id=1&status=paid",
        "customer_id=1&since=2026-01-30",
        "customer_id=1&since=2026-01-30&status=void&code=007",
        "customer_id=3&code=7",
        "customer_id=3&sort=status",
        "customer_id=5&sort=-amount,status",
    ]:
        body = orders.answered_by_lookup(f"/v1/endpoints/by_customer?{query}", GLOBEX)[0]
        for row in json.loads(body)["data"]:
            assert row["customer"] is not None


def test_missing_keys_find_nothing(orders):
    for path in [
        "/v1/endpoints/by_customer?customer_id=99999",
        "/v1/endpoints/by_customer?customer_id=-1",
        "/v1/endpoints/by_customer?customer_id=9223372036854775807",
        "/v1/endpoints/by_code?code=nothing",
        "/v1/endpoints/by_day?day=1999-12-31",
    ]:
        body = orders.answered_by_lookup(path, ACME)[0]
        assert json.loads(body)["data"] == []


def test_text_and_integer_keys_and_dates(orders):
    # `007` and `7` are different texts.
    sevens = orders.answered_by_lookup("/v1/endpoints/by_code?code=7&limit=500", ACME)[0]
    zeros = orders.answered_by_lookup("/v1/endpoints/by_code?code=007&limit=500", ACME)[0]
    assert {row["code"] for row in json.loads(sevens)["data"]} == {"7"}
    assert {row["code"] for row in json.loads(zeros)["data"]} == {"007"}
    orders.answered_by_lookup("/v1/endpoints/by_day", ACME)
    orders.answered_by_lookup("/v1/endpoints/by_day?day=2026-02-09", GLOBEX)


def test_a_param_of_another_type_than_its_column_runs_the_statement(orders):
    for path in [
        "/v1/endpoints/by_amount_integer?amount=37",
        "/v1/endpoints/by_amount_integer?amount=0",
        "/v1/endpoints/by_customer_number?customer_id=1",
        "/v1/endpoints/by_customer_number?customer_id=1.0",
        "/v1/endpoints/by_customer_number?customer_id=1.5",
    ]:
        orders.run_by_statement(path, ACME)


def test_bad_params_fail_the_same(orders):
    for path in [
        "/v1/endpoints/by_customer",
        "/v1/endpoints/by_customer?customer_id=x",
        "/v1/endpoints/by_customer?customer_id=1&status=lost",
        "/v1/endpoints/by_customer?customer_id=1&limit=501",
    ]:
        orders.run_by_statement(path, ACME)


def test_a_snapshot_swap_moves_the_index_with_it(orders):
    project = orders.lookups.project
    path = "/v1/endpoints/by_customer?customer_id=1&limit=500&sort=-order_id"
    before = json.loads(orders.answered_by_lookup(path, ACME)[0])
    assert before["meta"]["snapshot_id"] == "orders-1"
    for root in (orders.statements.project, project):
        write_manifest(root, 2)
    orders.refresh("orders")
    after = json.loads(orders.answered_by_lookup(path, ACME)[0])
    assert after["meta"]["snapshot_id"] == "orders-2"
    # Version 2 has ten more orders (600..609); acme's customer 1 among them comes first.
    newest = max(i for i in range(600, 610) if i % 2 == 0 and i % 13 != 0 and i % 9 == 1)
    assert after["data"][0]["order_id"] == newest
    assert before["data"][0]["order_id"] < newest
    assert after["data"] != before["data"]


def test_rows_over_the_memory_bound_are_not_held(tmp_path):
    project = orders_project(tmp_path)
    settings = project / "offloader.yml"
    settings.write_text(settings.read_text() + "  lookup:\n    max_bytes: 4096\n")
    with Gateway.start(project) as gateway:
        reply = gateway.call("by_customer", ACME, customer_id="1")
        assert reply.status == 200, reply.body
        assert len(reply.json()["data"]) == 50
        assert gauge(gateway, "quiver_gateway_lookup_bytes") == 0
        assert gauge(gateway, LOOKUPS) == 0


def test_rows_within_the_bound_are_held_however_they_arrive(tmp_path):
    # 200,000 rows come from the server in many batches, each a slice of a larger allocation (an
    # IPC message body, a shared-memory region) whose memory size counts that allocation once per
    # buffer: the bound is on the rows' own bytes (a 1M-row snapshot of 55 MB was once refused
    # under 256 MiB).
    project = orders_project(tmp_path, count=200_000)
    rows = pq.read_table(project / "data" / "orders-1.parquet")
    bound = 3 * rows.nbytes
    settings = project / "offloader.yml"
    settings.write_text(settings.read_text() + f"  lookup:\n    max_bytes: {bound}\n")
    with Gateway.start(project) as gateway:
        poll(lambda: gauge(gateway, "quiver_gateway_lookup_bytes") > 0, "the rows to be held")
        assert gauge(gateway, "quiver_gateway_lookup_bytes") <= bound
        reply = gateway.call("by_customer", ACME, customer_id="3")
        assert reply.status == 200, reply.body
        assert len(reply.json()["data"]) == 50
        assert gauge(gateway, LOOKUPS) == 1
