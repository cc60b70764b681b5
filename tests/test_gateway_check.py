"""`quiver-gateway check`, `init` and `keys create` as a user runs them: a good project passes with a
one-line summary; a broken one lists every problem as ``path:line: message`` and exits 1; a starter
project written from parquet files passes check, and its key's token is printed once, never stored.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

PROJECT = """version: 1
datasets_dir: datasets
endpoints_dir: endpoints
keys: keys/keys.yml
object_store_mode: local
"""

DATASET = """id: customer_usage
tenant_column: tenant_id
manifest: data/customer_usage/manifest.json
schema:
  - { name: usage_date, type: DATE }
  - { name: tenant_id, type: VARCHAR }
  - { name: account_id, type: VARCHAR }
  - { name: api_calls, type: BIGINT }
"""

SUMMARY = """name: customer_usage_summary
version: 1
owner: analytics@example.com
dataset: customer_usage
tenant: { column: tenant_id }
params:
  - { name: from, type: date, required: true }
  - { name: to, type: date, required: true }
query:
  group_by: [account_id]
  select:
    - { as: account_id, column: account_id }
    - { as: api_calls_total, column: api_calls, agg: sum }
  filters:
    - { column: usage_date, op: gte, param: from }
    - { column: usage_date, op: lte, param: to }
  order_by:
    - { column: api_calls_total, dir: desc }
columns: [account_id, api_calls_total]
pagination: { default_limit: 10, max_limit: 50 }
cache: { policy: snapshot }
"""

KEYS = """keys:
  - id: demo_acme
    hash: "745ce437a64ab1f020c303be50aa3785e742b72e61533d692f7aa024ff16b121"
    tenant: tenant_acme
    endpoints: [customer_usage_summary]
    status: active
"""

#: The dataset's snapshot: check opens its manifest and parts.
DATA = {
    "data/customer_usage/manifest.json": json.dumps(
        {
            "dataset_id": "customer_usage",
            "snapshot_id": "s1",
            "created_at": "2026-06-01T00:00:00Z",
            "watermark": "2026-06-01T00:00:00Z",
            "schema": [
                {"name": "usage_date", "type": "DATE"},
                {"name": "tenant_id", "type": "VARCHAR"},
                {"name": "account_id", "type": "VARCHAR"},
                {"name": "api_calls", "type": "BIGINT"},
            ],
            "files": [{"path": "usage.csv", "format": "csv"}],
            "sort_columns": ["usage_date"],
        }
    ),
    "data/customer_usage/usage.csv": "usage_date,tenant_id,account_id,api_calls\n2026-05-01,tenant_acme,a1,3\n",
}

#: Every line of a failed check: ``path:line: message`` (line 0 is left out for whole-file problems).
DIAGNOSTIC = re.compile(r"^(?P<path>[^:]+?)(?::(?P<line>\d+))?: (?P<message>.+)$")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def gateway(quiver_bin: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(quiver_bin / "quiver-gateway"), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_a_good_project_passes_with_a_summary(quiver_bin: Path, tmp_path: Path) -> None:
    project = write(
        tmp_path,
        {
            "offloader.yml": PROJECT,
            "datasets/customer_usage.yml": DATASET,
            "endpoints/summary.yml": SUMMARY,
            "keys/keys.yml": KEYS,
            **DATA,
        },
    )
    result = gateway(quiver_bin, "check", project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok: 1 datasets, 1 endpoints, 1 keys"


def test_every_problem_is_listed_with_its_file_and_line(quiver_bin: Path, tmp_path: Path) -> None:
    broken = SUMMARY.replace("{ name: to, type: date, required: true }", "{ name: to, type: date, default: soon }")
    broken = broken.replace("column: api_calls, agg: sum", "column: api_calls, agg: median")
    broken = broken.replace("columns: [account_id, api_calls_total]", "columns: [account_id, secret]")
    project = write(
        tmp_path,
        {
            "offloader.yml": PROJECT + "auth: none\n",
            "datasets/customer_usage.yml": DATASET + "source: { type: databricks }\n",
            "endpoints/summary.yml": broken,
            "endpoints/other.yml": "name: other\nversion: 1\ndataset: nowhere\nquery: { select: [] }\ncolumns: []\n",
            "keys/keys.yml": KEYS.replace("status: active", "status: paused"),
        },
    )
    result = gateway(quiver_bin, "check", project)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    parsed = [DIAGNOSTIC.match(line) for line in lines]
    assert all(parsed), f"every line is path:line: message:\n{result.stdout}"
    found = {(Path(m["path"]).relative_to(project).as_posix(), int(m["line"] or 0)) for m in parsed if m}
    expected = {
        ("datasets/customer_usage.yml", 9),  # source: is not supported
        ("endpoints/other.yml", 3),  # dataset `nowhere` is not defined
        ("endpoints/summary.yml", 5),  # tenant-scoped endpoint with auth: none
        ("endpoints/summary.yml", 8),  # default `soon` is not a date
        ("endpoints/summary.yml", 13),  # agg median
        ("keys/keys.yml", 6),  # status paused
    }
    assert expected <= found, f"missing {expected - found} in:\n{result.stdout}"
    # A key granting the broken endpoint is not reported as granting an undefined one.
    assert not [line for line in lines if "grants endpoint" in line]
    assert f"{len(lines)} problems" in result.stderr


def test_a_missing_project_file_is_an_error(quiver_bin: Path, tmp_path: Path) -> None:
    result = gateway(quiver_bin, "check", tmp_path)
    assert result.returncode == 1
    assert "no project file" in result.stdout


def test_init_writes_a_project_that_passes_check(quiver_bin: Path, tmp_path: Path) -> None:
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    pq.write_table(
        pa.table(
            {
                "order_id": pa.array([1, 2, 3], pa.int64()),
                "placed": pa.array([None, 1, 2], pa.date32()),
                "amount": pa.array([1.5, 2.5, None]),
                "lines": pa.array([[1], [2, 3], []], pa.list_(pa.int32())),
            }
        ),
        parquet / "orders.parquet",
    )
    pq.write_table(pa.table({"name": ["a", "b"], "Odd Column": [True, False]}), parquet / "Customers.parquet")
    out = tmp_path / "project"
    result = gateway(quiver_bin, "init", parquet, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    token = re.search(r"token \(shown once\): ([0-9a-f]{64})$", result.stdout, re.M)
    assert token, result.stdout
    assert 'left out column "Odd Column"' in result.stdout
    keys = (out / "keys" / "keys.yml").read_text()
    assert hashlib.sha256(token[1].encode()).hexdigest() in keys
    assert token[1] not in keys
    assert "type: JSON" in (out / "datasets" / "orders.yml").read_text()

    check = gateway(quiver_bin, "check", out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.strip() == "ok: 2 datasets, 2 endpoints, 1 keys"

    again = gateway(quiver_bin, "init", parquet, "--out", out)
    assert again.returncode == 1
    assert "already holds a project" in again.stderr


def test_keys_create_prints_a_token_once_and_an_entry_that_checks(quiver_bin: Path, tmp_path: Path) -> None:
    grant = ["--tenant", "tenant_globex", "--endpoints", "customer_usage_summary"]
    result = gateway(quiver_bin, "keys", "create", "--id", "globex", *grant)
    assert result.returncode == 0, result.stderr
    token = re.search(r"^token \(shown once\): ([0-9a-f]{64})$", result.stdout, re.M)
    assert token, result.stdout
    entry = result.stdout.split("under `keys:`:\n", 1)[1]
    assert hashlib.sha256(token[1].encode()).hexdigest() in entry
    project = write(
        tmp_path,
        {
            "offloader.yml": PROJECT,
            "datasets/customer_usage.yml": DATASET,
            "endpoints/summary.yml": SUMMARY,
            "keys/keys.yml": KEYS + entry,
            **DATA,
        },
    )
    check = gateway(quiver_bin, "check", project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.strip() == "ok: 1 datasets, 1 endpoints, 2 keys"


@pytest.mark.parametrize("bad_id", ["", "has space", "x" * 129])
def test_keys_create_refuses_a_bad_id(quiver_bin: Path, bad_id: str) -> None:
    result = gateway(quiver_bin, "keys", "create", "--id", bad_id)
    assert result.returncode == 1
    assert "key id" in result.stderr


ONE_PASS_DATASET = """id: usage
manifest: m.json
schema:
  - { name: day, type: DATE }
  - { name: account_id, type: VARCHAR }
  - { name: calls, type: BIGNUM }
