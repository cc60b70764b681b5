"""Server-side checks that make incoming and outgoing batches fit what a method declares."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .method import MethodSpec, Param


def decode_params(spec: MethodSpec, batch: pa.RecordBatch) -> dict[str, Any]:
    """Checks a request batch against the declared parameters and decodes its values.

    The contract is vgi-rpc's: the declared names, in the declared order, with the
    declared Arrow types and nullability (schema and field metadata aside, which Arrow
    implementations do not all keep), and no null where a parameter is not nullable.
    Raises ``TypeError`` (or ``KeyError`` for an unknown enum member) with the message a
    vgi-rpc client expects.
    """
    if not batch.schema.equals(spec.params_schema):
        check_param_schema(spec, batch.schema)
    return {param.name: _value(spec, param, column) for param, column in zip(spec.params, batch.columns, strict=True)}


def check_param_schema(spec: MethodSpec, schema: pa.Schema) -> None:
    """Raises ``TypeError`` naming the first way ``schema`` breaks the declared parameters.

    Undeclared and missing names are reported first, as vgi-rpc does, so the message
    says what the caller got wrong; then field count, and field by field the name,
    type and nullability.
    """
    names = schema.names
    declared = {param.name: param for param in spec.params}
    unexpected = sorted(name for name in set(names) if name not in declared)
    if unexpected:
        raise TypeError(f"{spec.name}() got unexpected keyword argument(s): {', '.join(map(repr, unexpected))}")
    missing = sorted(param.name for param in spec.params if param.required and param.name not in names)
    if missing:
        raise TypeError(f"{spec.name}() missing required argument(s): {', '.join(map(repr, missing))}")
    if len(names) != len(spec.params_schema):
        raise TypeError(f"{spec.name}() parameter schema expected {len(spec.params_schema)} fields, got {len(names)}")
    for index, (field, want) in enumerate(zip(schema, spec.params_schema, strict=True)):
        if field.name != want.name:
            raise TypeError(
                f"{spec.name}() parameter schema field {index} expected name {want.name!r}, got {field.name!r}"
            )
        if field.type != want.type:
            raise TypeError(
                f"{spec.name}() parameter {field.name!r} expected Arrow type {want.type} "
                f"but the request batch carried {field.type}"
            )
        if field.nullable != want.nullable:
            raise TypeError(
                f"{spec.name}() parameter {field.name!r} expected nullable={want.nullable}, "
                f"but the request batch carried nullable={field.nullable}"
            )


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
