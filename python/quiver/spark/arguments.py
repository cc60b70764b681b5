"""A call's arguments as the engine role takes them.

One row, a column ``positional_<i>`` per positional argument and ``named_<name>`` per named
one, each of the type the function declares (DuckDB casts a SQL literal to it the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

# Field metadata keys of a VGI parameter (crates/quiver-vgi-contract's arg_metadata).
_ARG = b"vgi_arg"
_TYPE = b"vgi_type"


def is_named(field: pa.Field) -> bool:
    return (field.metadata or {}).get(_ARG) == b"named"


def is_table(field: pa.Field) -> bool:
    return (field.metadata or {}).get(_TYPE) == b"table"


def is_any(field: pa.Field) -> bool:
    return (field.metadata or {}).get(_TYPE) == b"any"


def batch(
    declared: pa.Schema, positional: Sequence[Any] = (), named: Mapping[str, Any] | None = None
) -> pa.RecordBatch:
    """The arguments batch for a function declaring ``declared``.

    TABLE parameters are skipped (the input travels as the stream). A wrong count or name is
    refused by name.
    """
    named = dict(named or {})
    slots = [f for f in declared if not is_named(f) and not is_table(f)]
    by_name = {f.name: f for f in declared if is_named(f)}
    if len(positional) > len(slots):
        raise ValueError(f"{len(positional)} positional arguments given, the function takes {len(slots)}")
    unknown = sorted(set(named) - set(by_name))
    if unknown:
        raise ValueError(f"unknown named arguments {unknown}; the function takes {sorted(by_name)}")
    columns: dict[str, pa.Array] = {}
    for i, value in enumerate(positional):
        columns[f"positional_{i}"] = _value(slots[i], value)
    for name, value in named.items():
        columns[f"named_{name}"] = _value(by_name[name], value)
    if not columns:
        # No arguments: one row of no columns.
        return pa.RecordBatch.from_struct_array(pa.array([{}], pa.struct([])))
    return pa.RecordBatch.from_pydict(columns)


def _value(field: pa.Field, value: Any) -> pa.Array:
    if is_any(field):
        return pa.array([value])
    return pa.array([value], type=field.type)
