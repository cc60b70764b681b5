"""The documentation as a reader meets it: every relative link resolves.

The README's examples are run as written by the tests of what they show: the install tests
(tests/test_install_*.py) run the quickstarts against the installed packages,
python/tests/test_server_client.py and tests/test_flight_sql.py the server's clients.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def markdown_files() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [
        *pages,
        ROOT / "python" / "README.md",
        ROOT / "java" / "README.md",
        ROOT / "examples" / "gateway" / "README.md",
    ]


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for page in markdown_files():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+://|mailto:", target):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)
