//! The Arrow schemas of the vgi.v2 dataclasses this worker reads and writes,
//! field for field as vgi-python 0.47.0 declares them (names, order, types,
//! nullability). The engine checks some of them for exact equality (the
//! `catalog_contents` categories), so these are not approximations.

use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// An enum travels as its member name in `dictionary<int16, utf8>`.
pub fn enum_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
}

/// Serialized schemas and defaults in `FunctionInfo`: `dictionary<int32, binary>`.
fn dict_binary() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary))
}

/// `list<T>` with a nullable child named `item`, as pyarrow writes it.
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// `map<utf8, V>`: entries `key: utf8 NOT NULL`, `value: V`, keys not sorted.
pub fn map_of(value: DataType) -> DataType {
    let entries = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", value, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

fn list_of_struct(fields: Vec<Field>) -> DataType {
    list_of(DataType::Struct(Fields::from(fields)))
}

fn field(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

/// `BindRequest` (engine → worker).
pub static BIND_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("function_name", DataType::Utf8, false),
        field("arguments", DataType::Binary, false),
        field("function_type", enum_type(), false),
        field("input_schema", DataType::Binary, true),
        field("settings", DataType::Binary, true),
        field("secrets", DataType::Binary, true),
        field("attach_opaque_data", DataType::Binary, true),
        field("transaction_opaque_data", DataType::Binary, true),
        field("resolved_secrets_provided", DataType::Boolean, false),
        field("at_unit", DataType::Utf8, true),
        field("at_value", DataType::Utf8, true),
        field(
            "copy_from",
            DataType::Struct(Fields::from(vec![
                field("format", DataType::Utf8, false),
                field("file_path", DataType::Utf8, false),
                field("expected_schema", DataType::Binary, false),
            ])),
            true,
        ),
        field(
            "copy_to",
            DataType::Struct(Fields::from(vec![
                field("format", DataType::Utf8, false),
                field("file_path", DataType::Utf8, false),
            ])),
            true,
        ),
        field("schema_path", list_of(DataType::Utf8), true),
        field("argument_names", list_of(DataType::Utf8), true),
    ])
});

/// `InitRequest` (engine → worker).
pub static INIT_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("bind_call", DataType::Binary, false),
        field("output_schema", DataType::Binary, false),
        field("bind_opaque_data", DataType::Binary, true),
        field("projection_ids", list_of(DataType::Int64), true),
        field("pushdown_filters", DataType::LargeBinary, true),
        field("join_keys", list_of(DataType::LargeBinary), true),
        field("split_tokens", list_of(DataType::LargeBinary), true),
        field("row_limit", DataType::Int64, true),
        field("phase", enum_type(), true),
        field("finalize_state_id", DataType::Binary, true),
        field("execution_id", DataType::Binary, true),
        field("init_opaque_data", DataType::Binary, true),
        field("substream_id", DataType::Binary, true),
        field("order_by_column_name", DataType::Utf8, true),
        field("order_by_direction", enum_type(), true),
        field("order_by_null_order", enum_type(), true),
        field("order_by_limit", DataType::Int64, true),
        field("tablesample_percentage", DataType::Float64, true),
        field("tablesample_seed", DataType::Int64, true),
    ])
});

/// `BindResponse` (worker → engine).
pub static BIND_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("output_schema", DataType::Binary, false),
        field("opaque_data", DataType::Binary, true),
        field("lookup_secret_types", list_of(DataType::Utf8), false),
        field("lookup_scopes", list_of(DataType::Utf8), false),
        field("lookup_names", list_of(DataType::Utf8), false),
    ])
});

/// `GlobalInitResponse`: the header of every `init` stream.
pub static GLOBAL_INIT_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("execution_id", DataType::Binary, false),
        field("opaque_data", DataType::Binary, true),
        field("max_workers", DataType::Int64, false),
    ])
});

