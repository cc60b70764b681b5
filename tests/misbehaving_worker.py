"""A VGI worker on quiver's Python SDK whose functions misbehave on purpose, for the engine's tests.

Each kind (scalar, table, table-in-out, buffered table) has one function per fault:

- ``*boom``: the body raises (a worker error the SDK reports as an EXCEPTION record);
- ``*wrong_type``: the body answers a column of another type than it declared;
- ``*wrong_rows`` (scalar only): one value fewer than input rows;
- ``*die``: the process kills itself with SIGKILL in the middle of the call.

The SDK refuses to send a wrong type or row count itself, so this worker replaces the SDK's output
checks (conforming, casting, the row-count check) with pass-throughs: what the bodies return goes on
the wire as it is, as a worker with a bug would send it. ``ok`` / ``t_ok`` / ``io_ok`` / ``b_ok`` behave, so a
test can show the connection goes on after a failure.

``--null-opaque-data``: every ``init`` header declares ``opaque_data`` non-nullable and carries a
null there, as vgi-java 0.26 does.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from quiver.rpc import dispatch
from quiver.vgi import Arg, Worker
from quiver.vgi import init as vgi_init
from quiver.vgi import wire as vgi_wire

NUMBERS = pa.schema([pa.field("n", pa.int64())])

worker = Worker("misbehaving", "functions that fail on purpose")


def die() -> None:
    sys.stderr.write("misbehaving worker: about to be killed\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def boom(what: str) -> None:
    sys.stderr.write(f"misbehaving worker: {what} raises now\n")
    sys.stderr.flush()
    raise ValueError(f"{what} failed on purpose")


# Scalars -------------------------------------------------------------------------------------------

TEXT = [Arg("s", pa.string())]


@worker.scalar(returns=pa.string(), args=TEXT)
def ok(s: pa.Array) -> pa.Array:
    return s


@worker.scalar(returns=pa.string(), args=TEXT, name="boom")
def scalar_boom(s: pa.Array) -> pa.Array:
    boom("boom()")
    return s


@worker.scalar(returns=pa.string(), args=TEXT)
def wrong_type(s: pa.Array) -> pa.Array:
    return pa.array(range(len(s)), pa.int64())


@worker.scalar(returns=pa.string(), args=TEXT)
def wrong_rows(s: pa.Array) -> pa.Array:
    return s.slice(1)


@worker.scalar(returns=pa.string(), args=TEXT, name="die")
def scalar_die(s: pa.Array) -> pa.Array:
    die()
    return s


# Table functions -----------------------------------------------------------------------------------


@worker.table(output=NUMBERS)
def t_ok(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64())], schema=NUMBERS)


@worker.table(output=NUMBERS)
def t_boom(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64())], schema=NUMBERS)
    boom("t_boom()")


@worker.table(output=NUMBERS)
def t_wrong_type(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_arrays([pa.array(["a", "b"])], names=["n"])


@worker.table(output=NUMBERS)
def t_die(args: dict[str, Any], scan: Any) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64())], schema=NUMBERS)
    die()


# Table-in-out functions ----------------------------------------------------------------------------

INPUT = [Arg.table_input("data")]


@worker.table_in_out(args=INPUT, output=NUMBERS)
def io_ok(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([batch.column(0).cast(pa.int64())], schema=NUMBERS)


@worker.table_in_out(args=INPUT, output=NUMBERS)
def io_boom(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    boom("io_boom()")
    return batch


@worker.table_in_out(args=INPUT, output=NUMBERS)
def io_wrong_type(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(["x"] * batch.num_rows)], names=["n"])


@worker.table_in_out(args=INPUT, output=NUMBERS)
def io_die(args: dict[str, Any], state: Any, batch: pa.RecordBatch) -> pa.RecordBatch:
    die()
    return batch


# Buffered table functions (the body runs once the whole input arrived) ------------------------------

COUNT = pa.schema([pa.field("n", pa.int64())])


@worker.buffered_table(args=INPUT, output=COUNT)
def b_ok(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([table.num_rows], pa.int64())], schema=COUNT)


@worker.buffered_table(args=INPUT, output=COUNT)
def b_boom(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    boom("b_boom()")
    return pa.RecordBatch.from_arrays([pa.array([0], pa.int64())], schema=COUNT)


@worker.buffered_table(args=INPUT, output=COUNT)
def b_wrong_type(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(["x"])], names=["n"])


@worker.buffered_table(args=INPUT, output=COUNT)
def b_die(args: dict[str, Any], table: pa.Table) -> pa.RecordBatch:
    die()
    return pa.RecordBatch.from_arrays([pa.array([0], pa.int64())], schema=COUNT)


# The SDK's checks, replaced by pass-throughs -------------------------------------------------------


class _RawScalar(vgi_init._ScalarState):
    def process(self, input: Any, out: Any, ctx: Any) -> None:
        result = self.bound.function.body(*input.batch.columns)
        out.emit(pa.RecordBatch.from_arrays([result], names=["result"]))


def _raw_shape(batch: pa.RecordBatch, schema: pa.Schema, filter: Any, projection: Any) -> pa.RecordBatch:
    return batch


# What the wrong-type bodies answer: their output streams carry it, as a worker with a bug would.
WIRE_SCHEMAS = {
    "wrong_type": pa.schema([pa.field("result", pa.int64())]),
    "t_wrong_type": pa.schema([pa.field("n", pa.string())]),
    "io_wrong_type": pa.schema([pa.field("n", pa.string())]),
    "b_wrong_type": pa.schema([pa.field("n", pa.string())]),
}
_init = vgi_init.InitMethods.init


def _init_on_wire_schema(self: Any, request: bytes) -> Any:
    stream = _init(self, request)
    name = vgi_wire.read_row(vgi_wire.read_row(request)["bind_call"])["function_name"]
    if name in WIRE_SCHEMAS:
        stream.output_schema = WIRE_SCHEMAS[name]
    return stream


def _null_opaque_header(header: Any) -> pa.RecordBatch:
    schema = pa.schema(
        [
            pa.field("execution_id", pa.binary(), nullable=False),
            pa.field("opaque_data", pa.binary(), nullable=False),
            pa.field("max_workers", pa.int64(), nullable=False),
        ]
    )
    columns = [pa.array([header.execution_id]), pa.array([None], pa.binary()), pa.array([header.max_workers])]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def main() -> None:
    vgi_init._ScalarState = _RawScalar
    vgi_init._shape = _raw_shape
    vgi_init.InitMethods.init = _init_on_wire_schema
    dispatch.conform_output = lambda schema, batch: batch
    argv = sys.argv[1:]
    if "--null-opaque-data" in argv:
        argv.remove("--null-opaque-data")
        dispatch.dataclass_to_batch = _null_opaque_header
    worker.main(argv)


if __name__ == "__main__":
    main()
