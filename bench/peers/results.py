"""Where a suite's results go: `<out>/<suite>.json` (the record shape every suite keeps, with its
`targets` list), then its report (md + svg) from that json; the exit status says whether every peer ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def save(
    out: Path,
    saved: dict[str, Any],
    write_reports: Callable[[Path, dict[str, Any]], None],
    log: Callable[[str], None],
) -> int:
    suite = saved["suite"]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{suite}.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_reports(out, saved)
    log(f"done in {saved['info']['wall_s']:.0f} s; results in {out}/{suite}.{{md,json,svg}}")
    failed = [name for name, peer in saved["peers"].items() if peer["status"] != "ok"]
    if failed:
        log(f"peers with problems: {', '.join(failed)}")
    return 1 if failed else 0
