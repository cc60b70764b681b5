"""The Node package as a user installs it: `./quiver package node`'s tarballs (the package and its
platform package with the prebuilt native module) into an empty npm folder outside the tree, then the
README's Node example, word for word, against a real server it spawns (`python -m quiver.serve`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist" / "node"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- node-example -->\n```js\n(.*?)```", text, re.DOTALL)
    assert match, "README.md has no <!-- node-example --> block"
    return match.group(1)


@pytest.fixture(scope="module")
def tarballs() -> list[Path]:
    subprocess.run([str(ROOT / "tools" / "package.sh"), "node"], check=True, timeout=300)
    found = sorted(DIST.glob("*.tgz"))
    assert [path.name for path in found] == ["quiver-node-0.1.0.tgz", "quiver-node-linux-x64-gnu-0.1.0.tgz"]
    return found


def test_the_platform_package_carries_the_stripped_native_module(tarballs: list[Path], tmp_path: Path) -> None:
    with tarfile.open(DIST / "quiver-node-linux-x64-gnu-0.1.0.tgz") as archive:
        archive.extract("package/quiver.linux-x64-gnu.node", tmp_path, filter="data")
    module = tmp_path / "package" / "quiver.linux-x64-gnu.node"
    assert module.read_bytes()[:4] == b"\x7fELF"
    sections = subprocess.run(
        ["readelf", "--section-headers", "--wide", str(module)], capture_output=True, text=True, check=True
    ).stdout
    assert ".dynsym" in sections
    assert ".symtab" not in sections and ".debug_info" not in sections, sections
    with tarfile.open(DIST / "quiver-node-0.1.0.tgz") as archive:
        names = archive.getnames()
    assert not [name for name in names if name.endswith(".node")], names


def test_the_readme_example_runs_from_an_npm_install(tarballs: list[Path], tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text('{"name": "app", "version": "1.0.0", "private": true}\n')
    # apache-arrow comes from npm's cache (tools/setup.sh installed it) or the registry.
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", *map(str, tarballs)],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=120,
    )
    installed = project / "node_modules" / "@quiver"
    assert sorted(path.name for path in installed.iterdir()) == ["node", "node-linux-x64-gnu"]
    (project / "example.js").write_text(readme_example())
    # The server the example spawns is the `quiver-server` on PATH, as `pip install quiver-arrow`
    # puts it there (here a program of that name running quiver's venv); no variable names it.
    scripts = tmp_path / "bin"
    scripts.mkdir()
    server = scripts / "quiver-server"
    server.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m quiver.serve "$@"\n')
    server.chmod(0o755)
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("QUIVER_SERVER_PYTHON", "QUIVER_SERVER_COMMAND")
    }
    env["PATH"] = f"{scripts}:{env.get('PATH', '')}"
    run = subprocess.run(["node", "example.js"], cwd=project, env=env, capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["3", "3 [ { n: 3n } ]"], run.stdout
