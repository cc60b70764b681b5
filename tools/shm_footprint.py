"""Peak /dev/shm use of several DuckDB processes running shm-enabled parallel scans.

Starts PROCESSES Python processes, each with DuckDB (THREADS threads), quiver's extension and the
allinone worker attached over stdio with VGI_RPC_SHM_SIZE_BYTES set, all running the same parallel
numbers() scan (up to THREADS worker connections each, so up to PROCESSES x THREADS segments), and
samples /dev/shm while they run. Reports the peak of `df` (statvfs: counts segments whose names are
already unlinked, which `du` cannot see) above the level before the start, and of `du` (named files).

    python tools/shm_footprint.py --extension target/extension/quiver.duckdb_extension \
        --worker target/release/quiver-allinone
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

SHM_DIR = Path("/dev/shm")
SAMPLE_SECONDS = 0.02

ENGINE = """
import sys, duckdb
extension, worker, threads, rows, rounds = sys.argv[1:6]
con = duckdb.connect(config={"allow_unsigned_extensions": "true", "threads": threads})
con.execute(f"LOAD '{extension}'")
con.execute(f"ATTACH '{worker} --max-workers {threads} --batch-rows 1048576' AS w (TYPE quiver)")
for _ in range(int(rounds)):
    con.execute(f"SELECT sum(n), count(*) FROM w.numbers({rows})").fetchall()
"""


def df_used_bytes() -> int:
    stat = os.statvfs(SHM_DIR)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


def du_bytes() -> int:
    total = 0
    for path in SHM_DIR.iterdir():
        with contextlib.suppress(OSError):
            total += path.stat().st_blocks * 512
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extension", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--segment-bytes", type=int, default=256 << 20)
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    assert 1 <= args.processes <= 64 and 1 <= args.threads <= 64
    env = {**os.environ, "VGI_RPC_SHM_SIZE_BYTES": str(args.segment_bytes)}
    baseline_df, baseline_du = df_used_bytes(), du_bytes()
    engines = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                ENGINE,
                args.extension,
                args.worker,
                str(args.threads),
                str(args.rows),
                str(args.rounds),
            ],
            env=env,
        )
        for _ in range(args.processes)
    ]
    peak_df = peak_du = 0
    started = time.monotonic()
    while any(engine.poll() is None for engine in engines):
        peak_df = max(peak_df, df_used_bytes() - baseline_df)
        peak_du = max(peak_du, du_bytes() - baseline_du)
        time.sleep(SAMPLE_SECONDS)
    elapsed = time.monotonic() - started
    codes = [engine.returncode for engine in engines]
    after = df_used_bytes() - baseline_df
    mib = 1 << 20
    print(
        f"{args.processes} processes x {args.threads} threads, {args.segment_bytes // mib} MiB segments: "
        f"peak df {peak_df / mib:.0f} MiB, peak du {peak_du / mib:.0f} MiB, "
        f"after exit {after / mib:.0f} MiB, {elapsed:.1f} s, exit codes {codes}"
    )


if __name__ == "__main__":
    main()
