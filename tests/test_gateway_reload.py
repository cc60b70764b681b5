"""Project hot reload (offloader's config sync): a changed project is re-read, checked and swapped
in whole while requests keep coming; a broken edit is reported and the running project keeps
serving. Both for a project directory and for a project in a bucket.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gateway_support import (
    ACME,
    Gateway,
    copy_example,
    moto_server,
    poll,
    request,
    upload,
)

CATALOG_ENDPOINT = Path("endpoints") / "product_catalog.yml"
#: The admin token (offloader's variable) that shows `/status` details and `/diagnostics`.
ADMIN_TOKEN = "reload-admin-secret"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
OLD_COLUMNS = {"product_id", "name", "category", "price", "launched_on"}
NEW_COLUMNS = OLD_COLUMNS - {"launched_on"}


def without_launched_on(text: str) -> str:
    """The catalog endpoint with its `launched_on` column gone (select, allowlist and sort)."""
    changed = (
        text.replace("    - { as: launched_on, column: launched_on }\n", "")
        .replace("category, price, launched_on]", "category, price]")
        .replace("sort: [product_id, price, launched_on]", "sort: [product_id, price]")
        .replace("version: 1", "version: 2")
    )
    assert changed.count("launched_on") == 0, changed
    return changed


def broken(text: str) -> str:
    """The endpoint selecting a column its dataset does not have: the project does not check."""
    return text.replace("{ as: price, column: price }", "{ as: price, column: no_such_column }")


class Load:
    """Callers of the catalog endpoint on threads of their own, until stopped: every answer's
    status and its rows' key sets.
    """

    def __init__(self, gateway: Gateway, threads: int = 3) -> None:
        self.gateway = gateway
        self.stopping = threading.Event()
        self.seen: list[tuple[int, frozenset[str], int | None]] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def run(self) -> None:
        while not self.stopping.is_set():
            reply = self.gateway.call("product_catalog", ACME, limit="3")
            keys: frozenset[str] = frozenset()
            version = None
            if reply.status == 200:
                body = reply.json()
                keys = frozenset().union(*(row.keys() for row in body["data"]))
                version = body["meta"]["version"]
            with self.lock:
                self.seen.append((reply.status, keys, version))

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)

    def answers(self) -> list[tuple[int, frozenset[str], int | None]]:
        with self.lock:
            return list(self.seen)


def columns_now(gateway: Gateway) -> set[str]:
    reply = gateway.call("product_catalog", ACME, limit="3")
    assert reply.status == 200, reply.body
    return set().union(*(row.keys() for row in reply.json()["data"]))


@pytest.fixture(autouse=True)
def admin_token(monkeypatch):
    monkeypatch.setenv("OFFLOADER_ADMIN_TOKEN", ADMIN_TOKEN)


def admin_json(gateway: Gateway, path: str) -> dict:
    reply = request(gateway.admin_url, "GET", path, ADMIN)
    assert reply.status == 200, reply.body
    return reply.json()


def sync_state(gateway: Gateway) -> dict:
    return admin_json(gateway, "/status")["config_sync"]


def assert_no_torn_answer(answers: list[tuple[int, frozenset[str], int | None]]) -> None:
    """Every answer under load is a 200 of the old project or of the new one, whole."""
    assert answers, "the load made requests"
    for status, keys, version in answers:
        assert status == 200, answers
        assert (keys, version) in {(frozenset(OLD_COLUMNS), 1), (frozenset(NEW_COLUMNS), 2)}, (keys, version)


def change_and_break(gateway: Gateway, endpoint_file: Path, write) -> None:
    """Changes the endpoint under load and waits for it, then breaks it and checks that the
    changed one keeps serving; `write(text)` puts the file where the gateway reads it.
    """
    original = endpoint_file.read_text()
    assert columns_now(gateway) == OLD_COLUMNS
    with Load(gateway) as load:
        poll(lambda: len(load.answers()) >= 3, "requests before the edit")
        write(without_launched_on(original))
        poll(lambda: columns_now(gateway) == NEW_COLUMNS, "the changed endpoint to serve")
        poll(lambda: len(load.answers()) >= 10, "requests after the edit")
    answers = load.answers()
    assert_no_torn_answer(answers)
    assert answers[-1][1] == NEW_COLUMNS
    state = sync_state(gateway)
    assert state["enabled"] is True
    assert state["applied_total"] >= 1
    assert state["last_error"] is None
    diagnostics = admin_json(gateway, "/diagnostics")["config_sync"]
    assert diagnostics["enabled"] is True and diagnostics["last_applied"] is not None, diagnostics
    # The project's cache is not served across a reload: a cached v1 body never comes back.
    assert gateway.call("product_catalog", ACME, limit="3").json()["meta"]["version"] == 2

    failed_before = state["failed_total"]
    with Load(gateway) as load:
        write(broken(without_launched_on(original)))
        poll(lambda: sync_state(gateway)["failed_total"] > failed_before, "the broken edit to be refused")
        poll(lambda: len(load.answers()) >= 10, "requests after the broken edit")
    assert_no_torn_answer(load.answers())
    assert {keys for _, keys, _ in load.answers()} == {frozenset(NEW_COLUMNS)}
    state = sync_state(gateway)
    assert state["last_result"] == "error"
    assert "no_such_column" in state["last_error"], state
    assert "keeps serving" in gateway.logs()
    # Fixed again: applied on a later tick (a refused project is retried, not forgotten).
    write(original)
    poll(lambda: columns_now(gateway) == OLD_COLUMNS, "the original endpoint to serve again")
    assert sync_state(gateway)["last_error"] is None


def test_a_changed_endpoint_is_swapped_in_under_load_and_a_broken_edit_keeps_serving(tmp_path):
    project = copy_example(tmp_path)
    endpoint_file = project / CATALOG_ENDPOINT
    with Gateway.start(project, "--config-sync-interval", "1") as gateway:
        change_and_break(gateway, endpoint_file, endpoint_file.write_text)


def test_a_changed_dataset_materializes_before_the_swap(tmp_path):
    project = copy_example(tmp_path)
    dataset_file = project / "datasets" / "products.yml"
    with Gateway.start(project, "--config-sync-interval", "1") as gateway:
        before = admin_json(gateway, "/status")["datasets"]["products"]["snapshot_id"]
        # A manifest that is not there: the changed dataset cannot materialize, so nothing swaps.
        text = dataset_file.read_text()
        dataset_file.write_text(text.replace("data/products/manifest.json", "data/products/missing.json"))
        poll(lambda: sync_state(gateway)["last_result"] == "error", "the unloadable dataset to be refused")
        assert columns_now(gateway) == OLD_COLUMNS
        # A dataset that changes shape (a column dropped) serves its new table once built; the
        # endpoint reading it changes with it.
        dataset_file.write_text(text.replace("  - { name: discontinued, type: BOOLEAN }\n", ""))
        endpoint_file = project / CATALOG_ENDPOINT
        endpoint_file.write_text(
            endpoint_file.read_text()
            .replace('  - { name: discontinued, type: boolean, required: false, default: "false" }\n', "")
            .replace("    - { column: discontinued, op: eq, param: discontinued }\n", "")
        )
        poll(lambda: sync_state(gateway)["applied_total"] >= 1, "the changed dataset to be applied")
        assert sync_state(gateway)["last_error"] is None
        products = admin_json(gateway, "/status")["datasets"]["products"]
        assert products["state"] == "ready"
        assert products["snapshot_id"] == before
        reply = gateway.call("product_catalog", ACME, discontinued="true")
        assert reply.status == 422, reply.body  # the param went with the column
        assert columns_now(gateway) == OLD_COLUMNS


@pytest.fixture
def moto(monkeypatch):
    with moto_server(monkeypatch) as client:
        yield client


def test_a_project_in_a_bucket_is_reloaded(tmp_path, moto):
    source = copy_example(tmp_path / "source")
    moto.create_bucket(Bucket="projects")
    upload(moto, "projects", source, "team")
    state = tmp_path / "state"
    state.mkdir()
    key = f"team/{CATALOG_ENDPOINT.as_posix()}"
    with Gateway.start(
        state, "--state-dir", str(state), "--config-sync-interval", "1", location="s3://projects/team"
    ) as gateway:
        change_and_break(
            gateway,
            source / CATALOG_ENDPOINT,
            lambda text: moto.put_object(Bucket="projects", Key=key, Body=text.encode()),
        )