"""

ONE_PASS_ENDPOINT = """name: e
version: 1
dataset: usage
params:
  - { name: from, type: date }
query:
  select:
    - { column: day }
    - { column: account_id, agg: median }
    - { column: calls }
  filters:
    - { column: day, op: gte, param: from }
  order_by:
    - { column: day, dir: sideways }
columns: [day, account_id, nothere]
pagination: { default_limit: 500, max_limit: 10 }
cache: { policy: forever }
"""


def test_check_finds_every_problem_in_one_pass_with_exact_lines(quiver_bin: Path, tmp_path: Path) -> None:
    project = write(
        tmp_path,
        {
            "offloader.yml": "version: 1\nauth: none\ndatasets_dir: datasets\nendpoints_dir: endpoints\n",
            "datasets/usage.yml": ONE_PASS_DATASET,
            "datasets/tabbed.yml": "id: tabbed\nmanifest: m.json\n\tschema: x\n",
            "endpoints/e.yml": ONE_PASS_ENDPOINT,
        },
    )
    result = gateway(quiver_bin, "check", project)
    assert result.returncode == 1, result.stdout + result.stderr
    parsed = [DIAGNOSTIC.match(line) for line in result.stdout.splitlines()]
    assert all(parsed), result.stdout
    found = {(Path(m["path"]).relative_to(project).as_posix(), int(m["line"] or 0)) for m in parsed if m}
    assert found == {
        ("datasets/tabbed.yml", 3),  # the tab's own line
        ("datasets/usage.yml", 6),  # BIGNUM
        ("endpoints/e.yml", 9),  # agg median
        ("endpoints/e.yml", 14),  # dir sideways
        ("endpoints/e.yml", 15),  # columns: nothere
        ("endpoints/e.yml", 16),  # default_limit above max_limit
        ("endpoints/e.yml", 17),  # cache policy forever
    }, result.stdout
    # The dataset with a problem is still known to its endpoints.
    assert "not defined" not in result.stdout
