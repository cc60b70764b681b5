"""Defining functions: arguments, kinds, capabilities, and argument checking at bind."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .docs import Docs
from .errors import ArgumentValidationError
from .wire import read_batch

SCALAR, TABLE, TABLE_IN_OUT, TABLE_BUFFERING, AGGREGATE = (
    "scalar",
    "table",
    "table-in-out",
    "table-buffering",
    "aggregate",
)
_SQL_NAMES = {
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.uint8(): "UTINYINT",
    pa.uint16(): "USMALLINT",
    pa.uint32(): "UINTEGER",
    pa.uint64(): "UBIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "VARCHAR",
    pa.large_string(): "VARCHAR",
    pa.bool_(): "BOOLEAN",
    pa.binary(): "BLOB",
    pa.null(): "NULL",
    pa.date32(): "DATE",
}


def sql_name(arrow_type: pa.DataType) -> str:
    return _SQL_NAMES.get(arrow_type, str(arrow_type))


@dataclass(frozen=True)
class Arg:
    """One parameter: positional unless ``named``.

    ``table`` marks a table-in-out input; ``constant`` an aggregate's argument that arrives once, at
    bind, instead of as a column.
    """

    name: str
    type: pa.DataType = field(default_factory=pa.null)
    doc: str = ""
    named: bool = False
    default: Any = None
    min: int | float | None = None
    max: int | float | None = None
    table: bool = False
    constant: bool = False

    @classmethod
    def table_input(cls, name: str, doc: str = "") -> Arg:
        return cls(name, pa.null(), doc or "the input table", table=True)

    def field(self) -> pa.Field:
        """The field describing this parameter in ``FunctionInfo.arguments``."""
        metadata: dict[str, str] = {}
        if self.doc:
            metadata["vgi_doc"] = self.doc
        if self.named:
            metadata["vgi_arg"] = "named"
        if self.table:
            metadata["vgi_type"] = "table"
        if self.constant:
            metadata["vgi_const"] = "true"
        if self.default is not None:
            metadata["vgi_default"] = json.dumps(self.default)
        if self.min is not None or self.max is not None:
            low = "(-inf" if self.min is None else f"[{self.min}"
            high = "+inf)" if self.max is None else f"{self.max}]"
            metadata["vgi_range"] = f"{low}, {high}"
        return pa.field(self.name, self.type, metadata=metadata or None)

    def check(self, function: str, where: str, value: pa.Scalar) -> Any:
        """The Python value of an argument, converted to this parameter's type and bounds-checked."""
        if value.type != self.type and value.type != pa.null():
            both_numeric = pa.types.is_integer(value.type) and pa.types.is_integer(self.type)
            if not both_numeric:
                raise ArgumentValidationError(
                    f"{function}(): argument {where} '{self.name}' must be {sql_name(self.type)}, "
                    f"got {sql_name(value.type)}"
                )
            try:
                value = value.cast(self.type)
            except pa.ArrowInvalid as exc:
                raise ArgumentValidationError(
                    f"{function}(): argument {where} '{self.name}' does not fit {sql_name(self.type)}"
                ) from exc
        python = value.as_py()
        if python is not None:
            if self.min is not None and python < self.min:
                raise ArgumentValidationError(
                    f"{function}(): argument '{self.name}' = {python} is too small (must be >= {self.min})"
                )
            if self.max is not None and python > self.max:
                raise ArgumentValidationError(
                    f"{function}(): argument '{self.name}' = {python} is too large (must be <= {self.max})"
                )
        return python


@dataclass
class Function:
    """A function of one of the three kinds; built by the :class:`~quiver.vgi.Worker` decorators."""

    name: str
    kind: str
    body: Callable[..., Any]
    args: list[Arg]
    description: str = ""
    returns: pa.DataType | None = None
    output: pa.Schema | Callable[..., pa.Schema] | None = None
    projection_pushdown: bool = False
    filter_pushdown: bool = False
    max_workers: int | None = None
    shared_work: Callable[[dict[str, Any]], int] | None = None
    finalize: Callable[..., Any] | None = None
    initial_state: Callable[[dict[str, Any]], Any] | None = None
    # Split scans: ``splits(args) -> list[bytes]`` names the scan's units of work (payloads).
    splits: Callable[[dict[str, Any]], list[bytes]] | None = None
    # Splits per plan page (the engine may ask for fewer); None: the SDK's default.
    splits_per_page: int | None = None
    order_dependent: bool = False
    distinct_dependent: bool = False
    schema: str | None = None
    docs: Docs = field(default_factory=Docs)

    @property
    def positional(self) -> list[Arg]:
        return [a for a in self.args if not a.named and not a.table]

    @property
    def columns(self) -> list[Arg]:
        """An aggregate's value columns: its arguments that are not constants."""
        return [a for a in self.args if not a.constant]

    @property
    def named(self) -> list[Arg]:
        return sorted((a for a in self.args if a.named), key=lambda a: a.name)

    def arguments_schema(self) -> pa.Schema:
        ordered = [a for a in self.args if not a.named] + self.named
        return pa.schema([a.field() for a in ordered])

    def default_values(self) -> pa.RecordBatch | None:
        with_default = [a for a in self.args if a.default is not None]
        if not with_default:
            return None
        return pa.record_batch(
            [pa.array([a.default], a.type) for a in with_default], names=[a.name for a in with_default]
        )

    def bind_arguments(self, data: bytes | None) -> dict[str, Any]:
        """Decodes ``BindRequest.arguments`` and checks it against the signature."""
        positional: dict[int, pa.Scalar] = {}
        named: dict[str, pa.Scalar] = {}
        if data:
            batch = read_batch(data)
            if batch.num_columns:
                column = batch.column(0)
                for index, child in enumerate(column.type):
                    value = column.field(index)[0] if batch.num_rows else pa.scalar(None)
                    if child.name.startswith("positional_"):
                        positional[int(child.name[len("positional_") :])] = value
                    elif child.name.startswith("named_"):
                        named[child.name[len("named_") :]] = value
        declared = {SCALAR: [], AGGREGATE: [a for a in self.args if a.constant]}.get(self.kind, self.positional)
        if len(positional) > len(declared):
            raise ArgumentValidationError(
                f"{self.name}() takes {len(declared)} positional argument(s) but {len(positional)} were given"
            )
        values: dict[str, Any] = {}
        for index, arg in enumerate(declared):
            if index not in positional:
                raise ArgumentValidationError(
                    f"{self.name}(): missing argument {index} '{arg.name}' ({sql_name(arg.type)})"
                )
            values[arg.name] = arg.check(self.name, str(index), positional[index])
        by_name = {a.name: a for a in self.named}
        for name, value in named.items():
            if name not in by_name:
                raise ArgumentValidationError(f"{self.name}() has no named argument '{name}'")
            values[name] = by_name[name].check(self.name, f"'{name}'", value)
        for arg in self.named:
            values.setdefault(arg.name, arg.default)
        return values
