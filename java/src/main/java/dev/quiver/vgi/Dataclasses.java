package dev.quiver.vgi;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The vgi.v2 dataclasses as Arrow schemas, field for field (names, order, types, nullability) as
 * python/quiver/vgi/wire.py and crates/quiver-vgi-contract/src/schemas.rs spell them: the engine
 * compares some of them for equality.
 */
final class Dataclasses {
  private Dataclasses() {}

  static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
  static final ArrowType BINARY = ArrowType.Binary.INSTANCE;
  static final ArrowType BOOL = ArrowType.Bool.INSTANCE;
  static final ArrowType INT64 = new ArrowType.Int(64, true);
  static final ArrowType INT32 = new ArrowType.Int(32, true);

  static Field f(String name, ArrowType type, boolean nullable, Field... children) {
    return new Field(name, new FieldType(nullable, type, null), List.of(children));
  }

  static Field req(String name, ArrowType type) {
    return f(name, type, false);
  }

  static Field opt(String name, ArrowType type) {
    return f(name, type, true);
  }

  static Field listOf(String name, boolean nullable, Field item) {
    return f(name, new ArrowType.List(), nullable, item);
  }

  static Field strings(String name, boolean nullable) {
    return listOf(name, nullable, opt("item", UTF8));
  }

  static Field binaries(String name) {
    return listOf(name, false, opt("item", BINARY));
  }

  static Field mapOf(String name, boolean nullable, ArrowType value) {
    Field entries = f("entries", ArrowType.Struct.INSTANCE, false, req("key", UTF8), opt("value", value));
    return f(name, new ArrowType.Map(false), nullable, entries);
  }

  static Field structs(String name, Field... fields) {
    return listOf(name, false, f("item", ArrowType.Struct.INSTANCE, true, fields));
  }

  /** Dictionary ids, unique within every schema built here. */
  private static final AtomicLong DICTIONARY_IDS = new AtomicLong();

  /** An enum: dictionary<int16, string>. */
  static Field enumField(String name, boolean nullable) {
    DictionaryEncoding encoding = new DictionaryEncoding(DICTIONARY_IDS.getAndIncrement(), false,
        new ArrowType.Int(16, true));
    return new Field(name, new FieldType(nullable, UTF8, encoding), null);
  }

  /** dictionary<int32, binary>. */
  static Field dictBinary(String name, boolean nullable) {
    DictionaryEncoding encoding = new DictionaryEncoding(DICTIONARY_IDS.getAndIncrement(), false,
        new ArrowType.Int(32, true));
    return new Field(name, new FieldType(nullable, BINARY, encoding), null);
  }

  static Schema schema(Field... fields) {
    return new Schema(List.of(fields));
  }

  private static Field capability(String name) {
    return structs(name, req("namespace", UTF8), req("name", UTF8), req("version", new ArrowType.Int(64, false)));
  }

  static final Schema BIND_RESPONSE = schema(req("output_schema", BINARY), opt("opaque_data", BINARY),
      strings("lookup_secret_types", false), strings("lookup_scopes", false), strings("lookup_names", false));

  static final Schema CATALOG_ATTACH_RESULT = schema(req("attach_opaque_data", BINARY),
      req("supports_transactions", BOOL), req("supports_time_travel", BOOL), req("catalog_version_frozen", BOOL),
      req("catalog_version", INT64), req("attach_opaque_data_required", BOOL), req("default_schema", UTF8),
      binaries("settings"), binaries("secret_types"), binaries("attach_catalogs"), opt("comment", UTF8),
      mapOf("tags", false, UTF8), req("supports_column_statistics", BOOL), binaries("global_functions"),
      req("global_function_prefix", UTF8), opt("resolved_data_version", UTF8),
      opt("resolved_implementation_version", UTF8), req("supports_catalog_contents", BOOL));

  static final Schema ITEMS = schema(binaries("items"));

