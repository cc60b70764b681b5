"""vgi-rpc 0.52.2's own pytest conformance suite, run against quiver's workers and with quiver's clients.

The suite runs once, in the suite venv (tools/requirements-suite.txt), over every target of
tests/vgi_rpc_suite/targets.py: quiver's Java worker over pipe, pipe + shm and a Unix socket;
quiver's Rust and Python workers over those and HTTP; vgi-rpc's reference worker over the same four, on
the same fixtures; and quiver's Rust and Python clients driving the reference worker through
vgi-rpc's client-driver protocol (both over a Unix socket and over HTTP by default;
suite_matrix.py). The counts and
every difference are written to tests/vgi_rpc_suite/RESULTS.md and results.json. The assertion: on
every transport, each quiver worker, and each quiver client on the reference worker, passes every
test the reference worker passes with vgi-rpc's own client.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

SUITE_DIR = Path(__file__).resolve().parent / "vgi_rpc_suite"
sys.path.insert(0, str(SUITE_DIR))

import suite_matrix as matrix  # noqa: E402
import suite_report as report  # noqa: E402 - beside the suite's fixtures, not in a package


@pytest.fixture(scope="module")
def suite_outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[report.Outcome]:
    if not report.suite_python().exists():
        pytest.fail(f"{report.suite_python()} not found; run tools/setup.sh (it creates .venv-suite)")
    outcomes, done = report.regenerate(tmp_path_factory.mktemp("suite") / "suite.xml")
    assert outcomes, f"the suite ran no tests (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return outcomes


def test_every_target_ran(suite_outcomes: list[report.Outcome]) -> None:
    ran = {o.target for o in suite_outcomes if o.transport}
    assert ran == set(matrix.all_targets()), sorted(set(matrix.all_targets()) ^ ran)


def test_the_reference_passes_on_every_transport(suite_outcomes: list[report.Outcome]) -> None:
    # Guards the fixtures themselves: a broken launcher would make every worker fail alike, and
    # "quiver passes everything the reference passes" would then hold vacuously.
    table = report.counts(suite_outcomes)
    for transport in matrix.TRANSPORTS:
        reference = table[f"{transport}-{report.REFERENCE}"]
        assert reference["passed"] >= matrix.MIN_REFERENCE_PASSES[transport], (transport, reference)


def test_quiver_clients_ran_on_the_reference_worker(suite_outcomes: list[report.Outcome]) -> None:
    # The client rows are real runs: each client target passed tests, not only skipped them.
    table = report.counts(suite_outcomes)
    for target in matrix.client_targets():
        transport, _ = matrix.split_target(target)
        assert table[target]["passed"] >= matrix.MIN_CLIENT_PASSES[transport], (target, table[target])


def test_quiver_passes_everything_the_reference_passes(suite_outcomes: list[report.Outcome]) -> None:
    missing = report.gaps(suite_outcomes)
    short = {target: len(failing) for target, failing in missing.items()}
    listing = "\n".join(
        f"{target}: {o.outcome} {o.test_id}: {o.message}" for target, failing in missing.items() for o in failing
    )
    if missing:
        pytest.fail(
            f"quiver's workers or clients fail tests the reference passes on the same fixture: {short} "
            f"(grouped by cause in {report.RESULTS_MD}):\n{listing}",
            pytrace=False,
        )


def test_the_comparison_counts_failures_skips_and_absences_as_gaps() -> None:
    # The comparison itself, on made-up outcomes: what the reference passes, a quiver worker must
    # pass; failing, skipping or never running it are all gaps, while the Rust worker's absence
    # from HTTP (a transport it does not serve) is not.
    def outcome(test: str, target: str, result: str) -> report.Outcome:
        transport, worker = matrix.split_target(target)
        return report.Outcome(f"TestX::{test}[{target}]", transport, worker, result, "")

    outcomes = [outcome(test, f"pipe-{worker}", "passed") for test in ("a", "b", "c", "d") for worker in matrix.WORKERS]
    outcomes = [o for o in outcomes if o.test_id != "TestX::d[pipe-python]"]
    outcomes = [o for o in outcomes if o.test_id not in ("TestX::b[pipe-rust]", "TestX::c[pipe-python]")]
    outcomes += [outcome("b", "pipe-rust", "failed"), outcome("c", "pipe-python", "skipped")]
    outcomes += [outcome("e", "pipe-reference", "failed"), outcome("e", "pipe-rust", "failed")]
    outcomes += [outcome("h", f"http-{worker}", "passed") for worker in matrix.HTTP_WORKERS]
    outcomes += [outcome("h", t, "passed") for t in matrix.all_targets() if t.startswith("http-reference@")]
    # A client target: a failure is a gap; a skip that says the test exercises no client is not,
    # while a skip for any other reason still is.
    clients = [f"unix-{label}" for label in matrix.CLIENT_LABELS if f"unix-{label}" in matrix.all_targets()]
    for test in ("f", "r", "s"):
        outcomes += [outcome(test, f"unix-{worker}", "passed") for worker in matrix.WORKERS]
    for target in clients:
        outcomes.append(outcome("f", target, "failed" if target == clients[0] else "passed"))
        outcomes.append(replace(outcome("r", target, "skipped"), message=matrix.CLIENT_NOT_APPLICABLE + "raw"))
        outcomes.append(replace(outcome("s", target, "skipped"), message="some other reason"))

    missing = {
        target: sorted((o.test_id, o.outcome) for o in failing) for target, failing in report.gaps(outcomes).items()
    }
    expected = {
        "pipe-rust": [("TestX::b[pipe-rust]", "failed")],
        "pipe-python": [("TestX::c[pipe-python]", "skipped"), ("TestX::d[pipe-python]", "missing")],
    }
    for target in clients:
        expected[target] = [(f"TestX::s[{target}]", "skipped")]
    expected[clients[0]].insert(0, (f"TestX::f[{clients[0]}]", "failed"))
    assert clients, "the default matrix runs at least one client target"
    assert missing == expected
    assert [o.test_id for o in report.reference_not_passing(outcomes)] == ["TestX::e[pipe-reference]"]
