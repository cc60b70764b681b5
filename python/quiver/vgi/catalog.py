"""The catalog an engine discovers on ATTACH: one catalog, its schemas, its functions.

The schemas are the default one, those declared with :meth:`~quiver.vgi.Worker.schema` and those
functions name; with each comes what the worker says about it (comments, tags, example queries:
:mod:`.docs`).

Every answer is computed from the function definitions alone, and the attach token is
self-contained, so any worker process can answer any catalog call: the engine's catalog
connection and its function connections need not be the same process (on stdio they never are).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import filters as vgi_filters
from . import wire
from .docs import Schema, tag_items
from .errors import NotFoundError, OpaqueDataNotRecognizedError
from .function import AGGREGATE, SCALAR, TABLE_BUFFERING, Function
from .protocol import SchemaObjectType

if TYPE_CHECKING:
    from .worker import Worker

CATALOG_VERSION = 1
_ATTACH_PREFIX = b"quiver-vgi-py:v1:"


def resolve(functions: dict[str, Function], name: str, schema_path: list[str] | None) -> Function:
    """The function a call names, or the ``NotFoundError`` that lists what there is."""
    function = functions.get(name)
    if function is None or (schema_path and not _is(schema_path, function.schema or "")):
        available = ", ".join(f"'{n}'" for n in sorted(functions))
        raise NotFoundError(f"Unknown function: '{name}'\n  Available functions: [{available}]")
    return function


def function_info(function: Function) -> dict[str, Any]:
    """The ``FunctionInfo`` row of one function."""
    table_like = function.kind not in (SCALAR, AGGREGATE)
    defaults = function.default_values()
    output = wire.EMPTY_SCHEMA if table_like else pa.schema([pa.field("result", function.returns)])
    return {
        "comment": function.docs.comment,
        "tags": tag_items(function.docs.tags),
        "name": function.name,
        "schema_path": [function.schema],
        "function_type": _FUNCTION_TYPES.get(function.kind, "TABLE"),
        "arguments": wire.schema_bytes(function.arguments_schema()),
        "output_schema": wire.schema_bytes(output),
        "parameter_default_values": None if defaults is None else wire.stream_bytes([defaults], defaults.schema),
        "stability": None if table_like else "CONSISTENT",
        "null_handling": None if table_like else "DEFAULT",
        "argument_monotonicity": None,
        "description": function.description,
        "examples": function.docs.example_rows(),
        "categories": list(function.docs.categories),
        "projection_pushdown": function.projection_pushdown if table_like else None,
        "filter_pushdown": function.filter_pushdown if table_like else None,
        "sampling_pushdown": False if table_like else None,
        "late_materialization": False if table_like else None,
        "filter_semantic_profiles": [vgi_filters.SEMANTICS] if function.filter_pushdown else [],
        "additional_filter_functions": [],
        "runtime_filter_algorithms": [],
        "filter_evaluation_contexts": [],
        "order_preservation": "PRESERVES_ORDER" if table_like else None,
        "max_workers": function.max_workers if table_like else None,
        "supports_batch_index": False,
        "supports_splits": function.splits is not None,
        "filters_exactly_applied": False,
        "supports_positions": False,
        "split_token_ttl_seconds": None,
        "partition_kind": "NOT_PARTITIONED",
        "order_dependent": "ORDER_DEPENDENT" if function.order_dependent else "NOT_ORDER_DEPENDENT",
        "distinct_dependent": "DISTINCT_DEPENDENT" if function.distinct_dependent else "NOT_DISTINCT_DEPENDENT",
        "supports_window": False,
        "streaming_partitioned": False,
        "has_finalize": function.finalize is not None,
        "source_order_dependent": False,
        "sink_order_dependent": False,
        "requires_input_batch_index": False,
        "input_from_args": False,
        "input_rows_per_call": None,
        "required_settings": [],
        "required_secrets": [],
    }


_FUNCTION_TYPES = {SCALAR: "SCALAR", AGGREGATE: "AGGREGATE", TABLE_BUFFERING: "TABLE_BUFFERING"}


def schema_info(schema: Schema, functions: list[Function]) -> dict[str, Any]:
    """The ``SchemaInfo`` row of ``schema``, whose functions are ``functions``."""
    scalars = sum(1 for f in functions if f.kind == SCALAR)
    aggregates = sum(1 for f in functions if f.kind == AGGREGATE)
    counts = {
        "aggregate_function": aggregates,
        "index": 0,
        "macro": 0,
        "scalar_function": scalars,
        "table": 0,
        "table_function": len(functions) - scalars - aggregates,
        "view": 0,
    }
    return {
        "comment": schema.comment,
        "tags": tag_items(schema.tags),
        "path": [schema.name],
        "estimated_object_count": list(counts.items()),
    }


def _is(path: list[str] | None, schema: str) -> bool:
    return [p.lower() for p in (path or [])] == [schema.lower()]


def _items(schema: pa.Schema, rows: list[dict[str, Any]]) -> bytes:
    return wire.row_bytes(wire.ITEMS, {"items": [wire.row_bytes(schema, row) for row in rows]})


class CatalogMethods:
    """The ``catalog_*`` methods of :class:`~quiver.vgi.protocol.VgiV2` for one worker."""

    worker: Worker

    def _check_attach(self, token: bytes) -> None:
        if token != _ATTACH_PREFIX + self.worker.name.encode():
            raise OpaqueDataNotRecognizedError("attach_opaque_data was not issued by this worker")

    def _schema_rows(self, path: list[str] | None = None) -> list[dict[str, Any]]:
        """Every schema's ``SchemaInfo`` row (with ``path``: that schema's alone, if it exists)."""
        schemas = [s for s in self.worker.schemas.values() if path is None or _is(path, s.name)]
        every = self.worker.functions.values()
        return [schema_info(s, [f for f in every if _is([s.name], f.schema or "")]) for s in schemas]

    def _functions(self, wanted: str | None, path: list[str] | None = None) -> list[Function]:
        functions = sorted(self.worker.functions.values(), key=lambda f: f.name)
        if path is not None:
            functions = [f for f in functions if _is(path, f.schema or "")]
        if wanted == "SCALAR_FUNCTION":
            return [f for f in functions if f.kind == SCALAR]
        if wanted == "TABLE_FUNCTION":
            return [f for f in functions if f.kind not in (SCALAR, AGGREGATE)]
        if wanted == "AGGREGATE_FUNCTION":
            return [f for f in functions if f.kind == AGGREGATE]
        return [] if wanted else functions

    def catalog_catalogs(self) -> bytes:
        row = {
            "name": self.worker.name,
            "implementation_version": None,
            "data_version_spec": None,
            "attach_option_specs": [],
            "releases": [],
            "source_url": None,
        }
        return _items(wire.CATALOG_INFO, [row])

    def catalog_attach(self, request: bytes) -> bytes:
        name = wire.read_row(request)["name"]
        if name != self.worker.name:
            raise NotFoundError(f"Unknown catalog: '{name}' (this worker serves '{self.worker.name}')")
        return wire.row_bytes(
            wire.CATALOG_ATTACH_RESULT,
            {
                "attach_opaque_data": _ATTACH_PREFIX + name.encode(),
                "supports_transactions": False,
                "supports_time_travel": False,
                "catalog_version_frozen": True,
                "catalog_version": CATALOG_VERSION,
                "attach_opaque_data_required": False,
                "default_schema": self.worker.default_schema,
                "settings": [],
                "secret_types": [],
                "attach_catalogs": [],
                "comment": self.worker.comment,
                "tags": tag_items(self.worker.tags),
                "supports_column_statistics": False,
                "global_functions": [],
                "global_function_prefix": "",
                "resolved_data_version": None,
                "resolved_implementation_version": None,
                "supports_catalog_contents": True,
            },
        )

    def catalog_schemas(self, attach_opaque_data: bytes, transaction_opaque_data: bytes | None = None) -> bytes:
        self._check_attach(attach_opaque_data)
        return _items(wire.SCHEMA_INFO, self._schema_rows())

    def catalog_schema_get(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Any = None
    ) -> bytes:
        self._check_attach(attach_opaque_data)
        return _items(wire.SCHEMA_INFO, self._schema_rows(path))

    def catalog_schema_contents_functions(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Any = None
    ) -> bytes:
        self._check_attach(attach_opaque_data)
        functions = self._functions(type.name, path)
        return _items(wire.FUNCTION_INFO, [function_info(f) for f in functions])

    def _nothing(self, attach_opaque_data: bytes, *_: Any) -> bytes:
        self._check_attach(attach_opaque_data)
        return wire.row_bytes(wire.ITEMS, {"items": []})

    catalog_schema_contents_tables = _nothing
    catalog_schema_contents_views = _nothing
    catalog_schema_contents_indexes = _nothing
    catalog_schema_contents_macros = _nothing
    catalog_copy_from_formats = _nothing

    def catalog_contents(self, attach_opaque_data: bytes, if_none_match: str | None = None) -> bytes:
        self._check_attach(attach_opaque_data)
        etag = f"quiver-vgi-py-{CATALOG_VERSION}-{len(self.worker.functions)}"
        row: dict[str, Any] = {"catalog_version": CATALOG_VERSION, "etag": etag, "not_modified": False}
        if if_none_match == etag:
            row["not_modified"] = True
        else:
            schemas = wire.rows_batch(wire.SCHEMA_INFO, self._schema_rows())
            functions = wire.rows_batch(wire.FUNCTION_INFO, [function_info(f) for f in self._functions(None)])
            row["schemas"] = wire.stream_bytes([schemas], wire.SCHEMA_INFO)
            row["functions"] = wire.stream_bytes([functions], wire.FUNCTION_INFO)
        return wire.row_bytes(wire.CATALOG_CONTENTS_RESPONSE, row)

    def catalog_version(self, attach_opaque_data: bytes, transaction_opaque_data: Any = None) -> bytes:
        self._check_attach(attach_opaque_data)
        return wire.row_bytes(wire.CATALOG_VERSION_RESPONSE, {"version": CATALOG_VERSION})

    def catalog_detach(self, attach_opaque_data: bytes) -> None:
        self._check_attach(attach_opaque_data)
