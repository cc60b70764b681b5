"""A Spark ``local-cluster`` on this machine, its executors running quiver workers.

For tests, benchmarks and trying quiver.spark out without a cluster.
"""

from __future__ import annotations

import os
import sys
import time

from pyspark.sql import SparkSession

from .source import QuiverDataSource


def local_cluster(executors: int, app_name: str, startup_deadline_s: float = 300.0) -> SparkSession:
    """A session on ``local-cluster[executors,1,1024]`` once every executor has registered.

    Filter pushdown to Python data sources is on and :class:`QuiverDataSource` registered.

    Every Python process Spark starts (the driver's planning workers, the executors') runs this
    interpreter, so they import the same quiver and quiver_native. Raises TimeoutError when the
    executors have not registered within ``startup_deadline_s``.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master(f"local-cluster[{executors},1,1024]")
        .appName(app_name)
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    deadline = time.monotonic() + startup_deadline_s
    # The driver counts itself among the block managers: executors + 1 once all registered.
    while session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < executors + 1:
        if time.monotonic() > deadline:
            session.stop()
            raise TimeoutError(f"{executors} Spark executors did not register in {startup_deadline_s} s")
        time.sleep(0.2)
    session.dataSource.register(QuiverDataSource)
    return session
