"""Spark + a quiver worker against Spark's own Python Arrow UDF doing the same work, in one run.

Under ``local-cluster[2,1,1024]`` (two executors, separate JVMs with Python workers of their own),
over a cached column of ``--rows`` BIGINTs in two partitions:

- ``add_one``: ``x + 1`` per row by the Rust example worker (``hello_worker``'s scalar, through
  ``quiver.spark.apply_scalar``, ``mapInArrow``), by an ``@arrow_udf`` (``pyarrow.compute.add``), and
  by Spark's own JVM expression, the ceiling (no Python at all);
- ``scan``: ``split_numbers(rows, splits := 8)`` read through the ``quiver`` data source, beside
  ``spark.range(rows)``.

Each query ends in ``sum`` (checked exact), so no rows travel to the driver. The JVM and executors
start before anything is timed; every query runs ``--warmup`` times, then ``--measured`` times:
the report is the median [min-max] in seconds, with the load average before and after, since a
loaded machine's figures are not comparable.

    ./quiver bench spark [--rows N] [--warmup W] [--measured R] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from charts import write_log_bars
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from quiver.spark import apply_scalar, local_cluster

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release"))
HELLO = "launch:" + str(BIN / "examples" / "hello_worker")
ALLINONE = "launch:" + str(BIN / "quiver-allinone")
EXECUTORS = 2
STARTUP_DEADLINE_S = 300.0


def session() -> SparkSession:
    return local_cluster(EXECUTORS, "quiver-bench-spark", STARTUP_DEADLINE_S)


def timed(run: Callable[[], int], expected: int, warmup: int, measured: int) -> list[float]:
    for _ in range(warmup):
        assert run() == expected
    times = []
    for _ in range(measured):
        start = time.perf_counter()
        got = run()
        times.append(time.perf_counter() - start)
        assert got == expected, (got, expected)
    return times


def total(df: DataFrame, column: str) -> int:
    return int(df.agg(F.sum(column)).collect()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--measured", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write spark.md and spark.json here")
    args = parser.parse_args()
    spark = session()
    rows = args.rows
    data = spark.range(rows, numPartitions=EXECUTORS).withColumnRenamed("id", "x").cache()
    assert data.count() == rows

    @F.arrow_udf("long")
    def add_one(x: pa.Array) -> pa.Array:
        return pc.add(x, 1)

    plus_one = rows * (rows - 1) // 2 + rows
    upto = rows * (rows - 1) // 2
    queries: dict[str, tuple[Callable[[], int], int]] = {
        "add_one: quiver worker (Rust, mapInArrow)": (
            lambda: total(apply_scalar(data, HELLO, "add_one", ["x"], "y"), "y"),
            plus_one,
        ),
        "add_one: Spark @arrow_udf (pyarrow)": (lambda: total(data.withColumn("y", add_one("x")), "y"), plus_one),
        "add_one: Spark JVM expression (ceiling)": (lambda: total(data.withColumn("y", F.col("x") + 1), "y"), plus_one),
        "scan: quiver source, split_numbers (8 splits)": (
            lambda: total(
                spark.read.format("quiver")
                .option("worker", ALLINONE)
                .option("function", "split_numbers")
                .option("args", json.dumps([rows]))
                .option("named", '{"splits": 8}')
                .load(),
                "n",
            ),
            upto,
        ),
        "scan: spark.range (ceiling)": (lambda: total(spark.range(rows, numPartitions=EXECUTORS), "id"), upto),
    }
    load_before = os.getloadavg()
    results = {name: timed(run, want, args.warmup, args.measured) for name, (run, want) in queries.items()}
    load_after = os.getloadavg()
    spark.stop()
    lines = [
        f"# Spark + quiver worker vs Spark's own Python Arrow UDF ({rows:,} rows, local-cluster[{EXECUTORS},1,1024])",
        "",
        f"{args.warmup} warm-up + {args.measured} measured runs each; load average before "
        f"{load_before[0]:.2f} / after {load_after[0]:.2f} (1 min), {os.cpu_count()} CPUs.",
        "",
        "| query | median s | min–max s | Mrows/s (median) |",
        "|---|---:|---:|---:|",
    ]
    for name, times in results.items():
        median = statistics.median(times)
        lines.append(f"| {name} | {median:.3f} | {min(times):.3f}–{max(times):.3f} | {rows / median / 1e6:.1f} |")
    medians = {name: statistics.median(times) for name, times in results.items()}
    ratio = medians["add_one: Spark @arrow_udf (pyarrow)"] / medians["add_one: quiver worker (Rust, mapInArrow)"]
    targets = [
        {
            "target": "add_one: quiver worker rows/s ≥ 1× Spark's @arrow_udf (same run)",
            "measured": round(ratio, 3),
            "threshold": 1.0,
            "met": ratio >= 1.0,
        }
    ]
    lines += ["", "| target | measured | threshold | met |", "|---|---|---|---|"]
    lines += [
        f"| {t['target']} | {t['measured']}× | {t['threshold']}× | {'yes' if t['met'] else 'no'} |" for t in targets
    ]
    lines += ["", "![rows/s per query (log scale)](spark.svg)"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "spark.md").write_text(report)
        record = {
            "suite": "spark",
            "rows": rows,
            "load_before": load_before,
            "load_after": load_after,
            "seconds": results,
            "targets": targets,
        }
        (args.out / "spark.json").write_text(json.dumps(record, indent=2) + "\n")
        bars = [(name.split(":")[0], name.split(": ", 1)[1], rows / median) for name, median in medians.items()]
        write_log_bars(
            args.out / "spark.svg",
            bars,
            title=f"Spark, {rows:,} rows: rows/s (log scale), same run",
            lo=1e5,
            fmt=lambda v: f"{v / 1e6:.1f} M rows",
            colors={},
            default_color="#27b",
            label_width=330,
            group_count=len({bar[0] for bar in bars}),
        )


if __name__ == "__main__":
    main()
