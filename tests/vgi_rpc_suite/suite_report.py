"""Runs vgi-rpc's pytest suite (suite.py) in the suite venv and compares quiver with the reference.

Standard library only: this module runs under quiver's own Python (tests/test_vgi_rpc_suite.py
imports it), while the suite itself runs in a subprocess under the suite venv.

Regenerate tests/vgi_rpc_suite/RESULTS.md and results.json with:

    .venv/bin/python tests/vgi_rpc_suite/suite_report.py

The comparison: for every transport, each of quiver's workers, and each of quiver's clients driving
the reference worker, must pass every test the reference worker passes with vgi-rpc's own client on
the same fixture. Tests are matched by their id with the target
("<transport>-<worker>") replaced by "{target}". What the reference itself fails or skips is
listed too, never dropped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from suite_matrix import CLIENT_LABELS, CLIENT_NOT_APPLICABLE, all_targets

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS_MD = HERE / "RESULTS.md"
RESULTS_JSON = HERE / "results.json"

#: What is compared with the reference: quiver's workers, and quiver's clients on the reference worker.
QUIVER_WORKERS = ("rust", "python", "java", *CLIENT_LABELS)
REFERENCE = "reference"
TARGET = re.compile(r"\b(pipe|shm|unix|http)-(rust|python|java|reference(?:@(?:rust|python)-client)?)\b")
#: The whole matrix takes about two minutes on a quiet 2-core machine; this bounds a hung run.
SUITE_TIMEOUT_S = 1200
#: A failure's message is cut to this many characters in the report.
MESSAGE_CHARS = 160
#: No test filter: the whole matrix fits the time budget (see RESULTS.md for the measured
#: runtime), so nothing is excluded. Kept as a named knob so an exclusion would be visible here.
SUITE_FILTER: str | None = None


@dataclass(frozen=True)
class Outcome:
    """One test case of the run."""

    test_id: str
    transport: str | None
    worker: str | None
    outcome: str  # "passed" | "failed" | "error" | "skipped"; "missing" in a gap: never collected
    message: str
    seconds: float = 0.0  # the case's time in the junit report (setup, call and teardown)

    @property
    def key(self) -> str:
        """The test id with its target replaced, so one test on every worker shares a key."""
        return TARGET.sub("{target}", self.test_id, count=1)

    @property
    def test_class(self) -> str:
        return self.test_id.split("::", 1)[0]

    @property
    def target(self) -> str:
        return f"{self.transport}-{self.worker}" if self.transport else "unparametrized"


def suite_python() -> Path:
    return Path(os.environ.get("QUIVER_SUITE_PYTHON", ROOT / ".venv-suite" / "bin" / "python"))


def run_suite(junit: Path, extra_args: list[str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """Runs the suite once over every target; returns the process and its wall time in seconds."""
    command = [
        str(suite_python()),
        "-m",
        "pytest",
        str(HERE / "suite.py"),
        "--rootdir",
        str(HERE),
        # Stops pytest at this directory: tests/conftest.py is quiver's, for quiver's Python.
        "--confcutdir",
        str(HERE),
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        # The suite's 5 s per-test timeout covers the test, not a worker's start in a fixture.
        "-o",
        "timeout_func_only=true",
        f"--junitxml={junit}",
        *(["-k", SUITE_FILTER] if SUITE_FILTER else []),
        *(extra_args or []),
    ]
    env = dict(os.environ)
    env.setdefault("QUIVER_PYTHON", sys.executable)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S, env=env, cwd=ROOT)
    return done, time.monotonic() - started


def parse_junit(junit: Path) -> list[Outcome]:
    outcomes = []
    for case in ElementTree.parse(junit).iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or child.text or "").strip().splitlines()[0:1]
                message = message[0][:MESSAGE_CHARS] if message else ""
                break
        match = TARGET.search(case.get("name") or "")
        transport, worker = (match.group(1), match.group(2)) if match else (None, None)
        seconds = float(case.get("time") or 0.0)
        outcomes.append(Outcome(test_id, transport, worker, outcome, message, seconds))
    return outcomes


def counts(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per target: passed / failed / error / skipped."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        table[o.target][o.outcome] += 1
    return {t: {k: c[k] for k in ("passed", "failed", "error", "skipped")} for t, c in sorted(table.items())}


def seconds_by_target(outcomes: list[Outcome]) -> dict[str, float]:
    """Per target: the summed time of its test cases (a client target's include its driver starts)."""
    total: Counter[str] = Counter()
    for o in outcomes:
        total[o.target] += o.seconds
    return {t: round(total[t], 1) for t in sorted(total)}


def gaps(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    """Per quiver target: the outcomes of tests the reference passes on the same transport and it does not."""
    by_key = {(o.transport, o.worker, o.key): o for o in outcomes if o.transport}
    missing: dict[str, list[Outcome]] = {}
    for (transport, worker, key), o in sorted(by_key.items(), key=lambda item: str(item[0])):
        if worker != REFERENCE:
            continue
        if o.outcome != "passed":
            continue
        for quiver in QUIVER_WORKERS:
            if f"{transport}-{quiver}" not in all_targets():
                continue  # a transport that worker does not serve (the Rust worker has no HTTP)
            theirs = by_key.get((transport, quiver, key))
            if theirs is None:
                # Not collected for this worker at all: as much a gap as a failure.
                theirs = Outcome(key.replace("{target}", f"{transport}-{quiver}"), transport, quiver, "missing", "")
            if theirs.outcome != "passed" and not not_a_client_test(theirs):
                missing.setdefault(f"{transport}-{quiver}", []).append(theirs)
    return missing


def not_a_client_test(o: Outcome) -> bool:
    """A client target's skip of a test that exercises no client (suite.py says which)."""
    return o.worker in CLIENT_LABELS and o.outcome == "skipped" and o.message.startswith(CLIENT_NOT_APPLICABLE)


def reference_not_passing(outcomes: list[Outcome]) -> list[Outcome]:
    """What the reference fails, errors on or skips, and the unparametrized tests that do not pass."""
    return [o for o in outcomes if o.outcome != "passed" and o.worker in (REFERENCE, None)]


def _cause(message: str) -> str:
    """A failure's message without the repetition vgi-rpc puts in a remote error's text."""
    message = message.replace("vgi_rpc.rpc._common.", "")
    return re.sub(r"(\w+Error): \1: ", r"\1: ", message)


def _gap_table(missing: dict[str, list[Outcome]]) -> list[str]:
    """Test class by quiver target: how many of the class's tests each target is short of."""
    targets = sorted(missing)
    per_class: dict[str, Counter[str]] = defaultdict(Counter)
    for target, failing in missing.items():
        for o in failing:
            per_class[o.test_class][target] += 1
    lines = ["| test class | " + " | ".join(targets) + " |", "|---|" + "---:|" * len(targets)]
    for test_class, row in sorted(per_class.items(), key=lambda item: -sum(item[1].values())):
        lines.append(f"| {test_class} | " + " | ".join(str(row[t]) for t in targets) + " |")
    lines.append("| total | " + " | ".join(str(len(missing[t])) for t in targets) + " |")
    return [*lines, ""]


def render(outcomes: list[Outcome], wall_s: float) -> tuple[str, dict]:
    table = counts(outcomes)
    missing = gaps(outcomes)
    lines = [
        "# vgi-rpc 0.52.2's pytest conformance suite against quiver's workers and clients",
        "",
        "Generated by `.venv/bin/python tests/vgi_rpc_suite/suite_report.py` (also run by",
        "tests/test_vgi_rpc_suite.py). Fixtures: tests/vgi_rpc_suite/suite.py; targets are",
        "`<transport>-<worker>`, where `reference` is vgi-rpc's own `vgi-rpc-conformance --describe`",
        "and the client is vgi-rpc's, or `<transport>-reference@<client>-client`, where quiver's Rust",
        "or Python client drives the reference worker through vgi-rpc's client-driver protocol",
        "(`quiver-client-driver`, `python -m quiver.conformance.client_driver`). Which client",
        "transports run by default, and why, is in suite_matrix.py (`QUIVER_SUITE_CLIENTS=all`: all).",
        "",
        f"Suite wall time: {wall_s:.0f} s for {len(outcomes)} test cases (no filter).",
        "",
        "| target | passed | failed | error | skipped | seconds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    seconds = seconds_by_target(outcomes)
    for target, c in table.items():
        row = f"{c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} | {seconds.get(target, 0):.0f}"
        lines.append(f"| {target} | {row} |")
    lines += ["", "## What quiver's workers and clients do not pass that the reference passes", ""]
    if not missing:
        lines += ["Nothing: every quiver target passes everything the reference passes.", ""]
    if missing:
        lines += _gap_table(missing)
    for target, failing in sorted(missing.items()):
        lines += [f"### {target}: {len(failing)}", ""]
        by_class: dict[str, list[Outcome]] = defaultdict(list)
        for o in failing:
            by_class[o.test_class].append(o)
        for test_class, group in sorted(by_class.items()):
            lines.append(f"- {test_class} ({len(group)})")
            for o in group:
                name = o.key.split("::", 1)[1].replace("[{target}]", "").replace("{target}-", "")
                lines.append(f"  - {name}: {o.outcome}: `{_cause(o.message)}`")
        lines.append("")
    not_client: Counter[str] = Counter(f"{o.target}: {o.message}" for o in outcomes if not_a_client_test(o))
    lines += ["## Not client tests", "", "Skipped on client targets, not gaps: the test exercises no client.", ""]
    lines += [f"- {n} × {reason}" for reason, n in sorted(not_client.items())]
    lines += ["", "## Not passed by the reference either (or not tied to a worker)", ""]
    skip_reasons: Counter[str] = Counter()
    for o in reference_not_passing(outcomes):
        if o.outcome == "skipped":
            skip_reasons[f"{o.target}: {o.message}"] += 1
        else:
            lines.append(f"- {o.outcome} {o.test_id} ({o.target}): `{_cause(o.message)}`")
    lines += ["", "Skip reasons (reference and unparametrized tests), by count:", ""]
    lines += [f"- {n} × {reason}" for reason, n in skip_reasons.most_common()]
    data = {
        "wall_s": round(wall_s, 1),
        "counts": table,
        "seconds": seconds,
        "gaps": {t: [o.test_id for o in failing] for t, failing in sorted(missing.items())},
        "reference_not_passing": [
            {"test": o.test_id, "target": o.target, "outcome": o.outcome, "message": o.message}
            for o in reference_not_passing(outcomes)
        ],
    }
    return "\n".join(lines) + "\n", data


def regenerate(junit: Path) -> tuple[list[Outcome], subprocess.CompletedProcess[str]]:
    done, wall_s = run_suite(junit)
    if not junit.exists():
        raise RuntimeError(f"the suite wrote no junit report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    outcomes = parse_junit(junit)
    markdown, data = render(outcomes, wall_s)
    RESULTS_MD.write_text(markdown)
    RESULTS_JSON.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return outcomes, done


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        outcomes, _ = regenerate(Path(directory) / "suite.xml")
    missing = gaps(outcomes)
    print(RESULTS_MD.read_text().split("## What")[0])
    short = {t: len(f) for t, f in missing.items()}
    print(f"quiver targets short of the reference: {short}")
    sys.exit(1 if missing else 0)