  static final Schema CATALOG_INFO = schema(req("name", UTF8), opt("implementation_version", UTF8),
      opt("data_version_spec", UTF8), binaries("attach_option_specs"),
      structs("releases", req("version", UTF8), opt("released_at", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
          req("summary", UTF8), opt("notes_url", UTF8)),
      opt("source_url", UTF8));

  static final Schema SCHEMA_INFO = schema(opt("comment", UTF8), mapOf("tags", false, UTF8), strings("path", false),
      mapOf("estimated_object_count", true, INT64));

  static final Schema FUNCTION_INFO = functionInfo();

  private static Schema functionInfo() {
    List<Field> fields = new ArrayList<>(List.of(opt("comment", UTF8), mapOf("tags", false, UTF8), req("name", UTF8),
        strings("schema_path", false), enumField("function_type", false), dictBinary("arguments", false),
        dictBinary("output_schema", false), dictBinary("parameter_default_values", true), enumField("stability", true),
        enumField("null_handling", true), strings("argument_monotonicity", true), req("description", UTF8),
        structs("examples", req("sql", UTF8), req("description", UTF8), opt("expected_output", UTF8)),
        strings("categories", false), opt("projection_pushdown", BOOL), opt("filter_pushdown", BOOL),
        opt("sampling_pushdown", BOOL), opt("late_materialization", BOOL), strings("filter_semantic_profiles", false),
        capability("additional_filter_functions"), capability("runtime_filter_algorithms"),
        structs("filter_evaluation_contexts", req("profile", UTF8), opt("provider_fingerprint", UTF8)),
        enumField("order_preservation", true), opt("max_workers", INT32), req("supports_batch_index", BOOL),
        req("supports_splits", BOOL), req("filters_exactly_applied", BOOL), req("supports_positions", BOOL),
        opt("split_token_ttl_seconds", INT64), enumField("partition_kind", false), enumField("order_dependent", false),
        enumField("distinct_dependent", false), req("supports_window", BOOL), req("streaming_partitioned", BOOL),
        req("has_finalize", BOOL), req("source_order_dependent", BOOL), req("sink_order_dependent", BOOL),
        req("requires_input_batch_index", BOOL), req("input_from_args", BOOL), opt("input_rows_per_call", INT64),
        strings("required_settings", false),
        structs("required_secrets", req("secret_type", UTF8), opt("scope", UTF8), opt("secret_name", UTF8))));
    return new Schema(fields);
  }

  static final Schema CATALOG_CONTENTS_RESPONSE = schema(req("catalog_version", INT64), opt("etag", UTF8),
      req("not_modified", BOOL), opt("schemas", BINARY), opt("tables", BINARY), opt("views", BINARY),
      opt("functions", BINARY), opt("macros", BINARY), opt("indexes", BINARY));

  static final Schema CATALOG_VERSION_RESPONSE = schema(req("version", INT64));
  static final Schema TABLE_CARDINALITY = schema(opt("estimate", INT64), opt("max", INT64));

  /** {@code TableBufferingProcessResponse} and {@code TableBufferingCombineResponse}. */
  static final Schema BUFFERING_PROCESS_RESPONSE = schema(req("state_id", BINARY));
  static final Schema BUFFERING_COMBINE_RESPONSE = schema(binaries("finalize_state_ids"));

  /** {@code ScanSplit}: one named unit of a split-planned scan. */
  static final Schema SCAN_SPLIT = schema(req("payload", BINARY), req("token", BINARY), opt("estimated_rows", INT64),
      req("rows_exact", BOOL), opt("estimated_bytes", INT64), opt("partition_bounds", BINARY),
      opt("column_statistics", BINARY), listOf("location_ids", true, opt("item", INT64)), opt("start_position", BINARY),
      opt("end_position", BINARY));

  /** {@code PlanResponse}: one page of a plan. */
  static final Schema PLAN_RESPONSE = schema(binaries("splits"), listOf("next_cursors", true, opt("item", BINARY)),
      opt("execution_id", BINARY), opt("init_opaque_data", BINARY), opt("max_workers", INT64),
      opt("estimated_total_splits", INT64), opt("estimated_total_rows", INT64), opt("estimated_total_bytes", INT64),
      opt("catalog_version", INT64), req("scope", UTF8), strings("locations", true),
      listOf("partitioning", true, opt("item", BINARY)), listOf("sort_order", true, opt("item", BINARY)),
      opt("cache_max_age_seconds", INT64), opt("start_position", BINARY), opt("end_position", BINARY));
  /** {@code GlobalInitResponse}, the header of every {@code init} stream. */
  static final Schema GLOBAL_INIT_RESPONSE = schema(req("execution_id", BINARY), opt("opaque_data", BINARY),
      req("max_workers", INT64));
}
