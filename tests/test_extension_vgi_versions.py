"""VGI version skew: workers written against three vgi-python releases, each in its own venv made
by tools/setup.sh, under our DuckDB extension; and quiver's own worker driven by each release's
engine-role client.

  release  protocol          what changed for the engine
  0.30.0   VgiProtocol 1.4   another protocol name; schemas named, not pathed; no catalog_contents
  0.39.0   vgi.v2 2.0        no catalog_contents
  0.40.0   vgi.v2 2.1        catalog_contents answers one struct per schema
  0.47.0   vgi.v2 2.2        what quiver's own workers speak

The engine negotiates (crates/quiver-vgi-contract/src/dialects.rs): it speaks 2.2, and when a worker
refuses the request's protocol name or version, moves to the dialect the refusal names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from extension_support import ROOT, children, connect, zombies

WORKER = ROOT / "tests" / "vgi_oracle" / "versioned_worker.py"
DRIVER = ROOT / "tests" / "vgi_oracle" / "drive_versioned.py"
RELEASES = ["0.30.0", "0.39.0", "0.40.0", "0.47.0"]
# Generous: a cold Python start of a vgi worker or client on a loaded 2-core machine.
DRIVE_TIMEOUT_S = 300


def release_python(release: str) -> Path:
    """The interpreter of the venv setup.sh made for `release` (0.47.0 is the main vgi venv,
    QUIVER_VGI_PYTHON when set, as in tests/test_extension_third_party.py).
    """
    if release == "0.47.0":
        python = Path(os.environ.get("QUIVER_VGI_PYTHON", ROOT / ".venv-vgi" / "bin" / "python"))
    else:
        python = ROOT / f".venv-vgi-{release}" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"no vgi-python {release} venv at {python}: run ./quiver test (setup.sh builds it)")
    return python


@pytest.fixture(autouse=True)
def worker_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VGI_WORKER_SQLITE_PATH", str(tmp_path / "vgi-worker.sqlite"))


@pytest.fixture(params=[(r, t) for r in RELEASES for t in ("stdio", "launch")], ids=lambda p: f"{p[0]}-{p[1]}")
def attached(request, extension: Path):
    release, transport = request.param
    connection = connect(extension, threads="2")
    prefix = "launch:" if transport == "launch" else ""
    connection.execute(f"ATTACH '{prefix}{release_python(release)} {WORKER}' AS w (TYPE quiver)")
    yield release, connection
    connection.execute("DETACH w")
    assert not children() and not zombies()


def test_an_older_worker_attaches_and_answers_sql(attached: tuple[str, duckdb.DuckDBPyConnection]) -> None:
    release, con = attached
    functions = con.execute(
        "SELECT function_name, function_type FROM duckdb_functions() WHERE database_name = 'w' ORDER BY 1"
    ).fetchall()
    assert functions == [("countdown", "table"), ("sdk_version", "table"), ("shout", "scalar")]
    # The worker really runs the release under test.
    assert con.execute("SELECT version FROM w.sdk_version()").fetchall() == [(release,)]
    assert con.execute("SELECT w.shout(s) FROM (VALUES ('hi'), (NULL), ('ok')) t(s)").fetchall() == [
        ("HI!",),
        (None,),
        ("OK!",),
    ]
    assert con.execute("SELECT count(*), sum(k), min(k), max(k) FROM w.countdown(250)").fetchone() == (
        250,
        31375,
        1,
        250,
    )


@pytest.mark.parametrize("declared", ["2.3.0", "3.0.0"])
def test_no_common_ground_names_both_versions(extension: Path, monkeypatch: pytest.MonkeyPatch, declared: str) -> None:
    monkeypatch.setenv("VERSIONED_WORKER_PROTOCOL", f"vgi.v2 {declared}")
    con = connect(extension, threads="2")
    with pytest.raises(duckdb.Error) as refused:
        con.execute(f"ATTACH '{release_python('0.47.0')} {WORKER}' AS w (TYPE quiver)")
    message = str(refused.value)
    assert f"vgi.v2 {declared}" in message, message
    for spoken in ("vgi.v2 2.2.0", "vgi.v2 2.1.0", "vgi.v2 2.0.0", "VgiProtocol 1.4.0"):
        assert spoken in message, message
    con.close()
    assert not children() and not zombies()


def test_a_worker_declaring_22_over_the_older_name_shape_falls_back(
    extension: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.30's methods (a schema is a `name`) under a worker declaring vgi.v2 2.2.0: the version
    gate lets the 2.2 request in, its `path` parameter is refused as a TypeError, and the engine
    retries with the older `name` shape instead of failing ATTACH.
    """
    monkeypatch.setenv("VERSIONED_WORKER_PROTOCOL", "vgi.v2 2.2.0")
    con = connect(extension, threads="2")
    con.execute(f"ATTACH '{release_python('0.30.0')} {WORKER}' AS w (TYPE quiver)")
    assert con.execute("SELECT version FROM w.sdk_version()").fetchall() == [("0.30.0",)]
    assert con.execute("SELECT w.shout('x')").fetchall() == [("X!",)]
    con.execute("DETACH w")
    con.close()
    assert not children() and not zombies()


