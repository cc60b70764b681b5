"""The ``quiver`` Spark data source: a worker's table function read as partitions.

    spark.dataSource.register(QuiverDataSource)
    df = (spark.read.format("quiver")
          .option("worker", "launch:target/release/quiver-allinone")
          .option("function", "split_numbers")
          .option("args", "[1000000]")            # positional arguments, a JSON list
          .option("named", '{"splits": 8}')       # named arguments, a JSON object
          .load())

The driver attaches the worker and binds the call (the schema is the bound output). A function
with a split plan is planned in the driver, one partition per split: a partition carries the
encoded ``init`` of its split, which any executor redeems on its own worker. A function without one
is one partition, read by up to ``slots`` parallel streams of the worker's own parallel scan
(option ``slots``, default 1): those streams share one execution inside one worker, which
processes on other machines cannot join, so they are not spread over executors.

Projection: Spark 4.3's Python data sources are told no required columns, so the projection is the
schema the read is given (``spark.read.format("quiver").schema("n BIGINT")``): its columns, by
name, become the scan's ``projection_ids`` where the function honours them. Filters: Spark's
pushed filters (``spark.sql.python.filterPushdown.enabled``) that the function accepts go to the
worker; those it applies exactly (``filters_exactly_applied``) are not returned to Spark, the rest
(advisory, or not translatable) Spark evaluates as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from quiver.spark import arguments, workers
from quiver.spark.filters import Translated


class QuiverPartition(InputPartition):
    """One split's encoded ``init`` (``request``); ``None``: a whole scan without a split plan."""

    def __init__(self, request: bytes | None) -> None:
        super().__init__(request)
        self.request = request


class QuiverDataSource(DataSource):
    """Reads a quiver worker's table function; see the module's documentation for the options."""

    @classmethod
    def name(cls) -> str:
        return "quiver"

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.call = Call.of(options)

    def schema(self) -> StructType:
        return from_arrow_schema(self.call.output_schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return QuiverReader(self.call, schema)


class Call:
    """A table function call as the options name it: worker, function, arguments, slots."""

    def __init__(self, worker: str, function: str, positional: list[Any], named: dict[str, Any], slots: int) -> None:
        self.worker = worker
        self.function = function
        self.positional = positional
        self.named = named
        self.slots = slots

    @classmethod
    def of(cls, options: Any) -> Call:
        for required in ("worker", "function"):
            if not options.get(required):
                raise ValueError(f"the quiver data source needs the option {required!r}")
        positional = json.loads(options.get("args") or "[]")
        named = json.loads(options.get("named") or "{}")
        if not isinstance(positional, list) or not isinstance(named, dict):
            raise ValueError("the option 'args' is a JSON list and 'named' a JSON object")
        slots = int(options.get("slots") or 1)
        if not 1 <= slots <= 1024:
            raise ValueError(f"the option 'slots' is 1..1024, got {slots}")
        return cls(options["worker"], options["function"], positional, named, slots)

    def arguments(self) -> pa.RecordBatch:
        declared = workers.function(self.worker, self.function)["arguments"]
        return arguments.batch(declared, self.positional, self.named)

    def output_schema(self) -> pa.Schema:
        return workers.attach(self.worker).output_schema(self.function, self.arguments())

    def plan(self, columns: list[int] | None = None, spec: str | None = None, values: Any = None) -> dict[str, Any]:
        worker = workers.attach(self.worker)
        return worker.plan_scan(self.function, self.arguments(), columns, spec, values)


class QuiverReader(DataSourceReader):
    def __init__(self, call: Call, schema: StructType) -> None:
        self.call = call
        self.schema = schema
        self.facts = workers.function(call.worker, call.function)
        self.unprojected: pa.Schema = call.output_schema()
        self.columns = self._projection(schema)
        self.spec: str | None = None
        self.values: pa.RecordBatch | None = None

    def _projection(self, schema: StructType) -> list[int] | None:
        names = schema.fieldNames()
        missing = [n for n in names if self.unprojected.get_field_index(n) < 0]
        if missing:
            raise ValueError(f"{self.call.function}() has no columns {missing} (it has {self.unprojected.names})")
        if names == self.unprojected.names or not self.facts["projection_pushdown"]:
            return None
        return [self.unprojected.get_field_index(n) for n in names]

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        if not self.facts["filter_pushdown"]:
            yield from filters
            return
        exact = bool(self.facts["filters_exactly_applied"])
        translated = Translated(self.unprojected)
        for spark_filter in filters:
            if not translated.add(spark_filter, required=exact) or not exact:
                yield spark_filter
        self.spec = translated.spec()
        self.values = translated.literals()

    def partitions(self) -> list[QuiverPartition]:
        plan = self.call.plan(self.columns, self.spec, self.values)
        requests = plan["requests"]
        if requests is None:
            return [QuiverPartition(None)]
        # A plan of no splits still needs one (empty) partition.
        return [QuiverPartition(r) for r in requests] or [QuiverPartition(b"")]

    def read(self, partition: QuiverPartition) -> Iterator[pa.RecordBatch]:
        worker = workers.attach(self.call.worker)
        wanted = to_arrow_schema(self.schema, timezone="UTC")
        if partition.request == b"":
            return
        if partition.request is None:
            batches = worker.scan(
                self.call.function,
                self.call.arguments(),
                self.columns,
                self.spec,
                self.values,
                self.call.slots,
            )
        else:
            batches = worker.redeem(partition.request, self._scan_schema())
        for batch in batches:
            yield _shaped(batch, self.schema.fieldNames(), wanted)

    def _scan_schema(self) -> pa.Schema:
        if self.columns is None:
            return self.unprojected
        return pa.schema([self.unprojected.field(i) for i in self.columns])


def _shaped(batch: pa.RecordBatch, names: list[str], wanted: pa.Schema) -> pa.RecordBatch:
    """``batch`` as Spark checks it: the read's columns in order, of the Arrow types it expects.

    A function that ignores the projection answers every column.
    """
    if batch.schema.names != names:
        batch = pa.RecordBatch.from_arrays([batch.column(n) for n in names], names=names)
    if not batch.schema.equals(wanted):
        batch = batch.cast(wanted)
    return batch
