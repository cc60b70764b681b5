"""A worker's scalar and table-in-out functions over Spark DataFrames, through ``mapInArrow``.

Every partition is one call on the worker of the executor process that runs it (attached on first
use, ``launch:`` starting one per process), its batches fed to the call's exchange stream as
DuckDB's threads feed theirs.

    apply_scalar(df, "launch:target/release/quiver-allinone", "upper_case", ["s"], "upper")
    apply_table(df, "launch:target/release/quiver-allinone", "echo")
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from quiver.spark import arguments, workers


def apply_scalar(
    df: DataFrame,
    worker: str,
    function: str,
    columns: Sequence[str],
    output: str,
) -> DataFrame:
    """``df`` with the column ``output`` added: ``function`` of ``columns``.

    The columns are its arguments in order, each cast to the type the function declares, as
    DuckDB casts them.
    """
    declared = workers.function(worker, function)["arguments"]
    parameters = [f for f in declared if not arguments.is_named(f)]
    if len(columns) != len(parameters):
        raise ValueError(f"{function}() takes {len(parameters)} arguments, {len(columns)} columns given")
    source = to_arrow_schema(df.schema, timezone="UTC")
    inputs = pa.schema(
        [
            pa.field(p.name, source.field(c).type if arguments.is_any(p) else p.type)
            for p, c in zip(parameters, columns, strict=True)
        ]
    )
    constants = arguments.batch(pa.schema([]))
    result = _output_schema(worker, function, constants, inputs)
    schema = StructType([*df.schema.fields, StructField(output, from_arrow_type(result.field(0).type))])
    wanted = to_arrow_schema(schema, timezone="UTC")

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Built here: a batch of no columns loses its one row when pickled.
        call = workers.attach(worker).call(function, arguments.batch(pa.schema([])), inputs)
        for batch in batches:
            data = pa.RecordBatch.from_arrays(
                [batch.column(c).cast(f.type) for c, f in zip(columns, inputs, strict=True)], schema=inputs
            )
            answer, _ = call.exchange(data)
            merged = pa.RecordBatch.from_arrays([*batch.columns, answer.column(0)], names=wanted.names)
            yield merged.cast(wanted)
        for _ in call.finish():
            pass

    return df.mapInArrow(run, schema)


def apply_table(
    df: DataFrame, worker: str, function: str, positional: Sequence[Any] = (), named: dict[str, Any] | None = None
) -> DataFrame:
    """``function`` (table-in-out) over each partition of ``df``.

    Every input batch goes in and every output batch comes out (a batch answered in parts is read
    to its last part), then the output of its finalize phase, if it has one.
    """
    declared = workers.function(worker, function)["arguments"]
    constants = arguments.batch(declared, positional, named)
    inputs = to_arrow_schema(df.schema, timezone="UTC")
    result = _output_schema(worker, function, constants, inputs)
    schema = StructType([StructField(f.name, from_arrow_type(f.type), f.nullable) for f in result])
    wanted = to_arrow_schema(schema, timezone="UTC")

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Built here: a batch of no columns loses its one row when pickled.
        call = workers.attach(worker).call(function, arguments.batch(declared, positional, named), inputs)
        for batch in batches:
            answer, more = call.exchange(batch.cast(inputs))
            yield answer.cast(wanted)
            while more:
                answer, more = call.exchange(None)
                yield answer.cast(wanted)
        for answer in call.finish():
            yield answer.cast(wanted)

    return df.mapInArrow(run, schema)


def _output_schema(worker: str, function: str, constants: pa.RecordBatch, inputs: pa.Schema) -> pa.Schema:
    """The columns a call over ``inputs`` answers, as the worker binds it (then closed)."""
    call = workers.attach(worker).call(function, constants, inputs)
    schema = call.output_schema
    for _ in call.finish():
        pass
    return schema
