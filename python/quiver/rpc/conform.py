"""Server-side checks that make incoming and outgoing batches fit what a method declares."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .method import MethodSpec, Param


def decode_params(spec: MethodSpec, batch: pa.RecordBatch) -> dict[str, Any]:
    """Checks a request batch against the declared parameters and decodes its values.

    Columns are matched by name; a parameter with a default may be absent. Raises
    ``TypeError`` (or ``KeyError`` for an unknown enum member) with the message a
    vgi-rpc client expects.
    """
    if batch.schema.equals(spec.params_schema):
        return {
            param.name: _value(spec, param, column) for param, column in zip(spec.params, batch.columns, strict=True)
        }
    return _decode_by_name(spec, batch)


def _decode_by_name(spec: MethodSpec, batch: pa.RecordBatch) -> dict[str, Any]:
    """The checks and decoding for a request whose schema differs from the declared one."""
    names = batch.schema.names
    declared = {param.name: param for param in spec.params}
    unknown = [name for name in names if name not in declared]
    if unknown:
        raise TypeError(
            f"Request carries parameter(s) this protocol does not declare: {', '.join(unknown)}. "
            f"Declared: {', '.join(declared)}. The caller and this worker disagree about the method "
            "signature — check their protocol versions."
        )
    if len(set(names)) != len(names):
        raise TypeError(f"{spec.name}() request batch repeats a parameter: {', '.join(names)}")
    missing = [param.name for param in spec.params if param.required and param.name not in names]
    if missing:
        raise TypeError(f"{spec.name}() missing required argument(s): {', '.join(repr(name) for name in missing)}")
    values: dict[str, Any] = {}
    for param in spec.params:
        if param.name not in names:
            values[param.name] = param.default
            continue
        field = batch.schema.field(param.name)
        if field.type != param.codec.arrow_type:
            raise TypeError(
                f"{spec.name}() parameter '{param.name}' expected Arrow type {param.codec.arrow_type} "
                f"but the request batch carried {field.type}"
            )
        if field.nullable != param.codec.nullable:
            raise TypeError(
                f"{spec.name}() parameter '{param.name}' expected nullable={param.codec.nullable}, "
                f"but the request batch carried nullable={field.nullable}"
            )
        values[param.name] = _value(spec, param, batch.column(param.name))
    return values


def _value(spec: MethodSpec, param: Param, column: pa.Array) -> Any:
    scalar = column[0]
    if not scalar.is_valid and not param.codec.nullable:
        raise TypeError(f"{spec.name}() parameter '{param.name}' is not optional but got None")
    return param.codec.from_scalar(scalar)


def conform_input(declared: pa.Schema, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Reorders and casts an input batch to the declared input schema.

    Raises ``TypeError("Input schema mismatch: ...")`` when the field names differ or a
    cast fails.
    """
    if batch.schema.equals(declared):
        return batch
    if sorted(batch.schema.names) != sorted(declared.names):
        raise TypeError(f"Input schema mismatch: expected {declared}, got {batch.schema}")
    try:
        return _select_and_cast(declared, batch)
    except (pa.ArrowException, ValueError) as exc:
        raise TypeError(f"Input schema mismatch: expected {declared}, got {batch.schema}") from exc


def conform_output(schema: pa.Schema, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Selects the output schema's columns from an emitted batch by name, casting as needed."""
    if batch.schema.equals(schema):
        return batch
    try:
        return _select_and_cast(schema, batch)
    except (KeyError, pa.ArrowException, ValueError) as exc:
        raise TypeError(f"Output batch does not fit the output schema: expected {schema}, got {batch.schema}") from exc


def _select_and_cast(schema: pa.Schema, batch: pa.RecordBatch) -> pa.RecordBatch:
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            raise KeyError(field.name)
        column = batch.column(index)
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
