"""Driving wrk (Debian's package): keep-alive connections, a Lua script per scenario, and the
latency distribution read from wrk's own `done()` hook (p50/p95/p99/max, µs), one JSON line.

A scenario is a URL path, optionally with `{n}` replaced per request by a pseudo-random integer in
[1, vary_max] (a cache miss per request), plus request headers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Past this a run is broken, not slow: wrk itself stops at its duration.
RUN_TIMEOUT_GRACE_S = 60
REPORT_MARK = "WRK_REPORT "


@dataclass
class Scenario:
    name: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    vary_max: int = 0
    # The status every response must have (200, or 304 for a revalidation).
    expect_status: int = 200


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua string literal for ASCII text


def script(scenario: Scenario) -> str:
    headers = "\n".join(f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in scenario.headers.items())
    head, _, tail = scenario.path.partition("{n}")
    if scenario.vary_max:
        request = f"""
next_seed = 1
function setup(thread)
    thread:set("seed", next_seed)
    next_seed = next_seed + 1
end
function init(args)
    math.randomseed((seed or 1) * 7919)
end
function request()
    local n = math.random(1, {scenario.vary_max})
    return wrk.format(nil, {lua_string(head)} .. n .. {lua_string(tail)})
end
"""
    else:
        request = f"wrk.path = {lua_string(scenario.path)}\n"
    # Statuses other than the expected one are counted here; wrk's own "status" errors count
    # only >= 400.
    return f"""
wrk.method = "GET"
{headers}
{request}
unexpected = 0
local threads = {{}}
local setup_base = setup
function setup(thread)
    if setup_base then setup_base(thread) end
    table.insert(threads, thread)
end
function response(status, headers, body)
    if status ~= {scenario.expect_status} then unexpected = unexpected + 1 end
end
function done(summary, latency, requests)
    local bad = 0
    for _, thread in ipairs(threads) do bad = bad + (thread:get("unexpected") or 0) end
    io.write(string.format(
        '{REPORT_MARK}{{"requests":%d,"duration_us":%d,"bytes":%d,"unexpected_status":%d,' ..
        '"errors":{{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}},' ..
        '"latency_us":{{"p50":%d,"p95":%d,"p99":%d,"max":%d,"mean":%.1f}}}}\\n',
        summary.requests, summary.duration, summary.bytes, bad,
        summary.errors.connect, summary.errors.read, summary.errors.write,
        summary.errors.status, summary.errors.timeout,
        latency:percentile(50), latency:percentile(95), latency:percentile(99),
        latency.max, latency.mean))
end
"""


def available() -> str | None:
    return shutil.which("wrk")


def version() -> str:
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    first = (out.stdout + out.stderr).strip().splitlines()
    return first[0].split(" [")[0].removeprefix("wrk ") if first else "unknown"


def run(base_url: str, scenario: Scenario, connections: int, duration_s: int) -> dict[str, Any]:
    """One wrk run; returns its report with req/s and latencies in ms."""
    threads = max(1, min(connections, 2))
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script(scenario))
        lua_path = Path(lua.name)
    try:
        argv = [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{duration_s}s",
            "--timeout",
            "10s",
            "-s",
            str(lua_path),
            base_url,
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + RUN_TIMEOUT_GRACE_S)
    finally:
        lua_path.unlink(missing_ok=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(REPORT_MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"wrk exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-400:]}")
    report = json.loads(lines[-1][len(REPORT_MARK) :])
    seconds = report["duration_us"] / 1e6
    latency = report["latency_us"]
    # wrk counts a non-2xx/3xx answer both as a request and as a "status" error; the expected-status
    # check in response() counts every other miss. Only answers with the expected status count.
    failed = max(report["errors"]["status"], report["unexpected_status"])
    errors = failed + sum(v for k, v in report["errors"].items() if k != "status")
    good = max(report["requests"] - failed, 0)
    return {
        "requests": good,
        "seconds": seconds,
        "req_per_s": good / seconds if seconds else 0.0,
        "mb_per_s": report["bytes"] / seconds / 1e6 if seconds else 0.0,
        "p50_ms": latency["p50"] / 1e3,
        "p95_ms": latency["p95"] / 1e3,
        "p99_ms": latency["p99"] / 1e3,
        "max_ms": latency["max"] / 1e3,
        "errors": errors,
        "error_detail": {**report["errors"], "unexpected_status": report["unexpected_status"]},
    }
