"""Protocols: a Python class whose annotated methods are the remote API.

::

    class Calculator:
        protocol_version: ClassVar[str] = "1.0.0"       # optional; gates major.minor
        def add(self, a: float, b: float) -> float: ...
        def count(self, n: int) -> Stream[ProducerState]: ...
        def scale(self, factor: float) -> Stream[ExchangeState, Header]: ...

The wire name is the class name unless ``protocol_name`` says otherwise. Every public
function is a method: ``-> Stream[...]`` makes a stream, anything else is unary (``->
None`` is void). A parameter called ``ctx`` is the server's :class:`CallContext` and not
part of the wire signature. Everything here is derived once per class and cached.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_args, get_origin, get_type_hints

import pyarrow as pa

from .errors import is_semver
from .stream import EMPTY_SCHEMA, ExchangeState, ProducerState, Stream
from .types import Codec, codec_for, dataclass_schema, unwrap

CONTEXT_PARAMETER = "ctx"
RESULT_FIELD = "result"


class MethodKind(Enum):
    """How a method is called."""

    UNARY = "unary"
    PRODUCER = "producer"
    EXCHANGE = "exchange"


@dataclass(frozen=True, slots=True)
class Param:
    """One wire parameter."""

    name: str
    codec: Codec
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """Everything the wire needs to know about one method, computed once."""

    name: str
    kind: MethodKind
    params: tuple[Param, ...]
    params_schema: pa.Schema
    result: Codec | None
    result_schema: pa.Schema
    header_type: type | None
    header_schema: pa.Schema | None

    @property
    def is_stream(self) -> bool:
        return self.kind is not MethodKind.UNARY

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Binds call arguments to parameter names as Python would, defaults filled in."""
        if len(args) > len(self.params):
            raise TypeError(f"{self.name}() takes {len(self.params)} arguments but {len(args)} were given")
        values = {param.name: value for param, value in zip(self.params, args, strict=False)}
        for key, value in kwargs.items():
            if key in values:
                raise TypeError(f"{self.name}() got multiple values for argument '{key}'")
            values[key] = value
        unknown = set(values) - {param.name for param in self.params}
        if unknown:
            raise TypeError(f"{self.name}() got unexpected argument(s): {', '.join(sorted(unknown))}")
        for param in self.params:
            if param.name not in values:
                if param.required:
                    raise TypeError(f"{self.name}() missing required argument: '{param.name}'")
                values[param.name] = param.default
        return values

    def request_batch(self, arguments: Mapping[str, Any]) -> pa.RecordBatch:
        """The one-row request batch for bound arguments (zero rows without parameters)."""
        arrays = [_param_array(self.name, param, arguments[param.name]) for param in self.params]
        return pa.RecordBatch.from_arrays(arrays, schema=self.params_schema)

    def result_batch(self, value: Any) -> pa.RecordBatch:
        """The one-row result batch for a returned value (zero rows for void)."""
        if self.result is None:
            return pa.RecordBatch.from_arrays([], schema=EMPTY_SCHEMA)
        if value is None and not self.result.nullable:
            raise TypeError(f"{self.name}() returned None but its result is not nullable")
        return pa.RecordBatch.from_arrays([self.result.to_array(value)], schema=self.result_schema)


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    """A protocol's wire name, version and methods."""

    name: str
    version: str | None
    methods: Mapping[str, MethodSpec]


_SPECS: dict[type, ProtocolSpec] = {}


def protocol_spec(protocol: type) -> ProtocolSpec:
    """The wire description of a protocol class, derived once and cached."""
    spec = _SPECS.get(protocol)
    if spec is None:
        spec = _SPECS[protocol] = _derive(protocol)
    return spec


def _derive(protocol: type) -> ProtocolSpec:
    name = getattr(protocol, "protocol_name", protocol.__name__)
    version = getattr(protocol, "protocol_version", None)
    if version is not None and not is_semver(version):
        raise TypeError(f"{protocol.__name__}.protocol_version {version!r} is not MAJOR.MINOR.PATCH")
    methods = {method: _method_spec(protocol, method, function) for method, function in _functions(protocol).items()}
    return ProtocolSpec(name, version, methods)


def _functions(protocol: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass.__module__ in ("builtins", "typing"):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(value):
                found[name] = value
    return found


def _method_spec(protocol: type, name: str, function: Any) -> MethodSpec:
    where = f"{protocol.__name__}.{name}"
    hints = get_type_hints(function, include_extras=True)
    signature = inspect.signature(function)
    wire_parameters = [p for p in list(signature.parameters.values())[1:] if p.name != CONTEXT_PARAMETER]
    params = tuple(_param(where, p, hints) for p in wire_parameters)
    params_schema = pa.schema([param.codec.field(param.name) for param in params])
    returned = hints.get("return", type(None))
    if get_origin(returned) is Stream or returned is Stream:
        return _stream_spec(where, name, returned, params, params_schema)
    result = None if returned is type(None) else _codec(where, "the result", returned)
    result_schema = EMPTY_SCHEMA if result is None else pa.schema([result.field(RESULT_FIELD)])
    return MethodSpec(name, MethodKind.UNARY, params, params_schema, result, result_schema, None, None)


def _stream_spec(where: str, name: str, returned: Any, params: tuple[Param, ...], schema: pa.Schema) -> MethodSpec:
    args = get_args(returned)
    if not args:
        raise TypeError(f"{where}: annotate the state kind, e.g. -> Stream[ProducerState] or Stream[ExchangeState]")
    state, header = args[0], args[1]
    if isinstance(state, type) and issubclass(state, ExchangeState):
        kind = MethodKind.EXCHANGE
    elif isinstance(state, type) and issubclass(state, ProducerState):
        kind = MethodKind.PRODUCER
    else:
        raise TypeError(f"{where}: Stream state must be a ProducerState or ExchangeState subclass, got {state!r}")
    header_type = None if header is type(None) else unwrap(header)[0]
    header_schema = None if header_type is None else dataclass_schema(header_type)
    return MethodSpec(name, kind, params, schema, None, EMPTY_SCHEMA, header_type, header_schema)


def _param(where: str, parameter: inspect.Parameter, hints: dict[str, Any]) -> Param:
    if parameter.name not in hints:
        raise TypeError(f"{where}: parameter '{parameter.name}' has no type annotation")
    if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise TypeError(f"{where}: *args and **kwargs cannot travel on the wire")
    codec = _codec(where, f"parameter '{parameter.name}'", hints[parameter.name])
    return Param(parameter.name, codec, parameter.default)


def _codec(where: str, what: str, hint: Any) -> Codec:
    try:
        return codec_for(hint, top_level=True)
    except TypeError as exc:
        raise TypeError(f"{where}: {what}: {exc}") from exc


def _param_array(method: str, param: Param, value: Any) -> pa.Array:
    if value is None and not param.codec.nullable:
        raise TypeError(f"{method}() parameter '{param.name}' is not optional but got None")
    try:
        return param.codec.to_array(value)
    except (TypeError, ValueError, KeyError, pa.ArrowException) as exc:
        raise TypeError(
            f"{method}() parameter '{param.name}': cannot convert {value!r:.80} to {param.codec.arrow_type}: {exc}"
        ) from exc
