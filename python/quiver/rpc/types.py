"""Python type hints to Arrow types, and Python values to Arrow values and back.

=============================================  ===========================================
Python annotation                              Arrow field
=============================================  ===========================================
``str`` / ``bytes`` / ``int`` / ``float``      ``utf8`` / ``binary`` / ``int64`` / ``float64``
``bool``                                       ``bool``
``X | None``                                   the type of ``X``, nullable
``Annotated[X, ArrowType(t)]``                 ``t`` (``ArrowType(t, nullable=...)`` overrides)
``Enum`` subclass                              ``dictionary<int16, utf8>`` of the member *name*
``list[T]`` / ``frozenset[T]``                 ``list<item: T>`` (items always nullable)
``dict[K, V]``                                 ``map<K, V>``
dataclass, top level (parameter, result)       ``binary``: a complete IPC stream of one row
dataclass, nested                              ``struct`` of its fields
``pa.RecordBatch``                             ``binary``: a complete IPC stream
``pa.Schema``                                  ``binary``: one serialized schema message
=============================================  ===========================================

Fields are non-null unless the annotation is optional. Every mapping is computed once
per annotation and cached.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import pyarrow as pa

from ..wire.writer import encode_stream

ENUM_TYPE = pa.dictionary(pa.int16(), pa.string())
_SIMPLE: dict[Any, pa.DataType] = {
    str: pa.string(),
    bytes: pa.binary(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


@dataclass(frozen=True, slots=True)
class ArrowType:
    """``Annotated`` marker choosing the Arrow type (and optionally the nullability) of a value.

    >>> count: Annotated[int, ArrowType(pa.int32())]
    """

    arrow_type: pa.DataType
    nullable: bool | None = None


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class Codec:
    """How one annotated value travels: Arrow type, nullability, and the two conversions.

    ``encode`` turns a Python value into something ``pa.array(..., type=arrow_type)``
    accepts; ``decode`` turns ``Scalar.as_py()`` back into the annotated Python type.
    """

    arrow_type: pa.DataType
    nullable: bool
    encode: Callable[[Any], Any] = _identity
    decode: Callable[[Any], Any] = _identity

    def field(self, name: str) -> pa.Field:
        """An Arrow field of this codec's type and nullability."""
        return pa.field(name, self.arrow_type, nullable=self.nullable)

    def to_array(self, value: Any) -> pa.Array:
        """A one-element array holding ``value``."""
        return pa.array([self.encode(value)], type=self.arrow_type)

    def from_scalar(self, scalar: pa.Scalar) -> Any:
        """The Python value of one Arrow scalar."""
        return self.decode(scalar.as_py())


@cache
def codec_for(annotation: Any, *, top_level: bool = True) -> Codec:
    """The codec of a type hint; ``top_level`` puts dataclasses in binary IPC instead of structs.

    Raises ``TypeError`` for a hint with no Arrow mapping.
    """
    base, optional, markers = unwrap(annotation)
    marker = next((m for m in markers if isinstance(m, ArrowType)), None)
    binary_dataclass = top_level or (marker is not None and marker.arrow_type == pa.binary())
    arrow_type, encode, decode = _convert(base, binary_dataclass)
    if marker is not None:
        arrow_type = marker.arrow_type
    if arrow_type is None:
        raise TypeError(f"cannot map {annotation!r} to an Arrow type; use Annotated[T, ArrowType(...)]")
    nullable = marker.nullable if marker is not None and marker.nullable is not None else optional
    return Codec(arrow_type, nullable, encode, decode)


def unwrap(annotation: Any) -> tuple[Any, bool, tuple[Any, ...]]:
    """Peels ``Annotated`` and ``Optional`` wrappers in any order: (base, optional, markers)."""
    current, optional, markers = annotation, False, list[Any]()
    while True:
        origin, args = get_origin(current), get_args(current)
        if origin is Annotated:
            current = args[0]
            markers.extend(args[1:])
            continue
        if origin in (Union, types.UnionType):
            others = [arg for arg in args if arg is not type(None)]
            if len(others) == 1 and len(args) == 2:
                current, optional = others[0], True
                continue
        if hasattr(current, "__supertype__"):
            current = current.__supertype__
            continue
        return current, optional, tuple(markers)


_Conversion = tuple[pa.DataType | None, Callable[[Any], Any], Callable[[Any], Any]]


def _convert(base: Any, binary_dataclass: bool) -> _Conversion:
    if base in _SIMPLE:
        return _SIMPLE[base], _identity, _identity
    if isinstance(base, type) and issubclass(base, Enum):
        return ENUM_TYPE, _nullsafe(_enum_encoder(base)), _nullsafe(_enum_decoder(base))
    if dataclasses.is_dataclass(base) and isinstance(base, type):
        return _dataclass_conversion(base, binary_dataclass)
    if base is pa.RecordBatch:
        return pa.binary(), _nullsafe(_batch_to_ipc), _nullsafe(_batch_from_ipc)
    if base is pa.Schema:
        return pa.binary(), _nullsafe(_schema_to_ipc), _nullsafe(_schema_from_ipc)
    if base in (list, frozenset, dict):
        raise TypeError(f"{base.__name__} needs element types, e.g. list[int] or dict[str, int]")
    origin = get_origin(base)
    if origin in (list, frozenset):
        return _list_conversion(base, origin)
    if origin is dict:
        return _map_conversion(base)
    return None, _identity, _identity


