"""``bind``: resolve the function, check the call's shape and arguments, answer the output schema.

The output schema is the unprojected one. ``init`` repeats the same work from
``InitRequest.bind_call``, because a secondary connection never sees the bind; :func:`bind` is
therefore pure and cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import wire
from .catalog import resolve
from .errors import ArgumentValidationError, InvalidArgumentError
from .function import SCALAR, TABLE, TABLE_BUFFERING, TABLE_IN_OUT, Function, sql_name
from .log import log

if TYPE_CHECKING:
    from .worker import Worker


@dataclass
class Bound:
    function: Function
    args: dict[str, Any]
    input_schema: pa.Schema | None
    output_schema: pa.Schema


def bind(worker: Worker, request: dict[str, Any]) -> Bound:
    """Resolves a ``BindRequest`` row, checks the call's shape and arguments, computes the output schema."""
    function = resolve(worker.functions, request["function_name"], request.get("schema_path"))
    function_type = request.get("function_type") or "TABLE"
    input_schema = wire.read_schema(request.get("input_schema"))
    name = function.name
    if function.kind == SCALAR:
        if function_type != "SCALAR":
            raise InvalidArgumentError(f"{name}() is a scalar function, but was bound as {function_type}")
        if input_schema is None:
            raise InvalidArgumentError(f"{name}() is a scalar function: it needs its column arguments as input")
        if len(input_schema) != len(function.args):
            raise ArgumentValidationError(
                f"{name}() takes {len(function.args)} column argument(s), got {len(input_schema)}"
            )
        for index, (arg, column) in enumerate(zip(function.args, input_schema, strict=True)):
            if column.type != arg.type and column.type != pa.null():
                raise ArgumentValidationError(
                    f"{name}(): column argument {index} '{arg.name}' must be {_sql(arg.type)}, got {_sql(column.type)}"
                )
        args = function.bind_arguments(request.get("arguments"))
        return Bound(function, args, input_schema, pa.schema([pa.field("result", function.returns)]))
    kind_name = _KIND_NAMES[function.kind]
    expected = "TABLE_BUFFERING" if function.kind == TABLE_BUFFERING else "TABLE"
    if function_type != expected:
        raise InvalidArgumentError(f"{name}() is a {kind_name}, but was bound as {function_type}")
    if function.kind == TABLE and input_schema is not None:
        raise InvalidArgumentError(f"{name}() is a table function: it takes no input table")
    if function.kind != TABLE and input_schema is None:
        raise InvalidArgumentError(f"{name}() is a {kind_name}: it needs an input table")
    args = function.bind_arguments(request.get("arguments"))
    output = function.output
    if callable(output):
        output = output(input_schema, args)
    if output is None:
        output = input_schema
    return Bound(function, args, input_schema, output)


_KIND_NAMES = {
    TABLE: "table function",
    TABLE_IN_OUT: "table-in-out function",
    TABLE_BUFFERING: "buffered table function",
}


def _sql(arrow_type: pa.DataType) -> str:
    return sql_name(arrow_type)


class BindMethods:
    """The ``bind`` and ``table_function_cardinality`` methods of :class:`~quiver.vgi.protocol.VgiV2`."""

    worker: Worker

    def bind(self, request: bytes) -> bytes:
        bound = bind(self.worker, wire.read_row(request))
        log("debug", f"bind {bound.function.name}()")
        return wire.row_bytes(
            wire.BIND_RESPONSE,
            {
                "output_schema": wire.schema_bytes(bound.output_schema),
                "opaque_data": None,
                "lookup_secret_types": [],
                "lookup_scopes": [],
                "lookup_names": [],
            },
        )

    def table_function_cardinality(self, request: bytes) -> bytes:
        return wire.row_bytes(wire.TABLE_CARDINALITY, {"estimate": None, "max": None})