def drive(release: str, worker_argv: list[str], catalog: str, scalar: dict[str, str], table: str) -> dict[str, Any]:
    config = {"worker_argv": worker_argv, "catalog": catalog, "scalar": scalar, "table": {"name": table, "n": 5}}
    done = subprocess.run(
        [str(release_python(release)), str(DRIVER), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=DRIVE_TIMEOUT_S,
        env=os.environ.copy(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["release"] == release
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_client_drives_its_own_worker(release: str) -> None:
    """The baseline the other client tests compare against: the release's client and worker agree."""
    out = drive(
        release, [str(release_python(release)), str(WORKER)], "versioned", {"name": "shout", "column": "s"}, "countdown"
    )
    assert out["catalogs"] == {"error_class": None, "value": ["versioned"]}
    assert out["scalar"] == {"error_class": None, "value": [["AB!", None, "C!"]]}
    assert out["table"] == {"error_class": None, "value": [1, 2, 3, 4, 5]}


@pytest.fixture(params=["rust", "python"])
def quiver_worker(request, allinone: Path) -> list[str]:
    """The all-in-one worker of quiver: the Rust binary, or the Python one (quiver's own venv)."""
    if request.param == "rust":
        return [str(allinone)]
    return [sys.executable, "-m", "quiver.vgi.allinone"]


def test_the_047_client_drives_quivers_worker(quiver_worker: list[str]) -> None:
    out = drive("0.47.0", quiver_worker, "allinone", {"name": "upper_case", "column": "value"}, "numbers")
    assert out["catalogs"] == {"error_class": None, "value": ["allinone"]}
    assert out["attach"] == {"error_class": None, "value": "main"}
    assert out["scalar"] == {"error_class": None, "value": [["AB", None, "C"]]}
    assert out["table"] == {"error_class": None, "value": [0, 1, 2, 3, 4]}


@pytest.mark.parametrize(
    ("release", "error", "named"),
    [
        # quiver's workers (Rust and Python) serve vgi.v2 2.2 only: an older client is refused
        # with a typed error naming both sides, on every call, and the worker keeps serving.
        ("0.40.0", "ProtocolVersionError", ["2.1.0", "2.2.0"]),
        ("0.39.0", "ProtocolVersionError", ["2.0.0", "2.2.0"]),
        ("0.30.0", "ProtocolNotSupportedError", ["VgiProtocol", "vgi.v2"]),
    ],
)
def test_an_older_client_is_refused_by_quivers_worker_naming_both_sides(
    quiver_worker: list[str], release: str, error: str, named: list[str]
) -> None:
    out = drive(release, quiver_worker, "allinone", {"name": "upper_case", "column": "value"}, "numbers")
    for step in ("catalogs", "attach", "scalar", "table"):
        assert out[step]["error_class"] is not None, (step, out[step])
        assert error in out[step]["message"], (step, out[step])
        for word in named:
            assert word in out[step]["message"], (step, out[step])
