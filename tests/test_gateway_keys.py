"""The keys file fails closed, loudly: a broken entry is left out on its own and reported; a
revocation, an expiry or a removal takes effect even when another entry is broken; an emptied or
deleted keys file revokes every key; `/status` and `/ready` show a degraded keys file until it is
fixed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway_support import ACME, GLOBEX, LIMITED, Gateway, copy_example, poll

MAY = {"from": "2026-05-01", "to": "2026-05-31"}
GLOBEX_ACTIVE = "    tenant: tenant_globex\n    endpoints: [customer_usage_summary, open_invoices]\n    status: active"
ACME_HASH = "e9a01493b761a713f456c2f4fa6823ecfa24f85c490d694c9dc996bee6c4160b"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[Gateway]:
    project = copy_example(tmp_path_factory.mktemp("keys"))
    with Gateway.start(project) as running:
        yield running


@pytest.fixture
def keys_file(gateway) -> Iterator:
    """The keys file, restored (and seen restored) after the test."""
    path = gateway.project / "keys" / "keys.yml"
    original = path.read_text()
    yield path
    path.write_text(original)
    poll(lambda: gateway.status()["keys"]["state"] == "ok", "the restored keys file")
    poll(lambda: status_of(gateway, GLOBEX) == 200, "the restored keys")


def status_of(gateway: Gateway, token: str) -> int:
    return gateway.call("customer_usage_summary", token, **MAY).status


def write_and_wait(gateway: Gateway, path, text: str) -> dict:
    before = gateway.status()["keys"]["reloads_failed"] + gateway.status()["keys"]["reloads_ok"]
    path.write_text(text)
    poll(
        lambda: gateway.status()["keys"]["reloads_failed"] + gateway.status()["keys"]["reloads_ok"] > before,
        "the keys file's reload",
    )
    return gateway.status()["keys"]


def test_a_revocation_beside_a_broken_entry_takes_effect(gateway, keys_file):
    assert status_of(gateway, GLOBEX) == 200
    text = keys_file.read_text()
    revoked = text.replace(GLOBEX_ACTIVE, GLOBEX_ACTIVE.replace("active", "revoked"))
    broken = revoked.replace(ACME_HASH, "not-a-hash")
    assert broken != revoked != text
    keys = write_and_wait(gateway, keys_file, broken)
    assert status_of(gateway, GLOBEX) == 401, "the revoked key stops working"
    assert status_of(gateway, ACME) == 401, "the broken entry is not in force"
    assert status_of(gateway, LIMITED) == 200, "a sound entry stays in force"
    assert keys["state"] == "degraded"
    assert any("keys.yml:" in problem and "hash" in problem for problem in keys["problems"]), keys
    assert gateway.admin("GET", "/ready").json()["keys"] == "degraded"


def test_a_misspelt_field_in_an_entry_puts_that_entry_out_of_force(gateway, keys_file):
    text = keys_file.read_text()
    misspelt = text.replace(GLOBEX_ACTIVE, GLOBEX_ACTIVE.replace("status: active", "stauts: revoked"))
    keys = write_and_wait(gateway, keys_file, misspelt)
    assert status_of(gateway, GLOBEX) == 401
    assert status_of(gateway, ACME) == 200
    assert any("stauts" in problem for problem in keys["problems"]), keys


def test_a_second_entry_for_a_key_revokes_it(gateway, keys_file):
    text = keys_file.read_text()
    globex_hash = "c5b9530be5a6a7903a24db37f2347d7b242b9d4295f5e340717e5098709ecc2a"
    again = f'\n  - id: demo_globex_again\n    hash: "{globex_hash}"\n    endpoints: []\n    status: revoked\n'
    keys = write_and_wait(gateway, keys_file, text + again)
    assert status_of(gateway, GLOBEX) == 401
    assert status_of(gateway, ACME) == 200
    assert keys["state"] == "degraded"


@pytest.mark.parametrize("change", ["emptied", "deleted", "unparsable"])
def test_an_emptied_deleted_or_unparsable_keys_file_revokes_every_key(gateway, keys_file, change):
    assert status_of(gateway, ACME) == 200
    if change == "emptied":
        keys_file.write_text("")
    elif change == "deleted":
        keys_file.unlink()
    else:
        keys_file.write_text("keys: [ {id: demo_acme\n")
    poll(lambda: status_of(gateway, ACME) == 401, f"the {change} keys file to revoke every key")
    assert status_of(gateway, GLOBEX) == 401
    assert status_of(gateway, LIMITED) == 401
    poll(lambda: gateway.status()["keys"]["state"] == "degraded", "the degraded keys state")
