"""The HTTP services the gateway suite measures, each a process of its own on a loopback port:
the gateway (and the quiver server it spawns), nginx (the ceiling: the same response bytes as
static files), ROAPI and Datasette. Each start returns once the service answers, with the time that
took; each stop is SIGTERM, then SIGKILL past a grace.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# The gateway materializes its snapshot before /ready; the others answer once they listen.
GATEWAY_READY_TIMEOUT_S = 600
READY_TIMEOUT_S = 60
STOP_GRACE_S = 20
POLL_S = 0.02


@dataclass
class Service:
    name: str
    proc: subprocess.Popen
    base_url: str
    # Process start until the service answered its readiness URL.
    load_ms: float
    admin_url: str = ""
    notes: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def rss_mb(self) -> float:
        """Resident memory of the service's process and its descendants (the gateway's server)."""
        return sum(rss_kb(pid) for pid in process_tree(self.proc.pid)) / 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def get(url: str, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """GET `url`: (status, headers with lower-case names, body)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, lower_keys(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        return error.code, lower_keys(error.headers.items()), error.read()


def lower_keys(items) -> dict[str, str]:
    """Header names in lower case (HTTP/1.1 servers differ in how they write them)."""
    return {name.lower(): value for name, value in items}


def wait_ready(
    proc: subprocess.Popen, url: str, started: float, name: str, timeout_s: float = READY_TIMEOUT_S
) -> float:
    """Polls `url` until it answers 200; returns ms since `started`.

    On any failure the process is stopped before the error is raised.
    """
    try:
        return poll_ready(proc, url, started, name, timeout_s)
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise


def poll_ready(proc: subprocess.Popen, url: str, started: float, name: str, timeout_s: float) -> float:
    deadline = started + timeout_s
    status = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited {proc.returncode} before it was ready")
        try:
            status, _, _ = get(url, timeout=5)
            if status == 200:
                return (time.monotonic() - started) * 1e3
            if 400 <= status < 500:
                raise RuntimeError(f"{name} answered {status} on {url}")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(POLL_S)
    raise RuntimeError(f"{name} not ready after {timeout_s:.0f} s (last status {status})")


def spawn(argv: list[str], log: Path, **kwargs) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)


def start_gateway(binary: Path, project: Path, state: Path, logs: Path, env: dict[str, str]) -> Service:
    """`quiver-gateway serve`; ready when its admin port's /ready answers 200."""
    argv = [str(binary), "serve", str(project), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]
    argv += ["--state-dir", str(state)]
    started = time.monotonic()
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "gateway.stderr", "ab") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True, env=env)
    http_url = admin_url = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.strip()
        if line.startswith("HTTP:"):
            http_url = line.removeprefix("HTTP:")
        elif line.startswith("ADMIN:"):
            admin_url = line.removeprefix("ADMIN:")
        elif line == "LISTENING":
            break
    if not http_url or not admin_url:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise RuntimeError(f"quiver-gateway announced no HTTP:/ADMIN: (exit {proc.poll()}); see {logs}/gateway.stderr")
    load_ms = wait_ready(proc, admin_url + "/ready", started, "quiver-gateway", GATEWAY_READY_TIMEOUT_S)
    return Service("quiver gateway", proc, http_url, load_ms, admin_url=admin_url)


NGINX_CONF = """
worker_processes {workers};
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    types {{ application/json json; application/vnd.apache.arrow.stream arrows; }}
    server {{
        listen 127.0.0.1:{port} reuseport;
        root {root}/www;
        location / {{ }}
    }}
}}
"""


def start_nginx(root: Path, files: dict[str, bytes], workers: int) -> Service:
    """Starts nginx serving `files` (name → bytes) from a directory of its own; ready on its first 200."""
    (root / "www").mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    # nginx's workers run as an unprivileged user when it starts as root: the files and every
    # directory above them must be readable by others.
    for directory in (root.parent, root, root / "www"):
        directory.chmod(0o755)
    for name, body in files.items():
        (root / "www" / name).write_bytes(body)
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, port=port, workers=workers))
    binary = "nginx" if subprocess.run(["which", "nginx"], capture_output=True).returncode == 0 else "/usr/sbin/nginx"
    started = time.monotonic()
    proc = spawn([binary, "-c", str(conf), "-p", str(root)], root / "nginx.out")
    base = f"http://127.0.0.1:{port}"
    load_ms = wait_ready(proc, f"{base}/{next(iter(files))}", started, "nginx")
    return Service("nginx", proc, base, load_ms)


def nginx_version() -> str:
    out = subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True, text=True)
    return (out.stderr or out.stdout).strip().split("/")[-1]


def start_roapi(binary: Path, parquet: Path, logs: Path) -> Service:
    """ROAPI with the orders table loaded in memory; ready when its schema answers."""
    port = free_port()
    argv = [str(binary), "-a", f"127.0.0.1:{port}", "-t", f"orders={parquet}"]
    started = time.monotonic()
    proc = spawn(argv, logs / "roapi.out")
    base = f"http://127.0.0.1:{port}"
    load_ms = wait_ready(proc, f"{base}/api/schema", started, "roapi")
    return Service("roapi", proc, base, load_ms)


def start_datasette(binary: Path, sqlite: Path, logs: Path) -> Service:
    """Datasette on the SQLite copy, immutable (`-i`: no locking, counts cached); ready on /-/versions.json."""
    port = free_port()
    argv = [str(binary), "serve", "-i", str(sqlite), "-h", "127.0.0.1", "-p", str(port)]
    argv += ["--setting", "default_page_size", "100", "--setting", "max_returned_rows", "1000"]
    started = time.monotonic()
    proc = spawn(argv, logs / "datasette.out")
    base = f"http://127.0.0.1:{port}"
    load_ms = wait_ready(proc, f"{base}/-/versions.json", started, "datasette")
    return Service("datasette", proc, base, load_ms)


def dir_bytes(path: Path) -> int:
    total = 0
    for entry in path.rglob("*"):
        if entry.is_file() and not entry.is_symlink():
            total += entry.stat().st_size
    return total
