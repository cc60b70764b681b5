"""Driving ``quiver-gateway`` in tests: copy a project, start the binary (``serve --watch-stdin``:
it stops when the test's end of its stdin closes), read its ``HTTP:``/``ADMIN:`` announcement,
wait for ``/ready``, and make plain HTTP requests with the standard library.

Imported by the gateway test modules (``from gateway_support import ...``).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gateway"
#: Bound on every wait: generous, since tests share a loaded 2-core machine.
WAIT_SECONDS = 60.0

#: The example project's tokens (example keys, documented in examples/gateway/README.md).
ACME = "qgw_demo_acme_key"
GLOBEX = "qgw_demo_globex_key"
REVOKED = "qgw_demo_revoked_key"
EXPIRED = "qgw_demo_expired_key"
LIMITED = "qgw_demo_limited_key"
CATALOG = "qgw_demo_catalog_key"


def copy_example(destination: Path) -> Path:
    """A copy of the example project (its state directory left behind) to change freely."""
    project = destination / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".quiver-gateway", "__pycache__"))
    return project


def add_gateway_setting(project: Path, line: str) -> None:
    """Adds ``line`` (``name: value``) to the project file's ``gateway:`` section, its last one."""
    settings = project / "offloader.yml"
    text = settings.read_text()
    assert "\ngateway:\n" in text, "the example project ends with its gateway: section"
    settings.write_text(text.rstrip("\n") + f"\n  {line}\n")


def gateway_binary() -> Path:
    binary = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release")) / "quiver-gateway"
    if not binary.exists():
        raise AssertionError(f"{binary} not found; run ./quiver test (it builds everything)")
    return binary


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def poll(condition: Callable[[], object], what: str, seconds: float = WAIT_SECONDS) -> object:
    """Calls ``condition`` until it returns something truthy, for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.2)


def without_request_id(body: bytes) -> dict:
    parsed = json.loads(body)
    parsed.get("meta", {}).pop("request_id", None)
    return parsed


#: The `meta` fields that change from one response to the next (offloader writes them per request).
PER_REQUEST_META = ("request_id", "generated_at", "cache")


def without_request_facts(body: bytes) -> dict:
    """A JSON envelope without what is true of one response only, to compare two responses."""
    parsed = json.loads(body)
    meta = parsed.get("meta", {})
    for name in PER_REQUEST_META:
        meta.pop(name, None)
    meta.get("freshness", {}).pop("age_seconds", None)
    return parsed


def request(base: str, method: str, path: str, headers: dict[str, str] | None = None) -> Response:
    parsed = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=WAIT_SECONDS)
    try:
        connection.request(method, path, headers=headers or {})
        reply = connection.getresponse()
        body = reply.read()
        return Response(reply.status, {name.lower(): value for name, value in reply.getheaders()}, body)
    finally:
        connection.close()


def endpoint_path(name: str, **params: str) -> str:
    query = urllib.parse.urlencode(params)
    return f"/v1/endpoints/{name}" + (f"?{query}" if query else "")


def parse_metrics(text: str) -> dict[str, float]:
    """``name{labels}`` → value, for every sample line of a text exposition."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        samples[name] = float(value)
    return samples


def dataset_status(status: dict, dataset: str) -> dict:
    """One dataset's entry of ``/status`` (a list of entries or an object keyed by dataset)."""
    datasets = status["datasets"]
    if isinstance(datasets, dict):
        entry = datasets.get(dataset)
        if entry is None:
            raise AssertionError(f"/status has no dataset {dataset}: {status}")
        return entry
    for entry in datasets:
        if entry.get("dataset") == dataset or entry.get("id") == dataset:
            return entry
    raise AssertionError(f"/status has no dataset {dataset}: {status}")


@dataclass
class Gateway:
    """A running ``quiver-gateway serve`` over ``project``."""

    project: Path
    process: subprocess.Popen
    http_url: str
    admin_url: str
    stderr_path: Path
    stdout_lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, project: Path, *extra_args: str, wait_ready: bool = True, location: str | None = None) -> Gateway:
        """Serves ``project``, or the project at ``location`` (a bucket) with ``project`` its state."""
        stderr_path = project.parent / f"gateway-{time.monotonic_ns()}.stderr"
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                [
                    str(gateway_binary()),
                    "serve",
                    location or str(project),
                    "--listen",
                    "127.0.0.1:0",
                    "--admin-listen",
                    "127.0.0.1:0",
                    "--watch-stdin",
                    *extra_args,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=ROOT,
            )
        announced: dict[str, str] = {}
        lines: list[str] = []

        def read_announcement() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode(errors="replace").strip()
                lines.append(line)
                if line.startswith("HTTP:"):
                    announced["http"] = line.removeprefix("HTTP:")
                elif line.startswith("ADMIN:"):
                    announced["admin"] = line.removeprefix("ADMIN:")
                elif line == "LISTENING":
                    announced["listening"] = "yes"
                    return

        reader = threading.Thread(target=read_announcement, daemon=True)
        reader.start()
        reader.join(WAIT_SECONDS)
        if "listening" not in announced:
            process.kill()
            process.wait()
            raise AssertionError(
                f"quiver-gateway did not announce within {WAIT_SECONDS:.0f} s (exit {process.returncode}); "
                f"stdout {lines}; stderr tail:\n{stderr_path.read_text(errors='replace')[-4000:]}"
            )
        gateway = cls(project, process, announced["http"], announced["admin"], stderr_path, lines)
        if wait_ready:
            gateway.wait_ready()
        return gateway

    def wait_ready(self) -> None:
        poll(lambda: self.admin("GET", "/ready").status == 200, "/ready to answer 200")

    def get(self, path: str, token: str | None = None, **headers: str) -> Response:
        sent = {name.replace("_", "-"): value for name, value in headers.items()}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return request(self.http_url, "GET", path, sent)

    def call(
        self, endpoint: str, token: str | None = None, headers: dict[str, str] | None = None, **params: str
    ) -> Response:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return request(self.http_url, "GET", endpoint_path(endpoint, **params), sent)

    def admin(self, method: str, path: str) -> Response:
        return request(self.admin_url, method, path)

    def status(self) -> dict:
        reply = self.admin("GET", "/status")
        assert reply.status == 200, reply
        return reply.json()

    def dataset(self, name: str) -> dict:
        return dataset_status(self.status(), name)

    def logs(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> int:
        """Closes stdin (the dead-man switch) and waits for a clean exit."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError("quiver-gateway did not stop when its stdin closed") from None
        return self.process.returncode

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def moto_server(monkeypatch) -> Iterator[object]:
    """An S3-compatible server (moto) on a free port, the environment that reaches it set, and a
    boto3 client of it.
    """
    import boto3

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        poll(lambda: listening(port), "moto to listen")
        endpoint = f"http://127.0.0.1:{port}"
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        yield boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    finally:
        server.kill()
        server.wait()


def upload(client, bucket: str, directory: Path, prefix: str) -> None:
    """Every file of ``directory`` (its state directory left out) to ``bucket`` under ``prefix``."""
    for path in sorted(directory.rglob("*")):
        if path.is_file() and ".quiver-gateway" not in path.parts:
            client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(directory).as_posix()}")
