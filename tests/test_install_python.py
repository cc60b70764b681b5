"""The Python and DuckDB packages installed as a user installs them, outside the source tree.

``tools/package.sh python duckdb`` builds ``dist/python`` (the wheels) and ``dist/duckdb`` (a local
extension repository) from what setup built; the packages are copied to a temporary directory, the
wheels installed into a clean venv (pyarrow and duckdb from PyPI, through uv's cache), and every
program runs from that venv with a bare environment (no ``PYTHONPATH``, no ``QUIVER_*``) and a
working directory outside the tree: the README's Python examples as written (a worker attached from
plain DuckDB, a server with the DB-API client, the native client's own server, the gateway on the
example project), the console scripts, and ``INSTALL quiver FROM '<dir>'`` in stock DuckDB.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
UV = ROOT / ".venv-uv" / "bin" / "uv"
#: Bound on every wait: generous, since tests share a loaded 2-core machine.
WAIT_SECONDS = 120.0


def _cargo_version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    section = text[text.index("[workspace.package]") :]
    match = re.search(r'^version = "([^"]+)"', section, re.MULTILINE)
    assert match, "Cargo.toml has a workspace version"
    return match.group(1)


VERSION = _cargo_version()


@dataclass
class Installed:
    """A clean venv with the wheels installed, and a working directory outside the tree."""

    venv: Path
    work: Path
    repository: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self) -> dict[str, str]:
        """A user's environment: nothing of this source tree, and the venv not activated.

        Programs run by their path in the venv, so what they start themselves (the server of
        ``quiver_native.ServerProcess`` and of the gateway) cannot come from ``python3`` on PATH,
        which has no quiver. HOME is the working directory, so DuckDB's extension directory
        (~/.duckdb) is this test's own.
        """
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.work),
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "LANG": "C.UTF-8",
        }

    def program(self, name: str) -> Path:
        return self.venv / "bin" / name

    def run(self, program: str | Path, *argv: str, timeout: float = WAIT_SECONDS) -> subprocess.CompletedProcess[str]:
        """``program`` (a name in the venv's bin, or a path) with ``argv``, in the working directory."""
        return subprocess.run(
            [str(self.program(program) if isinstance(program, str) else program), *argv],
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def python_code(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", code)


def readme_block(marker: str, language: str = "python") -> str:
    """The first ```language block after ``<!-- marker -->`` in the README."""
    text = README.read_text()
    start = text.index(f"<!-- {marker} -->")
    return text[start:].split(f"```{language}\n", 1)[1].split("```", 1)[0]


@pytest.fixture(scope="module")
def dist() -> Path:
    """``dist/``, with the Python and DuckDB packages built once for this module."""
    subprocess.run([str(ROOT / "tools" / "package.sh"), "python", "duckdb"], cwd=ROOT, check=True, timeout=600)
    return ROOT / "dist"


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The packages copied out of the tree, and the wheels installed into a new venv."""
    base = tmp_path_factory.mktemp("install")
    wheels = base / "wheels"
    shutil.copytree(dist / "python", wheels)
    repository = base / "repository"
    shutil.copytree(dist / "duckdb", repository)
    venv = base / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    subprocess.run(
        [
            str(UV),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            *map(str, wheels.glob("*.whl")),
        ],
        check=True,
        timeout=600,
    )
    work = base / "work"
    work.mkdir()
    return Installed(venv, work, repository)


def test_the_wheels_are_the_two_halves_tagged_for_what_they_need(dist: Path) -> None:
    names = sorted(path.name for path in (dist / "python").glob("*.whl"))
    assert len(names) == 2, names
    assert names[0] == f"quiver_arrow-{VERSION}-py3-none-any.whl"
    assert re.fullmatch(rf"quiver_native-{re.escape(VERSION)}-cp311-abi3-manylinux_2_\d+_x86_64\.whl", names[1])


def test_auditwheel_agrees_with_the_manylinux_tag(dist: Path) -> None:
    wheel = next((dist / "python").glob("quiver_native-*.whl"))
    tag = re.search(r"(manylinux_2_\d+_x86_64)\.whl$", wheel.name).group(1)
    result = subprocess.run(
        [str(UV), "tool", "run", "--quiet", "--from", "auditwheel==6.8.2", "auditwheel", "show", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert f'This constrains the platform tag to "{tag}"' in " ".join(result.stdout.split()), result.stdout


def test_metadata_names_the_version_license_and_dependencies(installed: Installed) -> None:
    result = installed.python_code(
        textwrap.dedent(
            """
            import importlib.metadata as m, json
            print(json.dumps({d: [m.version(d), m.metadata(d).get("License-Expression") or m.metadata(d).get("License"),
                                  m.requires(d)] for d in ("quiver-arrow", "quiver-native")}))
            """
        )
    )
    assert result.returncode == 0, result.stderr
    meta = json.loads(result.stdout)
    assert meta["quiver-arrow"][:2] == [VERSION, "Apache-2.0"]
    assert meta["quiver-native"][:2] == [VERSION, "Apache-2.0"]
    assert any(req.startswith(f"quiver-native=={VERSION}") for req in meta["quiver-arrow"][2])
    assert "duckdb==2.0.0" in meta["quiver-native"][2]


def test_the_extension_is_installed_where_duckdb_python_packages_put_theirs(installed: Installed) -> None:
    result = installed.python_code(
        textwrap.dedent(
            """
            import duckdb, quiver, quiver.extension
            print(quiver.extension_path())
            print(quiver.extension.extensions_dir())
            # DuckDB's convention: the directory is an extension directory, so LOAD finds it by name.
            con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
            con.execute("SET extension_directories = [?]", [str(quiver.extension.extensions_dir())])
            con.execute("LOAD quiver")
            print(con.execute("SELECT * FROM quiver_version()").fetchone()[0])
            """
        )
    )
    assert result.returncode == 0, result.stderr
    path, directory, version = result.stdout.split()
    site = next((installed.venv / "lib").glob("python3*/site-packages"))
    assert Path(path) == site / ".duckdb_extensions" / "v2.0.0" / "linux_amd64" / "quiver.duckdb_extension"
    assert Path(directory) == site / ".duckdb_extensions"
    assert version == VERSION


def test_every_program_answers_its_version(installed: Installed) -> None:
    commands = (
        ["quiver", "--version"],
        ["quiver-server", "--version"],
        ["quiver", "server", "--version"],
        ["quiver-gateway", "--version"],
        ["quiver", "gateway", "--version"],
    )
    for argv in commands:
        result = installed.run(*argv)
        assert result.returncode == 0, (argv, result.stderr)
        assert VERSION in result.stdout, (argv, result.stdout)


def test_the_readme_worker_attached_from_plain_duckdb(installed: Installed) -> None:
    (installed.work / "shout.py").write_text(readme_block("install-worker-example"))
    code = readme_block("install-duckdb-example")
    result = installed.python_code(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[('HELLO',)]"


def test_quiver_sql_runs_with_the_python_example_worker(installed: Installed) -> None:
    result = installed.run("quiver", "sql", "SELECT sum(n) AS total FROM w.numbers(1000)")
    assert result.returncode == 0, result.stderr
    assert "499500" in result.stdout


@pytest.fixture
def server(installed: Installed, tmp_path: Path):
    """``quiver-server`` from the venv on a Unix socket; the README's address is replaced by it."""
    socket = tmp_path / "quiver.sock"
    process = subprocess.Popen(
        [str(installed.program("quiver-server")), "--listen", f"unix://{socket}", "--watch-stdin"],
        cwd=installed.work,
        env=installed.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "READY\n")), daemon=True)
    reader.start()
    reader.join(WAIT_SECONDS)
    if reader.is_alive() or process.poll() is not None:
        process.kill()
        raise AssertionError(f"quiver-server did not start: {lines} {process.stderr.read()}")
    assert f"UNIX:{socket}\n" in lines
    yield socket
    process.stdin.close()
    assert process.wait(WAIT_SECONDS) == 0


def test_the_readme_server_example_with_the_dbapi_client(installed: Installed, server: Path) -> None:
    code = readme_block("server-client-example")
    assert "unix:///tmp/quiver.sock" in code
    result = installed.python_code(code.replace("/tmp/quiver.sock", str(server)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[(3, 4.5)]"


def test_the_readme_native_client_starts_its_own_server(installed: Installed) -> None:
    code = readme_block("native-client-example")
    result = installed.python_code(code + "\nprint(table.num_rows, table.column('x').to_pylist())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2 [2, 3]"


def test_the_readme_gateway_on_the_example_project(installed: Installed, tmp_path: Path) -> None:
    project = tmp_path / "examples" / "gateway"
    shutil.copytree(ROOT / "examples" / "gateway", project, ignore=shutil.ignore_patterns(".quiver-gateway"))
    command = readme_block("install-gateway-example", "sh").strip().splitlines()[0].split("#")[0].split()
    assert command[:3] == ["quiver-gateway", "serve", "examples/gateway"], command
    listen = command.index("--listen")
    command[listen + 1] = "127.0.0.1:0"
    process = subprocess.Popen(
        [str(installed.program(command[0])), *command[1:], "--admin-listen", "127.0.0.1:0", "--watch-stdin"],
        cwd=tmp_path,
        env=installed.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []
        reader = threading.Thread(
            target=lambda: lines.extend(iter(process.stdout.readline, "LISTENING\n")), daemon=True
        )
        reader.start()
        reader.join(WAIT_SECONDS)
        assert not reader.is_alive() and process.poll() is None, lines
        http = next(line.removeprefix("HTTP:").strip() for line in lines if line.startswith("HTTP:"))
        curl = readme_block("install-gateway-example", "sh").strip().splitlines()[-1]
        url = re.search(r"'(http://[^']+)'", curl).group(1).replace("http://127.0.0.1:8080", http)
        token = re.search(r"Bearer (\w+)", curl).group(1)
        body = _get_when_ready(url, token)
        assert body["meta"]["endpoint"] == "customer_usage_summary"
        assert body["meta"]["row_count"] == len(body["data"]) > 0
    finally:
        process.stdin.close()
        exit_code = process.wait(WAIT_SECONDS)
    assert exit_code == 0, process.stderr.read()[-4000:]


def _get_when_ready(url: str, token: str) -> dict:
    """The endpoint's JSON once its snapshot serves (503 until then), within the wait bound."""
    import time

    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code != 503 or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def test_stock_duckdb_installs_quiver_from_the_local_repository(installed: Installed) -> None:
    code = readme_block("install-repository-example").replace("dist/duckdb", str(installed.repository))
    result = installed.python_code(
        code
        + textwrap.dedent(
            """
            info = "SELECT extension_version, install_mode FROM duckdb_extensions() WHERE extension_name = 'quiver'"
            print(con.sql(info).fetchall())
            print(con.sql("SELECT * FROM quiver_version()").fetchall())
            """
        )
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [f"[('v{VERSION}', 'REPOSITORY')]", f"[('{VERSION}',)]"]