/// `CatalogAttachRequest` (engine → worker).
pub static CATALOG_ATTACH_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("name", DataType::Utf8, false),
        field("options", DataType::Binary, true),
        field("data_version_spec", DataType::Utf8, true),
        field("implementation_version", DataType::Utf8, true),
        field("client_capabilities", DataType::Binary, true),
    ])
});

/// `CatalogAttachResult` (worker → engine).
pub static CATALOG_ATTACH_RESULT: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("attach_opaque_data", DataType::Binary, false),
        field("supports_transactions", DataType::Boolean, false),
        field("supports_time_travel", DataType::Boolean, false),
        field("catalog_version_frozen", DataType::Boolean, false),
        field("catalog_version", DataType::Int64, false),
        field("attach_opaque_data_required", DataType::Boolean, false),
        field("default_schema", DataType::Utf8, false),
        field("settings", list_of(DataType::Binary), false),
        field("secret_types", list_of(DataType::Binary), false),
        field("attach_catalogs", list_of(DataType::Binary), false),
        field("comment", DataType::Utf8, true),
        field("tags", map_of(DataType::Utf8), false),
        field("supports_column_statistics", DataType::Boolean, false),
        field("global_functions", list_of(DataType::Binary), false),
        field("global_function_prefix", DataType::Utf8, false),
        field("resolved_data_version", DataType::Utf8, true),
        field("resolved_implementation_version", DataType::Utf8, true),
        field("supports_catalog_contents", DataType::Boolean, false),
    ])
});

/// Every `*Response` that is a list of serialized items (`CatalogsResponse`,
/// `SchemasResponse`, `FunctionsResponse`, `TablesResponse`...).
pub static ITEMS_RESPONSE: LazyLock<SchemaRef> =
    LazyLock::new(|| schema(vec![field("items", list_of(DataType::Binary), false)]));

/// `CatalogInfo`: one catalog this worker serves.
pub static CATALOG_INFO: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("name", DataType::Utf8, false),
        field("implementation_version", DataType::Utf8, true),
        field("data_version_spec", DataType::Utf8, true),
        field("attach_option_specs", list_of(DataType::Binary), false),
        field(
            "releases",
            list_of_struct(vec![
                field("version", DataType::Utf8, false),
                field(
                    "released_at",
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    true,
                ),
                field("summary", DataType::Utf8, false),
                field("notes_url", DataType::Utf8, true),
            ]),
            false,
        ),
        field("source_url", DataType::Utf8, true),
    ])
});

/// `SchemaInfo`: one schema of the catalog.
pub static SCHEMA_INFO: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("comment", DataType::Utf8, true),
        field("tags", map_of(DataType::Utf8), false),
        field("path", list_of(DataType::Utf8), false),
        field("estimated_object_count", map_of(DataType::Int64), true),
    ])
});

