"""Writes the example project's data: deterministic, small, committed (re-run only to change it).

customer_usage: daily usage rows per tenant/account/product area (CSV), products: a catalog
(parquet), invoices: per-tenant invoices with unpaid ones (NULL paid_at) (parquet).
"""

import datetime
import json
import pathlib
import random

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
WATERMARK = "2026-06-01T00:00:00Z"
TENANTS = {
    "tenant_acme": ["acc_anvil", "acc_rocket", "acc_magnet"],
    "tenant_globex": ["acc_hammock", "acc_chipotle"],
    "tenant_initech": ["acc_tps", "acc_stapler"],
}
AREAS = ["dashboards", "api", "exports"]
PLANS = {"tenant_acme": "enterprise", "tenant_globex": "team", "tenant_initech": "starter"}


def manifest(dataset_id, snapshot_id, schema, files, sort_columns):
    rows = sum(count for _, _, count in files)
    return {
        "dataset_id": dataset_id,
        "snapshot_id": snapshot_id,
        "created_at": "2026-06-01T06:00:00Z",
        "watermark": WATERMARK,
        "schema": [{"name": name, "type": kind} for name, kind in schema],
        "files": [
            {
                "path": path,
                "format": fmt,
                "row_count": count,
                "size_bytes": (HERE / dataset_id / path).stat().st_size,
            }
            for path, fmt, count in files
        ],
        "partition_columns": [],
        "sort_columns": sort_columns,
        "row_count": rows,
    }


def write_manifest(dataset_id, body):
    path = HERE / dataset_id / "manifest.json"
    path.write_text(json.dumps(body, indent=2) + "\n")


def customer_usage(rng):
    start = datetime.date(2026, 5, 1)
    rows = {
        k: []
        for k in [
            "usage_date",
            "tenant_id",
            "account_id",
            "product_area",
            "active_users",
            "api_calls",
            "storage_gb",
            "plan",
        ]
    }
    for day in range(31):
        date = start + datetime.timedelta(days=day)
        for tenant, accounts in TENANTS.items():
            for account in accounts:
                for area in AREAS:
                    rows["usage_date"].append(date.isoformat())
                    rows["tenant_id"].append(tenant)
                    rows["account_id"].append(account)
                    rows["product_area"].append(area)
                    rows["active_users"].append(rng.randint(1, 400))
                    rows["api_calls"].append(rng.randint(0, 250_000))
                    rows["storage_gb"].append(round(rng.uniform(0.5, 900.0), 2))
                    rows["plan"].append(PLANS[tenant])
    table = pa.table(rows)
    pacsv.write_csv(table, HERE / "customer_usage" / "customer_usage.csv")
    schema = [
        ("usage_date", "DATE"),
        ("tenant_id", "VARCHAR"),
        ("account_id", "VARCHAR"),
        ("product_area", "VARCHAR"),
        ("active_users", "INTEGER"),
        ("api_calls", "BIGINT"),
        ("storage_gb", "DOUBLE"),
        ("plan", "VARCHAR"),
    ]
    write_manifest(
        "customer_usage",
        manifest(
            "customer_usage",
            "2026-06-01T00:00:00Z_r0001",
            schema,
            [("customer_usage.csv", "csv", table.num_rows)],
            ["usage_date", "tenant_id", "account_id", "product_area"],
        ),
    )


def products(rng):
    categories = ["hardware", "software", "services", "training"]
    names = [
        "anvil",
        "rocket skates",
        "magnet",
        "tunnel paint",
        "spring shoes",
        "jet pack",
        "birdseed",
        "dehydrated boulders",
        "giant kite",
        "bat suit",
        "earthquake pills",
        "instant hole",
        "tornado seeds",
        "axle grease",
        "roller skis",
        "super outfit",
    ]
    rows = {"product_id": [], "name": [], "category": [], "price": [], "launched_on": [], "discontinued": []}
    for index in range(48):
        rows["product_id"].append(index + 1)
        rows["name"].append(f"{names[index % len(names)]} {index // len(names) + 1}")
        rows["category"].append(categories[index % len(categories)])
        rows["price"].append(round(rng.uniform(5, 2_000), 2))
        rows["launched_on"].append(datetime.date(2024, 1, 1) + datetime.timedelta(days=index * 11))
        rows["discontinued"].append(index % 7 == 0)
    table = pa.table(
        rows,
        schema=pa.schema(
            [
                ("product_id", pa.int64()),
                ("name", pa.string()),
                ("category", pa.string()),
                ("price", pa.float64()),
                ("launched_on", pa.date32()),
                ("discontinued", pa.bool_()),
            ]
        ),
    )
    pq.write_table(table, HERE / "products" / "products.parquet")
    schema = [
        ("product_id", "BIGINT"),
        ("name", "VARCHAR"),
        ("category", "VARCHAR"),
        ("price", "DOUBLE"),
        ("launched_on", "DATE"),
        ("discontinued", "BOOLEAN"),
    ]
    write_manifest(
        "products",
        manifest(
            "products",
            "2026-06-01T00:00:00Z_p0001",
            schema,
            [("products.parquet", "parquet", table.num_rows)],
            ["product_id"],
        ),
    )


def invoices(rng):
    rows = {
        "invoice_id": [],
        "tenant_id": [],
        "account_id": [],
        "issued_at": [],
        "amount": [],
        "status": [],
        "paid_at": [],
    }
    number = 1000
    for tenant, accounts in TENANTS.items():
        for account in accounts:
            for month in range(1, 6):
                number += 1
                issued = datetime.datetime(2026, month, 1, 9, 30, tzinfo=datetime.UTC)
                status = rng.choice(["paid", "paid", "open", "overdue"])
                rows["invoice_id"].append(f"inv_{number}")
                rows["tenant_id"].append(tenant)
                rows["account_id"].append(account)
                rows["issued_at"].append(issued.replace(tzinfo=None))
                rows["amount"].append(round(rng.uniform(100, 50_000), 2))
                rows["status"].append(status)
                rows["paid_at"].append(
                    (issued + datetime.timedelta(days=rng.randint(1, 20))).replace(tzinfo=None)
                    if status == "paid"
                    else None
                )
    table = pa.table(
        rows,
        schema=pa.schema(
            [
                ("invoice_id", pa.string()),
                ("tenant_id", pa.string()),
                ("account_id", pa.string()),
                ("issued_at", pa.timestamp("us")),
                ("amount", pa.float64()),
                ("status", pa.string()),
                ("paid_at", pa.timestamp("us")),
            ]
        ),
    )
    pq.write_table(table, HERE / "invoices" / "invoices.parquet")
    schema = [
        ("invoice_id", "VARCHAR"),
        ("tenant_id", "VARCHAR"),
        ("account_id", "VARCHAR"),
        ("issued_at", "TIMESTAMP"),
        ("amount", "DOUBLE"),
        ("status", "VARCHAR"),
        ("paid_at", "TIMESTAMP"),
    ]
    write_manifest(
        "invoices",
        manifest(
            "invoices",
            "2026-06-01T00:00:00Z_i0001",
            schema,
            [("invoices.parquet", "parquet", table.num_rows)],
            ["tenant_id", "invoice_id"],
        ),
    )


def main():
    rng = random.Random(14)
    customer_usage(rng)
    products(rng)
    invoices(rng)


if __name__ == "__main__":
    main()