def _list_conversion(base: Any, origin: type) -> _Conversion:
    (item_hint,) = get_args(base)
    item_type, encode_item, decode_item = _nested(item_hint)
    arrow_type = None if item_type is None else pa.list_(item_type)
    encode: Callable[[Any], Any] = _identity
    if origin is not list or encode_item is not _identity:
        encode = _nullsafe(lambda values: [encode_item(value) for value in values])
    decode: Callable[[Any], Any] = _identity
    if origin is frozenset:
        decode = _nullsafe(lambda values: frozenset(decode_item(value) for value in values))
    elif decode_item is not _identity:
        decode = _nullsafe(lambda values: [decode_item(value) for value in values])
    return arrow_type, encode, decode


def _map_conversion(base: Any) -> _Conversion:
    key_hint, value_hint = get_args(base)
    key_type, encode_key, decode_key = _nested(key_hint)
    value_type, encode_value, decode_value = _nested(value_hint)
    arrow_type = None if key_type is None or value_type is None else pa.map_(key_type, value_type)
    encode = _nullsafe(lambda mapping: [(encode_key(k), encode_value(v)) for k, v in mapping.items()])
    decode = _nullsafe(lambda pairs: {decode_key(k): decode_value(v) for k, v in pairs})
    return arrow_type, encode, decode


def _nested(hint: Any) -> _Conversion:
    """The conversion of a container element, lenient about unknown leaves.

    Unknown leaves stay unconverted; the outer ``ArrowType`` must then name the whole type.
    """
    try:
        codec = codec_for(hint, top_level=False)
    except TypeError:
        return _convert(unwrap(hint)[0], False)
    return codec.arrow_type, codec.encode, codec.decode


def _nullsafe(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert_or_none(value: Any) -> Any:
        return None if value is None else convert(value)

    return convert_or_none


def _enum_encoder(cls: type[Enum]) -> Callable[[Any], str]:
    def encode(member: Any) -> str:
        if isinstance(member, cls):
            return member.name
        if isinstance(member, str) and member in cls.__members__:
            return member
        raise TypeError(f"expected a {cls.__name__} member, got {member!r}")

    return encode


def _enum_decoder(cls: type[Enum]) -> Callable[[Any], Enum]:
    def decode(name: Any) -> Enum:
        if name in cls.__members__:
            return cls[name]
        try:
            return cls(name)
        except ValueError:
            raise KeyError(f"{name!r} is not a valid {cls.__name__} name or value") from None

    return decode


# ---------------------------------------------------------------------------------------
# dataclasses


@dataclass(frozen=True, slots=True)
class _DataclassPlan:
    schema: pa.Schema
    fields: tuple[tuple[str, Codec], ...]


_PLANS: dict[type, _DataclassPlan] = {}


def _plan(cls: type) -> _DataclassPlan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> _DataclassPlan:
    hints = get_type_hints(cls, include_extras=True)
    fields = tuple((f.name, _field_codec(cls, f.name, hints[f.name])) for f in dataclasses.fields(cls) if f.init)
    schema = pa.schema([codec.field(name) for name, codec in fields])
    return _DataclassPlan(schema, fields)


def _field_codec(cls: type, name: str, hint: Any) -> Codec:
    try:
        return codec_for(hint, top_level=False)
    except TypeError as exc:
        raise TypeError(f"{cls.__name__}.{name}: {exc}") from exc


def dataclass_schema(cls: type) -> pa.Schema:
    """The Arrow schema of a dataclass (cached)."""
    return _plan(cls).schema


def dataclass_to_batch(value: Any) -> pa.RecordBatch:
    """A one-row batch holding a dataclass instance."""
    plan = _plan(type(value))
    arrays = [pa.array([codec.encode(getattr(value, name))], type=codec.arrow_type) for name, codec in plan.fields]
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


def dataclass_from_batch(cls: type, batch: pa.RecordBatch) -> Any:
    """Rebuilds a dataclass from a one-row batch, matching columns by name."""
    if batch.num_rows != 1:
        raise ValueError(f"a {cls.__name__} batch must have exactly 1 row, got {batch.num_rows}")
    plan = _plan(cls)
    names = set(batch.schema.names)
    missing = [name for name, _ in plan.fields if name not in names]
    if missing:
        raise TypeError(f"{cls.__name__} batch lacks field(s): {', '.join(missing)}")
    return cls(**{name: codec.from_scalar(batch.column(name)[0]) for name, codec in plan.fields})


def _dataclass_conversion(cls: type, binary: bool) -> _Conversion:
    plan = _plan(cls)
    if binary:
        return pa.binary(), _nullsafe(_dataclass_to_ipc), _nullsafe(lambda data: _dataclass_from_ipc(cls, data))
    struct = pa.struct(list(plan.schema))

    def encode(value: Any) -> dict[str, Any]:
        return {name: codec.encode(getattr(value, name)) for name, codec in plan.fields}

    def decode(row: dict[str, Any]) -> Any:
        return cls(**{name: codec.decode(row[name]) for name, codec in plan.fields})

    return struct, _nullsafe(encode), _nullsafe(decode)


def _dataclass_to_ipc(value: Any) -> bytes:
    return _batch_to_ipc(dataclass_to_batch(value))


def _dataclass_from_ipc(cls: type, data: bytes) -> Any:
    return dataclass_from_batch(cls, _batch_from_ipc(data))


def _batch_to_ipc(batch: pa.RecordBatch) -> bytes:
    return bytes(encode_stream(batch))


def _batch_from_ipc(data: bytes) -> pa.RecordBatch:
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    batch = reader.read_next_batch()
    batch.validate(full=True)
    return batch


def _schema_to_ipc(schema: pa.Schema) -> bytes:
    return bytes(schema.serialize())


def _schema_from_ipc(data: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(data))


__all__ = [
    "ENUM_TYPE",
    "ArrowType",
    "Codec",
    "codec_for",
    "dataclass_from_batch",
    "dataclass_schema",
    "dataclass_to_batch",
    "unwrap",
]
