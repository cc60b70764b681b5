"""Which workers the suite runs against, over which transports, through which client.

A worker target is "<transport>-<worker>": vgi-rpc's own Python client against that worker. A
client target is "<transport>-reference@<client>-client": vgi-rpc's reference worker driven by one
of quiver's clients through vgi-rpc's client-driver protocol (``vgi_rpc/conformance/client_driver.py``),
where the client makes every call and the test bodies only see what it relays.

The transport comes first because vgi-rpc's suite decides whether a test runs over HTTP by reading
the ``conformance_conn`` parameter id and checking that it starts with "http" (``_uses_http`` in its
``conformance/_pytest_suite.py``). Standard library only: both the suite venv (targets.py) and
quiver's own Python (suite_report.py) import it.
"""

from __future__ import annotations

import os

WORKERS = ("rust", "python", "java", "reference")
TRANSPORTS = ("pipe", "shm", "unix", "http")
#: The workers with an HTTP server (quiver-rpc's `serve_http`, the Python package's WSGI app, the
#: reference's); the Java worker serves byte streams only.
HTTP_WORKERS = ("rust", "python", "reference")
#: The reference passes 205 / 203 / 203 / 244 on these fixtures (RESULTS.md); fewer than this
#: floor means the fixtures, not the workers, broke.
MIN_REFERENCE_PASSES = {"pipe": 200, "shm": 200, "unix": 200, "http": 240}
#: A client target passes fewer: the tests that exercise no client are skipped on it (13 raw
#: request tests on byte streams; over HTTP the ~50 that make their own requests to the port),
#: leaving about 192 on every transport. Fewer than this floor means the driver, not a test, broke.
MIN_CLIENT_PASSES = {"pipe": 180, "shm": 180, "unix": 180, "http": 180}

#: quiver's clients, each with the transports its driver runs over by default. Every connection
#: starts a driver process, and over pipe and shm the harness also starts a reference worker for
#: it (about 0.35 s of Python start-up each, ~70 s per target on a quiet 2-core machine). The
#: drivers start in milliseconds (the Rust binary; the Python driver forked from
#: driver_forkserver.py with its imports done: ~15 s per target instead of ~45), so the default
#: runs unix and HTTP for both clients (the reference's HTTP server is already running), about
#: 40 s in all. QUIVER_SUITE_CLIENTS=all runs CLIENT_TRANSPORTS_ALL (RESULTS.md says which ran);
#: QUIVER_SUITE_TARGETS names any single target.
CLIENT_TRANSPORTS = {"rust": ("unix", "http"), "python": ("unix", "http")}
#: What each driver can serve (both reach HTTP through their own HTTP client: quiver-rpc's
#: `Client::http`, quiver's Python `HttpClient`).
CLIENT_TRANSPORTS_ALL = {"rust": ("pipe", "shm", "unix", "http"), "python": ("pipe", "shm", "unix", "http")}
#: The skip message, for a client target, of a test that does not exercise a client: the raw
#: request-contract tests write bytes to the proxy's own stream, which a driven client has not.
#: Such a skip is listed in the report and is not a gap.
CLIENT_NOT_APPLICABLE = "not a client test: "


def client_label(client: str) -> str:
    return f"reference@{client}-client"


CLIENT_LABELS = tuple(client_label(c) for c in CLIENT_TRANSPORTS_ALL)


def worker_targets() -> list[str]:
    return [
        f"{transport}-{worker}"
        for transport in TRANSPORTS
        for worker in WORKERS
        if transport != "http" or worker in HTTP_WORKERS
    ]


def client_targets(transports: dict[str, tuple[str, ...]] = CLIENT_TRANSPORTS) -> list[str]:
    return [
        f"{transport}-{client_label(client)}"
        for transport in TRANSPORTS
        for client, served in transports.items()
        if transport in served
    ]


def all_targets() -> list[str]:
    """The matrix of this run, in report order: every worker target, then the client targets."""
    every = os.environ.get("QUIVER_SUITE_CLIENTS", "").strip() == "all"
    return worker_targets() + client_targets(CLIENT_TRANSPORTS_ALL if every else CLIENT_TRANSPORTS)


def known_targets() -> list[str]:
    """Every target a run may name (QUIVER_SUITE_TARGETS)."""
    return worker_targets() + client_targets(CLIENT_TRANSPORTS_ALL)


def split_target(target: str) -> tuple[str, str]:
    """(transport, worker label): the label is a worker, or "reference@<client>-client"."""
    transport, _, worker = target.partition("-")
    assert transport in TRANSPORTS and (worker in WORKERS or worker in CLIENT_LABELS), target
    return transport, worker


def driven_client(target: str) -> str | None:
    """The quiver client a target drives, or None for a worker target."""
    _, worker = split_target(target)
    if "@" not in worker:
        return None
    return worker.split("@", 1)[1].removesuffix("-client")
