"""Which workers the suite runs against, over which transports: one name per pair, "<transport>-<worker>".

The transport comes first because vgi-rpc's suite decides whether a test runs over HTTP by reading
the ``conformance_conn`` parameter id and checking that it starts with "http" (``_uses_http`` in its
``conformance/_pytest_suite.py``). Standard library only: both the suite venv (targets.py) and
quiver's own Python (suite_report.py) import it.
"""

from __future__ import annotations

WORKERS = ("rust", "python", "reference")
TRANSPORTS = ("pipe", "shm", "unix", "http")
#: quiver's Rust worker has no HTTP server; vgi-rpc's HTTP side is served by the Python package.
HTTP_WORKERS = ("python", "reference")
#: The reference passes 205 / 203 / 203 / 244 on these fixtures (RESULTS.md); fewer than this
#: floor means the fixtures, not the workers, broke.
MIN_REFERENCE_PASSES = {"pipe": 200, "shm": 200, "unix": 200, "http": 240}


def all_targets() -> list[str]:
    """Every (transport, worker) pair, in report order."""
    return [
        f"{transport}-{worker}"
        for transport in TRANSPORTS
        for worker in WORKERS
        if transport != "http" or worker in HTTP_WORKERS
    ]


def split_target(target: str) -> tuple[str, str]:
    transport, _, worker = target.partition("-")
    assert transport in TRANSPORTS and worker in WORKERS, target
    return transport, worker
