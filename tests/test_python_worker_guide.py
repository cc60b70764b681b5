"""docs/python-worker.md, verbatim: its Python blocks are examples/vgi_worker.py, block for block;
its connect block runs as written; every SQL block runs against that worker and returns what the
guide says; the stderr line it promises appears.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import pytest

from extension_support import ROOT

GUIDE = ROOT / "docs" / "python-worker.md"
EXAMPLE = ROOT / "examples" / "vgi_worker.py"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(GUIDE.read_text()) if lang == language]


def test_the_guide_shows_the_example_worker_whole() -> None:
    worker_blocks = [b.strip() for b in blocks("python") if "quiver.connect" not in b]
    source = EXAMPLE.read_text()
    body = source[source.index('"""', 3) + 3 :].strip()
    assert "\n\n\n".join(worker_blocks) == body


@pytest.fixture()
def session(extension: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    # The guide says `python`: the interpreter running the tests, first on PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("QUIVER_EXTENSION", str(extension))
    monkeypatch.delenv("QUIVER_WORKER_STDERR", raising=False)
    monkeypatch.chdir(ROOT)
    (connect,) = [b for b in blocks("python") if "quiver.connect" in b]
    scope: dict[str, object] = {}
    exec(compile(connect, str(GUIDE), "exec"), scope)
    yield scope
    scope["con"].close()


def test_every_query_of_the_guide_answers_as_shown(
    session: dict[str, object], capfd: pytest.CaptureFixture[str]
) -> None:
    con = session["con"]
    queries = blocks("sql")
    assert len(queries) >= 8
    for block in queries:
        lines = block.strip().splitlines()
        expected = ast.literal_eval(lines[-1].removeprefix("-- "))
        statements = [s for s in "\n".join(lines[:-1]).split(";") if s.strip()]
        for statement in statements[:-1]:
            con.execute(statement)
        assert con.execute(statements[-1]).fetchall() == expected, block
    assert "[w] shelves: listing items with at least 1\n" in capfd.readouterr().err
