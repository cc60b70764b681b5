"""The protocol hash: one digest of a protocol's wire surface, equal in every port.

The preimage is canonical JSON (sorted keys, no whitespace) of what the schemas decode
to, never of serialized schema bytes, which two Arrow implementations may spell
differently for the same schema::

    sha256(b"vgi_rpc.protocol_hash.v1|" + canonical_json({"protocol": name, "methods": [...]}))

Each method (sorted by name) contributes its name, ``"unary"`` or ``"stream"``,
``has_return``, ``has_header``, and its parameter, result (when it returns) and header
(when it has one) schemas as ordered lists of ``{"name", "nullable", "type"}``. A type
is a lowercase token (``int64``, ``timestamp(us,tz=UTC)``, ``list<item?:utf8>``); every
number is folded into a token, so the JSON holds only objects, arrays, strings and
booleans and no port has to agree with another on number formatting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from .method import MethodKind, MethodSpec

HASH_DOMAIN = b"vgi_rpc.protocol_hash.v1|"

_PARAMETERLESS: dict[pa.DataType, str] = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.int16(): "int16",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.uint8(): "uint8",
    pa.uint16(): "uint16",
    pa.uint32(): "uint32",
    pa.uint64(): "uint64",
    pa.float16(): "float16",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.string(): "utf8",
    pa.large_string(): "large_utf8",
    pa.string_view(): "utf8_view",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.binary_view(): "binary_view",
    pa.date32(): "date32",
    pa.date64(): "date64",
    pa.month_day_nano_interval(): "interval_month_day_nano",
}

_LIST_KINDS = (
    (pa.types.is_large_list, "large_list"),
    (pa.types.is_list, "list"),
    (pa.types.is_large_list_view, "large_list_view"),
    (pa.types.is_list_view, "list_view"),
)


class UnsupportedArrowTypeError(TypeError):
    """A type with no agreed token: spelling it our own way would change only our hash."""


def type_token(dtype: pa.DataType) -> str:
    """The canonical token of an Arrow type."""
    token = _PARAMETERLESS.get(dtype)
    if token is not None:
        return token
    if pa.types.is_fixed_size_binary(dtype):
        return f"fixed_size_binary({dtype.byte_width})"
    if pa.types.is_decimal128(dtype) or pa.types.is_decimal256(dtype):
        return f"decimal{dtype.bit_width}({dtype.precision},{dtype.scale})"
    if pa.types.is_time(dtype):
        return f"time{dtype.bit_width}({dtype.unit})"
    if pa.types.is_timestamp(dtype):
        return f"timestamp({dtype.unit})" if dtype.tz is None else f"timestamp({dtype.unit},tz={dtype.tz})"
    if pa.types.is_duration(dtype):
        return f"duration({dtype.unit})"
    if pa.types.is_interval(dtype):
        return "interval_day_time" if dtype == pa.day_time_interval() else "interval_months"
    if pa.types.is_fixed_size_list(dtype):
        return f"fixed_size_list({dtype.list_size})<{_anonymous(dtype.value_field, 'item')}>"
    for is_kind, kind in _LIST_KINDS:
        if is_kind(dtype):
            return f"{kind}<{_anonymous(dtype.value_field, 'item')}>"
    if pa.types.is_map(dtype):
        suffix = ",keys_sorted" if dtype.keys_sorted else ""
        return f"map<{_anonymous(dtype.key_field, 'key')},{_anonymous(dtype.item_field, 'value')}>{suffix}"
    if pa.types.is_struct(dtype):
        return f"struct<{','.join(_named(dtype.field(i)) for i in range(dtype.num_fields))}>"
    if pa.types.is_union(dtype):
        kind = "sparse_union" if dtype.mode == "sparse" else "dense_union"
        members = ",".join(f"{code}={_named(dtype.field(i))}" for i, code in enumerate(dtype.type_codes))
        return f"{kind}<{members}>"
    if pa.types.is_dictionary(dtype):
        suffix = ",ordered" if dtype.ordered else ""
        return f"dictionary<index:{type_token(dtype.index_type)},value:{type_token(dtype.value_type)}>{suffix}"
    if pa.types.is_run_end_encoded(dtype):
        return f"run_end_encoded<run_ends:{type_token(dtype.run_end_type)},values:{type_token(dtype.value_type)}>"
    if isinstance(dtype, pa.BaseExtensionType):
        return f"extension({dtype.extension_name})<{type_token(dtype.storage_type)}>"
    raise UnsupportedArrowTypeError(f"Arrow type {dtype} has no canonical token for the protocol hash")


def _named(field: pa.Field) -> str:
    """A struct or union child: its name is part of the type."""
    return _anonymous(field, field.name)


def _anonymous(field: pa.Field, name: str) -> str:
    """A list item or map key/value: Arrow's type equality ignores the child's name, so it is fixed here."""
    return f"{name}{'?' if field.nullable else ''}:{type_token(field.type)}"


def schema_tokens(schema: pa.Schema) -> list[dict[str, Any]]:
    """A schema's fields in declaration order (the order is part of the contract)."""
    return [{"name": f.name, "nullable": f.nullable, "type": type_token(f.type)} for f in schema]


def method_entry(spec: MethodSpec) -> dict[str, Any]:
    """One method's part of the preimage; an absent result differs from an empty one."""
    has_return = spec.kind is MethodKind.UNARY and spec.result is not None
    entry: dict[str, Any] = {
        "name": spec.name,
        "type": "unary" if spec.kind is MethodKind.UNARY else "stream",
        "has_return": has_return,
        "has_header": spec.header_schema is not None,
        "params": schema_tokens(spec.params_schema),
    }
    if has_return:
        entry["result"] = schema_tokens(spec.result_schema)
    if spec.header_schema is not None:
        entry["header"] = schema_tokens(spec.header_schema)
    return entry


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8; numbers are refused so their formatting never matters."""
    _refuse_numbers(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _refuse_numbers(value: Any) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            assert isinstance(key, str), f"preimage keys are strings, got {key!r}"
            _refuse_numbers(item)
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _refuse_numbers(item)
        return
    raise TypeError(f"the protocol-hash preimage holds no numbers or other values, got {value!r}")


def protocol_hash(name: str, methods: Mapping[str, MethodSpec]) -> str:
    """The lowercase hex SHA-256 of a protocol's canonical description."""
    preimage = {"protocol": name, "methods": [method_entry(methods[m]) for m in sorted(methods)]}
    return hashlib.sha256(HASH_DOMAIN + canonical_json(preimage)).hexdigest()
