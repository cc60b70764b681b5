"""The gateway suite's data: one `orders` table written once, and each peer's view of it.

- `orders.parquet` (DuckDB writes it, deterministic): the gateway's snapshot part and ROAPI's table;
- a gateway project over it (offloader's layout, one keyed tenant endpoint, `cache: snapshot`);
- `orders.sqlite` with an index on the filtered columns: Datasette's database.

The query shape every peer serves: the orders of one customer of one tenant, five columns, ordered
by (order_date, order_id), at most 100 rows (25 per customer at a million rows).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import duckdb

TENANT = "acme"
TOKEN = "qgw_bench_acme_key"
ENDPOINT = "orders_by_customer"
# The same query, uncached: every request runs it on the snapshot table (offloader's local_table).
ENDPOINT_UNCACHED = "orders_by_customer_uncached"
CUSTOMERS = 20_000
COLUMNS = ["order_id", "order_date", "region", "amount", "status"]
LIMIT = 100
SNAPSHOT_ID = "bench-0001"

SCHEMA = [
    ("order_id", "BIGINT"),
    ("tenant_id", "VARCHAR"),
    ("customer_id", "INTEGER"),
    ("order_date", "DATE"),
    ("region", "VARCHAR"),
    ("amount", "DOUBLE"),
    ("status", "VARCHAR"),
]


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    return con


def write_parquet(path: Path, rows: int) -> None:
    """`rows` orders: two tenants, CUSTOMERS customers each, dates over two years."""
    con = connect()
    con.execute(
        f"""
        COPY (
            SELECT i::BIGINT AS order_id,
                   CASE WHEN i % 2 = 0 THEN '{TENANT}' ELSE 'globex' END AS tenant_id,
                   ((i // 2) % {CUSTOMERS} + 1)::INTEGER AS customer_id,
                   (DATE '2024-01-01' + ((i * 7919) % 730)::INTEGER) AS order_date,
                   ['eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south', 'ap-east', 'sa-east', 'af-south'][i % 8 + 1] AS region,
                   round(((i * 104729) % 100000) / 100.0, 2)::DOUBLE AS amount,
                   ['open', 'paid', 'shipped', 'refunded'][(i // 3) % 4 + 1] AS status
            FROM range({rows}) t(i)
            ORDER BY tenant_id, customer_id, order_date, order_id
        ) TO '{path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)
        """
    )
    con.close()


def write_project(project: Path, parquet: Path, rows: int) -> None:
    """The gateway project: offloader's files plus quiver's `gateway:` section."""
    (project / "datasets").mkdir(parents=True, exist_ok=True)
    (project / "endpoints").mkdir(exist_ok=True)
    (project / "keys").mkdir(exist_ok=True)
    (project / "data").mkdir(exist_ok=True)
    part = project / "data" / "orders.parquet"
    if not part.exists():
        part.symlink_to(parquet)
    manifest = {
        "dataset_id": "orders",
        "snapshot_id": SNAPSHOT_ID,
        "created_at": "2026-06-01T06:00:00Z",
        "watermark": "2026-06-01T00:00:00Z",
        "schema": [{"name": n, "type": t} for n, t in SCHEMA],
        "files": [{"path": "orders.parquet", "format": "parquet", "row_count": rows}],
        "partition_columns": [],
        "sort_columns": ["tenant_id", "customer_id", "order_date", "order_id"],
        "row_count": rows,
    }
    (project / "data" / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (project / "offloader.yml").write_text(
        "version: 1\nauth: required\ndatasets_dir: datasets\nendpoints_dir: endpoints\nkeys: keys/keys.yml\n"
        "gateway:\n  ready: all\n  cache:\n    max_bytes: 268435456\n  pool:\n    size: 4\n    wait_ms: 2000\n"
        # The part is a link to the suite's one parquet file: its directory is a data root too.
        f"  data_roots:\n    - .\n    - {json.dumps(str(parquet.resolve().parent))}\n"
        # Keyed responses carry an ETag only when asked (offloader's are no-store): revalidate_304.
        "  keyed_revalidation: true\n"
    )
    schema = "\n".join(f"  - {{ name: {n}, type: {t} }}" for n, t in SCHEMA)
    (project / "datasets" / "orders.yml").write_text(
        f"id: orders\nmanifest: data/manifest.json\ntenant_column: tenant_id\nschema:\n{schema}\n"
    )
    for name, policy in ((ENDPOINT, "snapshot"), (ENDPOINT_UNCACHED, "none")):
        (project / "endpoints" / f"{name}.yml").write_text(endpoint_yaml(name, policy))
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    (project / "keys" / "keys.yml").write_text(
        f'keys:\n  - id: bench_acme\n    hash: "{digest}"\n    tenant: {TENANT}\n'
        f"    endpoints: [{ENDPOINT}, {ENDPOINT_UNCACHED}]\n    status: active\n"
    )


def endpoint_yaml(name: str, cache_policy: str) -> str:
    select = "\n".join(f"    - {{ as: {c}, column: {c} }}" for c in COLUMNS)
    return (
        f"name: {name}\nversion: 1\ndataset: orders\nserving_mode: local_table\n"
        "freshness:\n  max_staleness_minutes: 1440\ntenant:\n  column: tenant_id\n"
        f"params:\n  - {{ name: customer_id, type: integer, required: true, max: {CUSTOMERS} }}\n"
        f"query:\n  select:\n{select}\n"
        "  filters:\n    - { column: customer_id, op: eq, param: customer_id }\n"
        "  order_by:\n    - { column: order_date, dir: asc }\n    - { column: order_id, dir: asc }\n"
        f"columns: [{', '.join(COLUMNS)}]\npagination:\n  default_limit: {LIMIT}\n  max_limit: 500\n"
        f"cache:\n  policy: {cache_policy}\n"
    )


def write_sqlite(path: Path, parquet: Path) -> None:
    """Datasette's database: the same rows, indexed on the filtered columns and the sort."""
    path.unlink(missing_ok=True)
    con = connect()
    reader = con.sql(f"SELECT * FROM read_parquet('{parquet}') ORDER BY order_id").to_arrow_reader(100_000)
    db = sqlite3.connect(path)
    names = [n for n, _ in SCHEMA]
    sql_types = {"BIGINT": "INTEGER", "INTEGER": "INTEGER", "DOUBLE": "REAL", "VARCHAR": "TEXT", "DATE": "TEXT"}
    # order_id is the rowid (INTEGER PRIMARY KEY): Datasette then adds no rowid column, and breaks
    # order_date ties by order_id, as the gateway's order_by does.
    columns_sql = ", ".join(f"{n} {sql_types[t]}" + (" PRIMARY KEY" if n == "order_id" else "") for n, t in SCHEMA)
    db.execute(f"CREATE TABLE orders ({columns_sql})")
    placeholders = ", ".join("?" for _ in names)
    for batch in reader:
        columns = [batch.column(n).to_pylist() for n in names]
        date_index = names.index("order_date")
        columns[date_index] = [d.isoformat() for d in columns[date_index]]
        db.executemany(f"INSERT INTO orders VALUES ({placeholders})", zip(*columns, strict=True))
    db.execute("CREATE INDEX orders_by_customer ON orders (tenant_id, customer_id, order_date, order_id)")
    db.commit()
    db.execute("VACUUM")
    db.close()
    con.close()


def prepare(work: Path, rows: int) -> dict[str, Path]:
    """Everything under `work`; returns the paths the peers need."""
    work.mkdir(parents=True, exist_ok=True)
    parquet = work / "orders.parquet"
    write_parquet(parquet, rows)
    project = work / "project"
    write_project(project, parquet, rows)
    sqlite_path = work / "orders.sqlite"
    write_sqlite(sqlite_path, parquet)
    return {"parquet": parquet, "project": project, "sqlite": sqlite_path}
