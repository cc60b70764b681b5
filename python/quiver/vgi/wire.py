"""The vgi.v2 dataclasses as Arrow schemas, and the byte encodings they travel in.

A dataclass inside a ``binary`` travels as a complete IPC stream holding one row; a
``pa.Schema`` as one encapsulated schema message (no end-of-stream marker). The
schemas here follow the protocol field for field (names, order, types, nullability):
the engine compares some of them for equality.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

ENUM = pa.dictionary(pa.int16(), pa.string())
DICT_BINARY = pa.dictionary(pa.int32(), pa.binary())
STRINGS = pa.list_(pa.string())
BINARIES = pa.list_(pa.binary())
TAGS = pa.map_(pa.string(), pa.string())
EMPTY_SCHEMA = pa.schema([])


def _f(name: str, arrow_type: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, arrow_type, nullable=nullable)


def _capability() -> pa.DataType:
    return pa.list_(
        pa.struct(
            [_f("namespace", pa.string(), False), _f("name", pa.string(), False), _f("version", pa.uint64(), False)]
        )
    )


BIND_RESPONSE = pa.schema(
    [
        _f("output_schema", pa.binary(), False),
        _f("opaque_data", pa.binary()),
        _f("lookup_secret_types", STRINGS, False),
        _f("lookup_scopes", STRINGS, False),
        _f("lookup_names", STRINGS, False),
    ]
)

CATALOG_ATTACH_RESULT = pa.schema(
    [
        _f("attach_opaque_data", pa.binary(), False),
        _f("supports_transactions", pa.bool_(), False),
        _f("supports_time_travel", pa.bool_(), False),
        _f("catalog_version_frozen", pa.bool_(), False),
        _f("catalog_version", pa.int64(), False),
        _f("attach_opaque_data_required", pa.bool_(), False),
        _f("default_schema", pa.string(), False),
        _f("settings", BINARIES, False),
        _f("secret_types", BINARIES, False),
        _f("attach_catalogs", BINARIES, False),
        _f("comment", pa.string()),
        _f("tags", TAGS, False),
        _f("supports_column_statistics", pa.bool_(), False),
        _f("global_functions", BINARIES, False),
        _f("global_function_prefix", pa.string(), False),
        _f("resolved_data_version", pa.string()),
        _f("resolved_implementation_version", pa.string()),
        _f("supports_catalog_contents", pa.bool_(), False),
    ]
)

ITEMS = pa.schema([_f("items", BINARIES, False)])

CATALOG_INFO = pa.schema(
    [
        _f("name", pa.string(), False),
        _f("implementation_version", pa.string()),
        _f("data_version_spec", pa.string()),
        _f("attach_option_specs", BINARIES, False),
        _f(
            "releases",
            pa.list_(
                pa.struct(
                    [
                        _f("version", pa.string(), False),
                        _f("released_at", pa.timestamp("us", tz="UTC")),
                        _f("summary", pa.string(), False),
                        _f("notes_url", pa.string()),
                    ]
                )
            ),
            False,
        ),
        _f("source_url", pa.string()),
    ]
)

SCHEMA_INFO = pa.schema(
    [
        _f("comment", pa.string()),
        _f("tags", TAGS, False),
        _f("path", STRINGS, False),
        _f("estimated_object_count", pa.map_(pa.string(), pa.int64())),
    ]
)

FUNCTION_INFO = pa.schema(
    [
        _f("comment", pa.string()),
        _f("tags", TAGS, False),
        _f("name", pa.string(), False),
        _f("schema_path", STRINGS, False),
        _f("function_type", ENUM, False),
        _f("arguments", DICT_BINARY, False),
        _f("output_schema", DICT_BINARY, False),
        _f("parameter_default_values", DICT_BINARY),
        _f("stability", ENUM),
        _f("null_handling", ENUM),
        _f("argument_monotonicity", STRINGS),
        _f("description", pa.string(), False),
        _f(
            "examples",
            pa.list_(
                pa.struct(
                    [
                        _f("sql", pa.string(), False),
                        _f("description", pa.string(), False),
                        _f("expected_output", pa.string()),
                    ]
                )
            ),
            False,
        ),
        _f("categories", STRINGS, False),
        _f("projection_pushdown", pa.bool_()),
        _f("filter_pushdown", pa.bool_()),
        _f("sampling_pushdown", pa.bool_()),
        _f("late_materialization", pa.bool_()),
        _f("filter_semantic_profiles", STRINGS, False),
        _f("additional_filter_functions", _capability(), False),
        _f("runtime_filter_algorithms", _capability(), False),
        _f(
            "filter_evaluation_contexts",
            pa.list_(pa.struct([_f("profile", pa.string(), False), _f("provider_fingerprint", pa.string())])),
            False,
        ),
        _f("order_preservation", ENUM),
        _f("max_workers", pa.int32()),
        _f("supports_batch_index", pa.bool_(), False),
        _f("supports_splits", pa.bool_(), False),
        _f("filters_exactly_applied", pa.bool_(), False),
        _f("supports_positions", pa.bool_(), False),
        _f("split_token_ttl_seconds", pa.int64()),
        _f("partition_kind", ENUM, False),
        _f("order_dependent", ENUM, False),
        _f("distinct_dependent", ENUM, False),
        _f("supports_window", pa.bool_(), False),
        _f("streaming_partitioned", pa.bool_(), False),
        _f("has_finalize", pa.bool_(), False),
        _f("source_order_dependent", pa.bool_(), False),
        _f("sink_order_dependent", pa.bool_(), False),
        _f("requires_input_batch_index", pa.bool_(), False),
        _f("input_from_args", pa.bool_(), False),
        _f("input_rows_per_call", pa.int64()),
        _f("required_settings", STRINGS, False),
        _f(
            "required_secrets",
            pa.list_(
                pa.struct(
                    [_f("secret_type", pa.string(), False), _f("scope", pa.string()), _f("secret_name", pa.string())]
                )
            ),
            False,
        ),
    ]
)

CATALOG_CONTENTS_RESPONSE = pa.schema(
    [
        _f("catalog_version", pa.int64(), False),
        _f("etag", pa.string()),
        _f("not_modified", pa.bool_(), False),
        *[_f(name, pa.binary()) for name in ("schemas", "tables", "views", "functions", "macros", "indexes")],
    ]
)

CATALOG_VERSION_RESPONSE = pa.schema([_f("version", pa.int64(), False)])
TABLE_CARDINALITY = pa.schema([_f("estimate", pa.int64()), _f("max", pa.int64())])
# Split scans (``table_function_plan``): one split, one page of a plan.
SCAN_SPLIT = pa.schema(
    [
        _f("payload", pa.binary(), False),
        _f("token", pa.binary(), False),
        _f("estimated_rows", pa.int64()),
        _f("rows_exact", pa.bool_(), False),
        _f("estimated_bytes", pa.int64()),
        _f("partition_bounds", pa.binary()),
        _f("column_statistics", pa.binary()),
        _f("location_ids", pa.list_(pa.int64())),
        _f("start_position", pa.binary()),
        _f("end_position", pa.binary()),
    ]
)
PLAN_RESPONSE = pa.schema(
    [
        _f("splits", BINARIES, False),
        _f("next_cursors", BINARIES),
        _f("execution_id", pa.binary()),
        _f("init_opaque_data", pa.binary()),
        _f("max_workers", pa.int64()),
        _f("estimated_total_splits", pa.int64()),
        _f("estimated_total_rows", pa.int64()),
        _f("estimated_total_bytes", pa.int64()),
        _f("catalog_version", pa.int64()),
        _f("scope", pa.string(), False),
        _f("locations", STRINGS),
        _f("partitioning", BINARIES),
        _f("sort_order", BINARIES),
        _f("cache_max_age_seconds", pa.int64()),
        _f("start_position", pa.binary()),
        _f("end_position", pa.binary()),
    ]
)
# Buffered table functions: what ``table_buffering_process`` / ``_combine`` / ``_destructor`` answer.
BUFFERING_PROCESS_RESPONSE = pa.schema([_f("state_id", pa.binary(), False)])
BUFFERING_COMBINE_RESPONSE = pa.schema([_f("finalize_state_ids", BINARIES, False)])


def stream_bytes(batches: list[pa.RecordBatch], schema: pa.Schema) -> bytes:
    """A complete IPC stream of ``batches``."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def rows_batch(schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def row_bytes(schema: pa.Schema, row: dict[str, Any]) -> bytes:
    """One dataclass row as the IPC stream a ``binary`` field carries."""
    return stream_bytes([rows_batch(schema, [row])], schema)


def read_batch(data: bytes) -> pa.RecordBatch:
    """The first batch of an IPC stream."""
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    return reader.read_next_batch()


def read_row(data: bytes) -> dict[str, Any]:
    """The single row of a serialized dataclass, by column name."""
    batch = read_batch(data)
    if batch.num_rows != 1:
        raise ValueError(f"expected a 1-row dataclass batch, got {batch.num_rows} rows")
    return batch.to_pylist()[0]


def schema_bytes(schema: pa.Schema) -> bytes:
    """A schema as one encapsulated IPC schema message."""
    return schema.serialize().to_pybytes()


def read_schema(data: bytes | None) -> pa.Schema | None:
    """A schema message back (``None`` for absent or empty bytes)."""
    if not data:
        return None
    return pa.ipc.read_schema(pa.py_buffer(data))