/// `FunctionInfo`: one function, its signature, documentation and capabilities.
pub static FUNCTION_INFO: LazyLock<SchemaRef> = LazyLock::new(|| {
    let capability = || {
        list_of_struct(vec![
            field("namespace", DataType::Utf8, false),
            field("name", DataType::Utf8, false),
            field("version", DataType::UInt64, false),
        ])
    };
    schema(vec![
        field("comment", DataType::Utf8, true),
        field("tags", map_of(DataType::Utf8), false),
        field("name", DataType::Utf8, false),
        field("schema_path", list_of(DataType::Utf8), false),
        field("function_type", enum_type(), false),
        field("arguments", dict_binary(), false),
        field("output_schema", dict_binary(), false),
        field("parameter_default_values", dict_binary(), true),
        field("stability", enum_type(), true),
        field("null_handling", enum_type(), true),
        field("argument_monotonicity", list_of(DataType::Utf8), true),
        field("description", DataType::Utf8, false),
        field(
            "examples",
            list_of_struct(vec![
                field("sql", DataType::Utf8, false),
                field("description", DataType::Utf8, false),
                field("expected_output", DataType::Utf8, true),
            ]),
            false,
        ),
        field("categories", list_of(DataType::Utf8), false),
        field("projection_pushdown", DataType::Boolean, true),
        field("filter_pushdown", DataType::Boolean, true),
        field("sampling_pushdown", DataType::Boolean, true),
        field("late_materialization", DataType::Boolean, true),
        field("filter_semantic_profiles", list_of(DataType::Utf8), false),
        field("additional_filter_functions", capability(), false),
        field("runtime_filter_algorithms", capability(), false),
        field(
            "filter_evaluation_contexts",
            list_of_struct(vec![
                field("profile", DataType::Utf8, false),
                field("provider_fingerprint", DataType::Utf8, true),
            ]),
            false,
        ),
        field("order_preservation", enum_type(), true),
        field("max_workers", DataType::Int32, true),
        field("supports_batch_index", DataType::Boolean, false),
        field("supports_splits", DataType::Boolean, false),
        field("filters_exactly_applied", DataType::Boolean, false),
        field("supports_positions", DataType::Boolean, false),
        field("split_token_ttl_seconds", DataType::Int64, true),
        field("partition_kind", enum_type(), false),
        field("order_dependent", enum_type(), false),
        field("distinct_dependent", enum_type(), false),
        field("supports_window", DataType::Boolean, false),
        field("streaming_partitioned", DataType::Boolean, false),
        field("has_finalize", DataType::Boolean, false),
        field("source_order_dependent", DataType::Boolean, false),
        field("sink_order_dependent", DataType::Boolean, false),
        field("requires_input_batch_index", DataType::Boolean, false),
        field("input_from_args", DataType::Boolean, false),
        field("input_rows_per_call", DataType::Int64, true),
        field("required_settings", list_of(DataType::Utf8), false),
        field(
            "required_secrets",
            list_of_struct(vec![
                field("secret_type", DataType::Utf8, false),
                field("scope", DataType::Utf8, true),
                field("secret_name", DataType::Utf8, true),
            ]),
            false,
        ),
    ])
});

/// `CatalogContentsResponse`: the whole catalog in one answer.
pub static CATALOG_CONTENTS_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("catalog_version", DataType::Int64, false),
        field("etag", DataType::Utf8, true),
        field("not_modified", DataType::Boolean, false),
        field("schemas", DataType::Binary, true),
        field("tables", DataType::Binary, true),
        field("views", DataType::Binary, true),
        field("functions", DataType::Binary, true),
        field("macros", DataType::Binary, true),
        field("indexes", DataType::Binary, true),
    ])
});

/// `CatalogVersionResponse`.
pub static CATALOG_VERSION_RESPONSE: LazyLock<SchemaRef> =
    LazyLock::new(|| schema(vec![field("version", DataType::Int64, false)]));

/// `TransactionBeginResponse`.
pub static TRANSACTION_BEGIN_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![field(
        "transaction_opaque_data",
        DataType::Binary,
        true,
    )])
});

/// `TableFunctionCardinalityRequest`.
pub static CARDINALITY_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("bind_call", DataType::Binary, false),
        field("bind_opaque_data", DataType::Binary, true),
    ])
});

/// `TableCardinality`.
pub static TABLE_CARDINALITY: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("estimate", DataType::Int64, true),
        field("max", DataType::Int64, true),
    ])
});

/// `TableFunctionPlanRequest` (engine → worker): plan a scan into splits, or continue a plan
/// from `cursor`.
pub static PLAN_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("bind_call", DataType::Binary, false),
        field("bind_opaque_data", DataType::Binary, true),
        field("projection_ids", list_of(DataType::Int64), true),
        field("pushdown_filters", DataType::LargeBinary, true),
        field("join_keys", list_of(DataType::LargeBinary), true),
        field("row_limit", DataType::Int64, true),
        field("target_split_bytes", DataType::Int64, true),
        field("min_splits", DataType::Int64, true),
        field("max_splits_per_response", DataType::Int64, true),
        field("cursor", DataType::Binary, true),
        field("refined_filters", DataType::LargeBinary, true),
        field("filters_complete", DataType::Boolean, false),
        field("start_position", DataType::Binary, true),
        field("end_position", DataType::Binary, true),
        field("order_by_column_name", DataType::Utf8, true),
        field("order_by_direction", enum_type(), true),
        field("order_by_null_order", enum_type(), true),
        field("order_by_limit", DataType::Int64, true),
        field("tablesample_percentage", DataType::Float64, true),
        field("tablesample_seed", DataType::Int64, true),
    ])
});

