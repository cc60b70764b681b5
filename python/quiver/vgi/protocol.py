"""The ``vgi.v2`` protocol as this SDK declares it: its methods, their shapes, shared values.

Nothing here knows about function bodies or transports.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Annotated, ClassVar

import pyarrow as pa

from ..rpc import ArrowType, ExchangeState, Stream

# ``GlobalInitResponse.max_workers`` when the worker sets no bound of its own.
UNBOUNDED_WORKERS = 99999
# The batch metadata key of the table-in-out output handshake (``HAVE_MORE_OUTPUT`` / ``CONTINUE``).
STATUS_KEY = "vgi.status"


class SchemaObjectType(Enum):
    TABLE = "table"
    VIEW = "view"
    SCALAR_FUNCTION = "scalar_function"
    TABLE_FUNCTION = "table_function"
    AGGREGATE_FUNCTION = "aggregate_function"
    SCALAR_MACRO = "scalar_macro"
    TABLE_MACRO = "table_macro"
    INDEX = "index"


@dataclass
class GlobalInitResponse:
    execution_id: bytes
    opaque_data: Annotated[bytes | None, ArrowType(pa.binary())] = None
    max_workers: int = UNBOUNDED_WORKERS


Tx = Annotated[bytes | None, ArrowType(pa.binary())]


class VgiV2:
    """The part of ``vgi.v2`` this SDK answers; anything else is an unknown method."""

    protocol_name: ClassVar[str] = "vgi.v2"
    protocol_version: ClassVar[str] = "2.2.0"

    def catalog_catalogs(self) -> bytes: ...
    def catalog_attach(self, request: bytes) -> bytes: ...
    def catalog_schemas(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def catalog_schema_get(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_functions(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_tables(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_views(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_indexes(
        self, attach_opaque_data: bytes, path: list[str], transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_schema_contents_macros(
        self, attach_opaque_data: bytes, path: list[str], type: SchemaObjectType, transaction_opaque_data: Tx = None
    ) -> bytes: ...
    def catalog_contents(self, attach_opaque_data: bytes, if_none_match: str | None = None) -> bytes: ...
    def catalog_version(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def catalog_detach(self, attach_opaque_data: bytes) -> None: ...
    def catalog_copy_from_formats(self, attach_opaque_data: bytes, transaction_opaque_data: Tx = None) -> bytes: ...
    def bind(self, request: bytes) -> bytes: ...
    def init(self, request: bytes) -> Stream[ExchangeState, GlobalInitResponse]: ...
    def table_function_cardinality(self, request: bytes) -> bytes: ...
    def table_function_plan(self, request: bytes) -> bytes: ...
    def table_buffering_process(self, request: bytes) -> bytes: ...
    def table_buffering_combine(self, request: bytes) -> bytes: ...
    def table_buffering_destructor(self, request: bytes) -> bytes: ...
    def aggregate_bind(self, request: bytes) -> bytes: ...
    def aggregate_update(self, request: bytes) -> bytes: ...
    def aggregate_combine(self, request: bytes) -> bytes: ...
    def aggregate_finalize(self, request: bytes) -> bytes: ...
    def aggregate_destructor(self, request: bytes) -> bytes: ...
