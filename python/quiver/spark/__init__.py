"""quiver workers under Apache Spark (PySpark 4.3).

A data source reads a worker's table function as partitions; a worker's scalar and table-in-out
functions apply to DataFrames.

    from quiver.spark import QuiverDataSource, apply_scalar, apply_table
    spark.dataSource.register(QuiverDataSource)
    spark.read.format("quiver").option("worker", "launch:...").option("function", "split_numbers")...

How executors reach workers. Each Spark Python process (the driver's planning process, every
executor's Python worker) attaches a worker of its own through ``quiver_native.VgiWorker``: the
engine role of VGI in the Rust core of quiver's DuckDB extension (``quiver-duckdb``: launching,
discovery, bind, split plans, init streams, filters), which links no DuckDB and is the code DuckDB's
scans run. The driver plans a table function's splits (``table_function_plan``) and hands each
partition the encoded ``init`` of one split; an executor opens it on its worker, so a partition is
exactly what a DuckDB scan thread redeems. Running DuckDB with quiver's extension in each executor
instead would also work, but it cannot redeem one given split (a SQL query plans its own scan),
adds a DuckDB per executor, and copies every batch through DuckDB's vectors and back; the engine
role under Python is the same Rust without those, and no second VGI implementation exists.

pyspark is imported only when the Spark parts are first used, so ``import quiver.spark`` works
without it. The module's names: :class:`QuiverDataSource` (``quiver.spark.source``),
:func:`apply_scalar` and :func:`apply_table` (``quiver.spark.functions``), :func:`local_cluster`
(``quiver.spark.cluster``: a local-cluster session with the source registered).
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "QuiverDataSource": "quiver.spark.source",
    "apply_scalar": "quiver.spark.functions",
    "apply_table": "quiver.spark.functions",
    "local_cluster": "quiver.spark.cluster",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'quiver.spark' has no attribute {name!r}")
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as error:
        if error.name != "pyspark":
            raise
        raise ImportError(
            f"quiver.spark.{name} needs pyspark (4.3; ./quiver test-spark sets up .venv-spark)"
        ) from error