/// `PlanResponse` (worker → engine): one page of splits, each a serialized [`SCAN_SPLIT`].
pub static PLAN_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("splits", list_of(DataType::Binary), false),
        field("next_cursors", list_of(DataType::Binary), true),
        field("execution_id", DataType::Binary, true),
        field("init_opaque_data", DataType::Binary, true),
        field("max_workers", DataType::Int64, true),
        field("estimated_total_splits", DataType::Int64, true),
        field("estimated_total_rows", DataType::Int64, true),
        field("estimated_total_bytes", DataType::Int64, true),
        field("catalog_version", DataType::Int64, true),
        field("scope", DataType::Utf8, false),
        field("locations", list_of(DataType::Utf8), true),
        field("partitioning", list_of(DataType::Binary), true),
        field("sort_order", list_of(DataType::Binary), true),
        field("cache_max_age_seconds", DataType::Int64, true),
        field("start_position", DataType::Binary, true),
        field("end_position", DataType::Binary, true),
    ])
});

/// `ScanSplit`: one named, independently redeemable unit of a scan.
pub static SCAN_SPLIT: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("payload", DataType::Binary, false),
        field("token", DataType::Binary, false),
        field("estimated_rows", DataType::Int64, true),
        field("rows_exact", DataType::Boolean, false),
        field("estimated_bytes", DataType::Int64, true),
        field("partition_bounds", DataType::Binary, true),
        field("column_statistics", DataType::Binary, true),
        field("location_ids", list_of(DataType::Int64), true),
        field("start_position", DataType::Binary, true),
        field("end_position", DataType::Binary, true),
    ])
});

/// `TableBufferingProcessRequest` (engine → worker): sink one input batch.
pub static BUFFERING_PROCESS_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("function_name", DataType::Utf8, false),
        field("execution_id", DataType::Binary, false),
        field("input_batch", DataType::Binary, false),
        field("attach_opaque_data", DataType::Binary, true),
        field("transaction_id", DataType::Binary, true),
        field("batch_index", DataType::Int64, true),
        field("schema_path", list_of(DataType::Utf8), true),
    ])
});

/// `TableBufferingProcessResponse`: the state id the worker stored the batch under.
pub static BUFFERING_PROCESS_RESPONSE: LazyLock<SchemaRef> =
    LazyLock::new(|| schema(vec![field("state_id", DataType::Binary, false)]));

/// `TableBufferingCombineRequest` (engine → worker): the input ended; every state id so far.
pub static BUFFERING_COMBINE_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("function_name", DataType::Utf8, false),
        field("execution_id", DataType::Binary, false),
        field("state_ids", list_of(DataType::Binary), false),
        field("attach_opaque_data", DataType::Binary, true),
        field("transaction_id", DataType::Binary, true),
        field("schema_path", list_of(DataType::Utf8), true),
    ])
});

/// `TableBufferingCombineResponse`: one finalize stream per id, in order.
pub static BUFFERING_COMBINE_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![field(
        "finalize_state_ids",
        list_of(DataType::Binary),
        false,
    )])
});

/// `TableBufferingDestructorRequest` (engine → worker): best-effort cleanup at the end.
pub static BUFFERING_DESTRUCTOR_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        field("function_name", DataType::Utf8, false),
        field("execution_id", DataType::Binary, false),
        field("attach_opaque_data", DataType::Binary, true),
        field("transaction_id", DataType::Binary, true),
        field("schema_path", list_of(DataType::Utf8), true),
    ])
});

/// `TableBufferingDestructorResponse`: an empty acknowledgement.
pub static BUFFERING_DESTRUCTOR_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| schema(vec![]));
