"""`./quiver demo`, the gateway's part: an endpoint, a cache hit and a 304.

`quiver-gateway serve` runs on a copy of examples/gateway (its own quiver server spawned behind
it), with quiver's keyed revalidation on (keyed responses are otherwise `no-store`, as offloader's);
an endpoint is called with an example key, the same call again comes from the cache, a known ETag
revalidates with `304`, and the gateway stops cleanly when its stdin closes.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "quiver-gateway"
WAIT_S = 120
TOKEN = "qgw_demo_acme_key"
PATH = "/v1/endpoints/customer_usage_summary?from=2026-05-01&to=2026-05-31"


def get(base: tuple[str, int], path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(*base, timeout=WAIT_S)
    try:
        connection.request("GET", path, headers=headers)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="quiver-gateway-demo-") as scratch:
        project = Path(scratch) / "project"
        shutil.copytree(ROOT / "examples" / "gateway", project, ignore=shutil.ignore_patterns(".quiver-gateway"))
        settings = project / "offloader.yml"
        settings.write_text(settings.read_text().rstrip("\n") + "\n  keyed_revalidation: true\n")
        started = time.monotonic()
        process = subprocess.Popen(
            [
                str(BINARY),
                "serve",
                str(project),
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--watch-stdin",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            text=True,
        )
        assert process.stdout is not None and process.stdin is not None
        announced = {}
        for line in process.stdout:
            key, _, value = line.strip().partition(":")
            announced[key] = value
            if line.strip() == "LISTENING":
                break
        public, admin = address(announced["HTTP"]), address(announced["ADMIN"])
        while get(admin, "/ready", {})[0] != 200:
            if time.monotonic() - started > WAIT_S:
                sys.exit("the gateway did not become ready")
            time.sleep(0.1)
        print(f"gateway: ready in {time.monotonic() - started:.2f} s (HTTP {announced['HTTP']})")

        auth = {"Authorization": f"Bearer {TOKEN}"}
        for attempt in ("first", "again"):
            status, headers, body = get(public, PATH, auth)
            envelope = json.loads(body)
            rows = envelope["data"]
            print(
                f"  GET customer_usage_summary ({attempt}): {status}, meta.cache: {envelope['meta']['cache']}, "
                f"{len(rows)} accounts, top {rows[0]['account_id']} with {rows[0]['api_calls_total']:,} "
                f"API calls; Server-Timing: {headers['server-timing']}"
            )
        status, _, body = get(public, PATH, {**auth, "If-None-Match": headers["etag"]})
        print(f"  If-None-Match with that ETag: {status}, {len(body)} body bytes")
        status, _, body = get(
            public,
            PATH.replace("customer_usage_summary", "customer_usage_daily"),
            {"Authorization": "Bearer qgw_demo_globex_key"},
        )
        print(f"  a key not granted customer_usage_daily: {status} {json.loads(body)['error']}")
        process.stdin.close()
        print(f"gateway: stopped (exit {process.wait(WAIT_S)})")


if __name__ == "__main__":
    main()
