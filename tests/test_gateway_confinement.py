"""Paths are confined: a local manifest and each of its parts must resolve (``..`` and symlinks
followed) inside the project's data roots (``gateway: data_roots``, the project directory by
default). Serving refuses the snapshot with an error naming the part; ``check`` opens every local
manifest and part and reports what serving would refuse, at the dataset file's ``manifest:`` line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from gateway_support import ACME, Gateway, copy_example, gateway_binary, poll

MAY = {"from": "2026-05-01", "to": "2026-05-31"}
USAGE = Path("data") / "customer_usage"


def point_part_at(project: Path, path: str) -> None:
    manifest_file = project / USAGE / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["files"][0]["path"] = path
    manifest_file.write_text(json.dumps(manifest))


def outside_copy(tmp_path: Path, project: Path) -> Path:
    """The dataset's own part, copied outside the project: served, it would answer 200."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.csv"
    shutil.copy(project / USAGE / "customer_usage.csv", secret)
    return secret


def check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(gateway_binary()), "check", str(project)], capture_output=True, text=True, timeout=60)


def test_a_part_outside_the_project_is_not_served(tmp_path):
    project = copy_example(tmp_path)
    outside_copy(tmp_path, project)
    point_part_at(project, "../../../outside/secret.csv")
    with Gateway.start(project, wait_ready=False) as gateway:
        entry = poll(
            lambda: (entry := gateway.dataset("customer_usage"))["state"] == "failed" and entry,
            "customer_usage to be refused",
        )
        assert "secret.csv" in entry["last_error"] and "data roots" in entry["last_error"], entry
        reply = gateway.call("customer_usage_summary", ACME, **MAY)
        assert reply.status == 503, reply.body
        poll(lambda: gateway.dataset("products")["state"] == "ready", "the other datasets to serve")


def test_a_declared_data_root_admits_parts_outside_the_project(tmp_path):
    project = copy_example(tmp_path)
    outside_copy(tmp_path, project)
    point_part_at(project, "../../../outside/secret.csv")
    project_file = project / "offloader.yml"
    project_file.write_text(project_file.read_text() + f'  data_roots: [".", "{tmp_path / "outside"}"]\n')
    assert check(project).returncode == 0
    with Gateway.start(project) as gateway:
        assert gateway.call("customer_usage_summary", ACME, **MAY).status == 200


def test_check_opens_every_manifest_and_part(tmp_path):
    project = copy_example(tmp_path)
    secret = outside_copy(tmp_path, project)
    # customer_usage: one part escaping with `..`, one absolute, one a symlink pointing out, one missing.
    link = project / USAGE / "linked.csv"
    link.symlink_to(secret)
    manifest_file = project / USAGE / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    part = manifest["files"][0]
    manifest.pop("row_count", None)
    manifest["files"] = [
        {**part, "path": "../../../outside/secret.csv"},
        {**part, "path": str(secret)},
        {**part, "path": "linked.csv"},
        {**part, "path": "gone.csv"},
        part,
    ]
    manifest_file.write_text(json.dumps(manifest))
    # products: its manifest itself outside the project.
    products = project / "datasets" / "products.yml"
    products.write_text(
        products.read_text().replace("manifest: data/products/manifest.json", "manifest: " + "../" * 16 + "etc/passwd")
    )
    # invoices: a manifest whose schema narrows a column.
    invoices_manifest = project / "data" / "invoices" / "manifest.json"
    narrowed = json.loads(invoices_manifest.read_text())
    narrowed["schema"] = [column for column in narrowed["schema"] if column["name"] != "amount"]
    invoices_manifest.write_text(json.dumps(narrowed))

    result = check(project)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {line.split(": ", 1)[0].removeprefix(str(project) + "/"): line for line in result.stdout.splitlines()}
    usage_line = next(
        n
        for n, text in enumerate((project / "datasets/customer_usage.yml").read_text().splitlines(), 1)
        if text.startswith("manifest:")
    )
    usage = lines[f"datasets/customer_usage.yml:{usage_line}"]
    for named in (
        "files[0].path: ../../../outside/secret.csv",
        f"files[1].path: {secret}",
        "files[2].path: linked.csv",
    ):
        assert f"{named} resolves outside the project's data roots" in usage, usage
    assert "files[3].path: gone.csv is missing" in usage, usage
    assert "files[4]" not in usage, "the part inside the project is fine"
    products_line = next(
        n for n, text in enumerate(products.read_text().splitlines(), 1) if text.startswith("manifest:")
    )
    assert "outside the project's data roots" in lines[f"datasets/products.yml:{products_line}"], result.stdout
    assert any(key.startswith("datasets/invoices.yml:") and "amount" in text for key, text in lines.items()), (
        result.stdout
    )
