"""vgi-rpc 0.52.2's own pytest conformance suite, with fixtures that start quiver's workers.

The suite's test classes come in by the star import below (its ``_pytest_suite`` module imports
the classes of its companion modules itself); the fixtures here are what the reference
repository's unshipped conftest would provide. Every fixture that reaches a worker is
parametrized over targets ("<transport>-<worker>", see targets.py), so each test runs against
quiver's Rust worker, quiver's Python worker and vgi-rpc's reference worker on the same fixture,
and through quiver's Rust and Python clients (vgi-rpc's client-driver protocol) against the
reference worker.

Tests that do not exercise a client (the raw request-contract tests, which write bytes to the
proxy's own stream, and the HTTP tests that make their own requests to a port) skip on client
targets with a message starting with suite_matrix.CLIENT_NOT_APPLICABLE; the report lists them.
On an HTTP client target, what a test body asks of vgi_rpc.http itself (http_connect,
http_capabilities, request_upload_urls) goes through the client under test.

Fixtures the suite asks for that start specially configured HTTP workers (auth, fake storage,
response caps) are not provided: the tests that take them skip with a reason naming the fixture,
for the reference as for quiver, and the report lists them.

Run by tests/test_vgi_rpc_suite.py (see suite_report.py) under the suite venv; not collected by
quiver's own pytest run, whose Python cannot import vgi-rpc.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from suite_matrix import CLIENT_NOT_APPLICABLE, driven_client
from targets import Targets, export_worker_env, selected_targets
from vgi_rpc.conformance import ConformanceService
from vgi_rpc.conformance._pytest_suite import *  # noqa: F403 - the suite's test classes, for collection
from vgi_rpc.introspect import ServiceDescription, introspect

TARGETS = selected_targets()
#: The raw request-contract tests write bytes to the proxy's own stream: pipe and socket only.
RAW_TARGETS = [t for t in TARGETS if not t.startswith("http-")]
HTTP_TARGETS = [t for t in TARGETS if t.startswith("http-")]
#: Describe is a property of the worker, not the transport: asked once per worker, over pipe;
#: a client's describe is its own code (two reflection calls), so every client target asks.
DESCRIBE_TARGETS = [t for t in TARGETS if t.startswith("pipe-") or driven_client(t) is not None]

NOT_PROVIDED = (
    "quiver's fixtures start no worker configured for {name} (the suite's auth / fake-storage / "
    "response-cap / sticky HTTP workers); skipped for every worker alike"
)


@pytest.fixture(scope="session")
def suite_targets() -> Iterator[Targets]:
    export_worker_env()
    targets = Targets()
    try:
        yield targets
    finally:
        targets.close()


def _skip_for_clients(target: str, why: str) -> None:
    if driven_client(target) is not None:
        pytest.skip(CLIENT_NOT_APPLICABLE + why)


def _factory(targets: Targets, target: str) -> Callable[..., contextlib.AbstractContextManager[Any]]:
    targets.ensure(target)

    def connect(on_log: Callable[..., None] | None = None) -> contextlib.AbstractContextManager[Any]:
        return targets.connect(target, ConformanceService, on_log)

    return connect


@pytest.fixture(params=TARGETS)
def conformance_conn(
    request: pytest.FixtureRequest, suite_targets: Targets, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., contextlib.AbstractContextManager[Any]]:
    if request.param.startswith("http-"):
        _route_vgi_http_through_client(suite_targets, request.param, monkeypatch)
    return _factory(suite_targets, request.param)


def _route_vgi_http_through_client(targets: Targets, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On an HTTP client target, vgi_rpc.http's entry points go through the client under test.

    A test body that calls ``http_connect``, ``http_capabilities`` or ``request_upload_urls``
    itself then reaches the server through quiver's client, as the harness intends (its
    ``install_http_overrides``); undone after the test, so worker targets keep vgi-rpc's client.
    """
    if driven_client(target) is None:
        return
    import vgi_rpc.http

    driver = targets.client_driver(target)
    monkeypatch.setattr(vgi_rpc.http, "http_connect", driver.http_connect)
    monkeypatch.setattr(vgi_rpc.http, "http_capabilities", driver.http_capabilities)
    monkeypatch.setattr(vgi_rpc.http, "request_upload_urls", driver.request_upload_urls)


@pytest.fixture(params=RAW_TARGETS)
def conformance_raw_conn(
    request: pytest.FixtureRequest, suite_targets: Targets
) -> Callable[..., contextlib.AbstractContextManager[Any]]:
    _skip_for_clients(request.param, "it writes raw request bytes to the proxy's own stream")
    return _factory(suite_targets, request.param)


@pytest.fixture(params=DESCRIBE_TARGETS)
def conformance_describe(request: pytest.FixtureRequest, suite_targets: Targets) -> ServiceDescription:
    return suite_targets.describe(request.param, introspect)


@pytest.fixture(scope="session")
def conformance_protocol_connector(
    suite_targets: Targets,
) -> Callable[..., contextlib.AbstractContextManager[Any]]:
    """Binds a proxy of any protocol to the worker behind a ``conformance_conn`` target."""

    def connect(target: str, protocol: type, on_log: Callable[..., None] | None = None) -> Any:
        return suite_targets.connect(target, protocol, on_log)

    return connect


#: Test classes that take ``conformance_http_port`` yet reach it through vgi_rpc.http's entry
#: points (TestSticky asks http_capabilities first, then http_connect): client tests over HTTP.
CLIENT_PORT_CLASSES = frozenset({"TestSticky"})


@pytest.fixture(params=HTTP_TARGETS)
def conformance_http_port(
    request: pytest.FixtureRequest, suite_targets: Targets, monkeypatch: pytest.MonkeyPatch
) -> int:
    target = request.param
    if request.cls is not None and request.cls.__name__ in CLIENT_PORT_CLASSES:
        _route_vgi_http_through_client(suite_targets, target, monkeypatch)
    else:
        _skip_for_clients(target, "it makes its own HTTP requests to the server's port")
    return suite_targets.server_port(target)


def _not_provided(name: str) -> Any:
    @pytest.fixture(name=name)
    def fixture() -> None:
        pytest.skip(NOT_PROVIDED.format(name=name))

    return fixture


conformance_http_auth_port = _not_provided("conformance_http_auth_port")
conformance_http_with_storage_port = _not_provided("conformance_http_with_storage_port")
conformance_http_with_zstd_storage_port = _not_provided("conformance_http_with_zstd_storage_port")
conformance_http_strict_cap_port = _not_provided("conformance_http_strict_cap_port")
conformance_http_externalized_cap_port = _not_provided("conformance_http_externalized_cap_port")
conformance_http_external_security_port = _not_provided("conformance_http_external_security_port")
# TestSticky asks for these by name and, when one is missing, for conformance_http_port, which is
# parametrized per worker here and so cannot be looked up from an unparametrized test.
conformance_http_sticky_short_ttl_port = _not_provided("conformance_http_sticky_short_ttl_port")
conformance_http_sticky_peer_ports = _not_provided("conformance_http_sticky_peer_ports")
conformance_http_sticky_auth_port = _not_provided("conformance_http_sticky_auth_port")
