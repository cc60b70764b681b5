"""A throw-away PostgreSQL 15 cluster for the benchmark: initdb + pg_ctl in a temp dir, a free port.

Debian's binaries (/usr/lib/postgresql/15/bin) refuse to run as root, so when this runs as root the
cluster belongs to the `postgres` system user. The unix socket lives in the temp dir; the cluster is
stopped and the dir removed on exit, on an exception and on Ctrl-C (the caller's `with` block).

    with Cluster() as pg:
        psycopg.connect(pg.conninfo())
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from common import free_port, log

BIN = Path(os.environ.get("QUIVER_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "postgres"
START_TIMEOUT_S = 60
# A benchmark cluster: durability off is not what a user runs, but fsync on a shared VM disk would
# measure the disk. The same holds for the other peers' file databases, which never fsync per batch.
SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "1GB",
    "max_wal_size": "8GB",
    "max_connections": "32",
}


class Cluster:
    def __init__(self) -> None:
        assert (BIN / "initdb").exists(), f"no PostgreSQL 15 binaries at {BIN} (Debian package postgresql-15)"
        self.dir = Path(tempfile.mkdtemp(prefix="quiver-bench-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0

    def _run(self, *argv: str) -> None:
        cmd = [str(BIN / argv[0]), *argv[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")

    def __enter__(self) -> Cluster:
        if self.as_root:
            entry = pwd.getpwnam(USER)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        try:
            self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
            options = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
            options += f" -p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir}"
            self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-o", options, "start")
        except BaseException:
            self._remove()
            raise
        log("postgres", f"cluster up on port {self.port}, socket dir {self.dir}")
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            log("postgres", f"stop failed: {e}")
        self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def conninfo(self, transport: str = "unix") -> str:
        host = str(self.dir) if transport == "unix" else "127.0.0.1"
        return f"host={host} port={self.port} user={USER} dbname=postgres"

    def uri(self, transport: str = "unix") -> str:
        if transport == "unix":
            return f"postgresql://{USER}@/postgres?host={self.dir}&port={self.port}"
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def version(self) -> str:
        out = subprocess.run([str(BIN / "postgres"), "--version"], capture_output=True, text=True)
        # "postgres (PostgreSQL) 15.18 (Debian …)" → "15.18 (Debian …)"
        return out.stdout.strip().removeprefix("postgres (PostgreSQL) ")
