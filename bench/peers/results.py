"""Where a suite's results go: `<out>/<suite>.json` (the record shape every suite keeps, with its
`targets` list), then its report (md + svg) from that json; the exit status says whether every peer ran.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def machine_facts(root: Path, started: float) -> dict[str, Any]:
    """What every suite's report says of the machine and the code measured. Changes under
    bench/results (the outputs themselves) do not count as uncommitted code.
    """
    cpu, memory_gb = "unknown CPU", 0.0
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_gb = int(line.split()[1]) / 1024 / 1024
    git = ["git", "-C", str(root)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    status = subprocess.run(
        [*git, "status", "--porcelain", "--", ".", ":(exclude)bench/results"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "memory_gb": memory_gb,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "commit": (commit or "unknown") + (" (with uncommitted changes)" if status else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": time.perf_counter() - started,
        # The 1-minute load average when the report is written: a figure taken beside other work
        # says so.
        "load_average": round(os.getloadavg()[0], 2),
    }


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
