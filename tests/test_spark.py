"""quiver workers under Apache Spark (PySpark 4.3, ``local-cluster[2,1,1024]``: two executors, each a
JVM of its own with Python workers of its own), checked row for row against DuckDB with quiver's
extension running the same functions of the same workers with the same arguments.

Opt-in (the JVM and executors take a while): ``./quiver test-spark`` runs this file in .venv-spark.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, IsNotNull, LessThan, Not

from extension_support import connect
from quiver.spark import QuiverDataSource, apply_scalar, apply_table, local_cluster, workers

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("QUIVER_BIN", ROOT / "target" / "release"))
RUST = "launch:" + str(BIN / "quiver-allinone")
WORKERS = {
    "rust": RUST,
    "python": f"launch:{sys.executable} -m quiver.vgi.allinone",
    "java": "launch:" + str(ROOT / "java" / "bin" / "quiver-allinone-java"),
}
JAR = ROOT / "java" / "target" / "quiver-java-0.1.0.jar"
READINGS = f"launch:{sys.executable} {ROOT / 'tests' / 'spark_worker.py'}"
EXECUTORS = 2
# How long the cluster may take to register its executors on a loaded machine.
STARTUP_DEADLINE_S = 300.0


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_cluster(EXECUTORS, "quiver-test-spark", STARTUP_DEADLINE_S)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def duck(extension: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(extension)
    yield con
    con.close()


def attached(duck: duckdb.DuckDBPyConnection, location: str) -> str:
    """The catalog name ``location`` is attached as in DuckDB (once per session)."""
    name = "w_" + str(abs(hash(location)))
    if not duck.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = ?", [name]).fetchall():
        duck.execute(f"ATTACH '{location}' AS {name} (TYPE quiver)")
    return name


def read(spark: SparkSession, worker: str, function: str, args: str, named: str = "{}", **options: str) -> DataFrame:
    reader = spark.read.format("quiver").option("worker", worker).option("function", function)
    reader = reader.option("args", args).option("named", named)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows(df: DataFrame) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def duck_rows(duck: duckdb.DuckDBPyConnection, query: str) -> list[tuple]:
    return sorted(duck.execute(query).fetchall(), key=repr)


@pytest.mark.parametrize("sdk", list(WORKERS))
def test_a_split_plan_is_one_partition_per_split(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection, sdk: str
) -> None:
    if sdk == "java" and not JAR.is_file():
        pytest.fail(f"the Java worker is not built ({JAR} missing); run java/build.sh")
    df = read(spark, WORKERS[sdk], "split_numbers", "[100000]", '{"splits": 7}')
    assert df.rdd.getNumPartitions() == 7
    w = attached(duck, WORKERS[sdk])
    assert rows(df) == duck_rows(duck, f"SELECT n FROM {w}.split_numbers(100000, splits := 7)")


def test_a_scan_without_splits_reads_in_parallel_slots(spark: SparkSession, duck: duckdb.DuckDBPyConnection) -> None:
    df = read(spark, RUST, "numbers", "[300000]", '{"batch_rows": 1000}', slots="4")
    assert df.rdd.getNumPartitions() == 1
    w = attached(duck, RUST)
    assert rows(df) == duck_rows(duck, f"SELECT n FROM {w}.numbers(300000, batch_rows := 1000)")


def test_projection_and_filters_match_duckdb(spark: SparkSession, duck: duckdb.DuckDBPyConnection) -> None:
    w = attached(duck, READINGS)
    where = "id >= 1000 AND id < 40000 AND sensor IN ('north', 'straße') AND value IS NOT NULL AND NOT id = 2000"
    df = read(spark, READINGS, "readings", "[50000]", '{"splits": 6}').filter(where).select("value", "id")
    expected = duck_rows(duck, f"SELECT value, id FROM {w}.readings(50000, splits := 6) WHERE {where}")
    assert len(expected) > 1000
    assert rows(df) == expected
    # A read given a narrower schema asks the worker for those columns alone.
    narrow = spark.read.format("quiver").schema("sensor STRING, id BIGINT").option("worker", READINGS)
    narrow = narrow.option("function", "readings").option("args", "[5000]").load()
    assert rows(narrow) == duck_rows(duck, f"SELECT sensor, id FROM {w}.readings(5000)")


def test_the_worker_receives_the_pushed_filters_and_columns(spark: SparkSession) -> None:
    """The reader as Spark drives it, in this process: filters the function accepts reach the
    worker, which then answers fewer rows (they are handed back to Spark as well: no SDK declares
    that it applies them exactly), and the projection reaches it too.
    """
    source = QuiverDataSource({"worker": RUST, "function": "numbers", "args": "[100000]"})
    reader = source.reader(source.schema())
    filters = [GreaterThanOrEqual(("n",), 99000), In(("n",), (5, 99001, 99002, 99003)), Not(EqualTo(("n",), 99002))]
    odd = LessThan(("no_such_column",), 1)
    assert list(reader.pushFilters([*filters, odd])) == [*filters, odd]
    got = sorted(n for p in reader.partitions() for b in reader.read(p) for n in b.column("n").to_pylist())
    assert set(got) >= {99001, 99003} and len(got) < 1000
    # A function without filter pushdown is handed everything back.
    plain = QuiverDataSource({"worker": RUST, "function": "split_numbers", "args": "[10]"})
    plain_reader = plain.reader(plain.schema())
    assert list(plain_reader.pushFilters([IsNotNull(("n",))])) == [IsNotNull(("n",))]
    # Projection: the worker answers the read's columns alone.
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    narrow = QuiverDataSource({"worker": READINGS, "function": "readings", "args": "[1000]", "named": '{"splits": 2}'})
    narrow_reader = narrow.reader(StructType([StructField("sensor", StringType()), StructField("id", LongType())]))
    plan = narrow_reader.call.plan(narrow_reader.columns)
    assert plan["schema"].names == ["sensor", "id"] and len(plan["requests"]) == 2
    answers = [b for r in plan["requests"] for b in workers.attach(READINGS).redeem(r, plan["schema"])]
    assert {tuple(b.schema.names) for b in answers} == {("sensor", "id")}
    assert sorted(i for b in answers for i in b.column("id").to_pylist()) == list(range(1000))


def test_a_scalar_over_a_dataframe_matches_duckdb(spark: SparkSession, duck: duckdb.DuckDBPyConnection) -> None:
    words = ["straße", "ﬁne", None, "abc", "Ωmega", "", "mixed Case 123"] * 300
    table = pa.table({"i": pa.array(range(len(words)), pa.int64()), "s": pa.array(words, pa.string())})
    df = spark.createDataFrame(table.to_pandas()).repartition(4)
    out = apply_scalar(df, RUST, "upper_case", ["s"], "upper")
    w = attached(duck, RUST)
    duck.register("words", table)
    assert rows(out) == duck_rows(duck, f"SELECT i, s, {w}.upper_case(s) FROM words")
    duck.unregister("words")


def test_a_table_in_out_function_over_a_dataframe_matches_duckdb(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection
) -> None:
    table = pa.table({"i": pa.array(range(20000), pa.int64()), "x": pa.array([i / 3 for i in range(20000)])})
    df = spark.createDataFrame(table.to_pandas()).repartition(3)
    out = apply_table(df, RUST, "echo")
    w = attached(duck, RUST)
    duck.register("input_rows", table)
    assert rows(out) == duck_rows(duck, f"SELECT * FROM {w}.echo((SELECT * FROM input_rows))")
    duck.unregister("input_rows")


def test_finalize_and_answers_in_parts_add_up_as_in_duckdb(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection
) -> None:
    table = pa.table({"i": pa.array(range(30000), pa.int64())})
    df = spark.createDataFrame(table.to_pandas()).repartition(3)
    out = apply_table(df, READINGS, "tally")
    w = attached(duck, READINGS)
    duck.register("tallied", table)
    expected = duck.execute(f"SELECT sum(rows) FROM {w}.tally((SELECT * FROM tallied))").fetchall()[0][0]
    duck.unregister("tallied")
    assert expected == 2 * 30000
    assert out.agg({"rows": "sum"}).collect()[0][0] == expected
    # Three calls: each answers its batches in two parts and ends with its total.
    assert out.filter("rows = 0").count() == out.filter("rows > 0").count() - 3


def test_a_worker_error_fails_the_job_by_its_message_and_the_worker_serves_on(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection
) -> None:
    df = spark.createDataFrame([(4.0,), (-9.0,), (16.0,)], "x double").repartition(2)
    with pytest.raises(Exception, match="cannot take the square root of -9"):
        apply_scalar(df, READINGS, "checked_sqrt", ["x"], "root").collect()
    w = attached(duck, READINGS)
    with pytest.raises(duckdb.Error, match="cannot take the square root of -9"):
        duck.execute(f"SELECT {w}.checked_sqrt(x) FROM (VALUES (4.0), (-9.0)) t(x)").fetchall()
    good = apply_scalar(df.filter("x >= 0"), READINGS, "checked_sqrt", ["x"], "root")
    assert rows(good) == [(16.0, 4.0), (4.0, 2.0)]


def test_each_executor_reaches_its_own_worker(spark: SparkSession) -> None:
    def worker_of(_: Iterator) -> Iterator[tuple[int, tuple[int, ...]]]:
        yield os.getpid(), tuple(workers.attach(RUST).pids())

    # As many tasks as cores: the first offer gives every executor one.
    seen = dict(spark.sparkContext.parallelize(range(EXECUTORS), EXECUTORS).mapPartitions(worker_of).collect())
    assert len(seen) == EXECUTORS, seen
    pids = [set(p) for p in seen.values()]
    assert all(pids) and not set.intersection(*pids), seen


def test_a_bad_call_is_named(spark: SparkSession) -> None:
    with pytest.raises(Exception, match="no function 'nope'"):
        read(spark, RUST, "nope", "[]").collect()
    with pytest.raises(Exception, match="positional arguments"):
        read(spark, RUST, "split_numbers", "[1, 2, 3]").collect()
