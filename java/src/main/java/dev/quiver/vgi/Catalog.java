package dev.quiver.vgi;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The catalog an engine discovers on ATTACH: one catalog (the worker's name), its schemas (the
 * default one, those declared, those functions name), the functions, and what the worker says about
 * each ({@link Docs}) (python/quiver/vgi/catalog.py). Every answer is computed from the declarations
 * alone and the attach token is self-contained, so any worker process can answer any catalog call.
 */
final class Catalog {
  static final long CATALOG_VERSION = 1;
  private static final String ATTACH_PREFIX = "quiver-vgi-java:v1:";

  private final Worker worker;

  Catalog(Worker worker) {
    this.worker = worker;
  }

  /** The function a call names, or the NotFoundError that lists what there is. */
  Function resolve(String name, List<?> schemaPath) {
    Function function = worker.functions().get(name);
    if (function == null
        || (schemaPath != null && !schemaPath.isEmpty() && !is(schemaPath, worker.schemaOf(function)))) {
      List<String> names = new ArrayList<>(worker.functions().keySet());
      names.sort(null);
      List<String> quoted = names.stream().map(n -> "'" + n + "'").toList();
      throw VgiErrors.notFound("Unknown function: '" + name + "'\n  Available functions: [" + String.join(", ", quoted)
          + "]");
    }
    return function;
  }

  static boolean is(List<?> path, String schema) {
    return path != null && path.size() == 1 && schema.equals(String.valueOf(path.get(0)).toLowerCase(Locale.ROOT));
  }

  void checkAttach(byte[] token) {
    if (!Arrays.equals(token, attachToken())) {
      throw VgiErrors.opaqueDataNotRecognized("attach_opaque_data");
    }
  }

  private byte[] attachToken() {
    return (ATTACH_PREFIX + worker.name()).getBytes(StandardCharsets.UTF_8);
  }

  byte[] catalogs(BufferAllocator allocator) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("name", worker.name());
    row.put("attach_option_specs", List.of());
    row.put("releases", List.of());
    return items(Dataclasses.CATALOG_INFO, List.of(row), allocator);
  }

  byte[] attach(Map<String, Object> request, BufferAllocator allocator) {
    Object name = request.get("name");
    if (!worker.name().equals(name)) {
      throw VgiErrors.notFound("Unknown catalog: '" + name + "' (this worker serves '" + worker.name() + "')");
    }
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("attach_opaque_data", attachToken());
    row.put("supports_transactions", false);
    row.put("supports_time_travel", false);
    row.put("catalog_version_frozen", true);
    row.put("catalog_version", CATALOG_VERSION);
    row.put("attach_opaque_data_required", false);
    row.put("default_schema", worker.defaultSchema());
    row.put("settings", List.of());
    row.put("secret_types", List.of());
    row.put("attach_catalogs", List.of());
    row.put("comment", worker.docs.comment);
    row.put("tags", worker.docs.tagEntries());
    row.put("supports_column_statistics", false);
    row.put("global_functions", List.of());
    row.put("global_function_prefix", "");
    row.put("supports_catalog_contents", true);
    return Rows.row(Dataclasses.CATALOG_ATTACH_RESULT, row, allocator);
  }

  byte[] schemas(List<?> path, boolean all, BufferAllocator allocator) {
    List<Map<String, Object>> rows = new ArrayList<>();
    worker.allSchemas().forEach((name, docs) -> {
      if (all || is(path, name)) {
        rows.add(schemaInfo(name, docs));
      }
    });
    return items(Dataclasses.SCHEMA_INFO, rows, allocator);
  }

  byte[] functions(List<?> path, String type, BufferAllocator allocator) {
    List<Map<String, Object>> rows = new ArrayList<>();
    for (Function function : sorted(type)) {
      if (is(path, worker.schemaOf(function))) {
        rows.add(functionInfo(function, allocator));
      }
    }
    return items(Dataclasses.FUNCTION_INFO, rows, allocator);
  }

  byte[] nothing(BufferAllocator allocator) {
    return Rows.row(Dataclasses.ITEMS, Map.of("items", List.of()), allocator);
  }

  private String etag() {
    return "quiver-vgi-java-" + CATALOG_VERSION + "-" + worker.functions().size();
  }

  byte[] contents(String ifNoneMatch, BufferAllocator allocator) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("catalog_version", CATALOG_VERSION);
    row.put("etag", etag());
    row.put("not_modified", etag().equals(ifNoneMatch));
    if (!etag().equals(ifNoneMatch)) {
      List<Map<String, Object>> schemas = new ArrayList<>();
      worker.allSchemas().forEach((name, docs) -> schemas.add(schemaInfo(name, docs)));
      row.put("schemas", Rows.stream(Dataclasses.SCHEMA_INFO, schemas, allocator));
      List<Map<String, Object>> functions = new ArrayList<>();
      for (Function function : sorted(null)) {
        functions.add(functionInfo(function, allocator));
      }
      row.put("functions", Rows.stream(Dataclasses.FUNCTION_INFO, functions, allocator));
    }
    return Rows.row(Dataclasses.CATALOG_CONTENTS_RESPONSE, row, allocator);
  }

  byte[] version(BufferAllocator allocator) {
    return Rows.row(Dataclasses.CATALOG_VERSION_RESPONSE, Map.of("version", CATALOG_VERSION), allocator);
  }

  /** The functions of one listing type (SCALAR_FUNCTION, TABLE_FUNCTION), or all for null, by name. */
  private List<Function> sorted(String type) {
    List<Function> functions = new ArrayList<>(worker.functions().values());
    functions.sort((a, b) -> a.name.compareTo(b.name));
    if (type == null) {
      return functions;
    }
    return switch (type) {
      case "SCALAR_FUNCTION" -> functions.stream().filter(f -> f.kind == Function.Kind.SCALAR).toList();
      case "TABLE_FUNCTION" -> functions.stream()
          .filter(f -> f.kind == Function.Kind.TABLE || f.kind == Function.Kind.TABLE_IN_OUT
              || f.kind == Function.Kind.TABLE_BUFFERING).toList();
      case "AGGREGATE_FUNCTION" -> functions.stream().filter(f -> f.kind == Function.Kind.AGGREGATE).toList();
      default -> List.of();
    };
  }

  private Map<String, Object> schemaInfo(String name, Docs docs) {
    List<Function> in = worker.functions().values().stream().filter(f -> worker.schemaOf(f).equals(name)).toList();
    long scalars = in.stream().filter(f -> f.kind == Function.Kind.SCALAR).count();
    long aggregates = in.stream().filter(f -> f.kind == Function.Kind.AGGREGATE).count();
    List<Object> counts = List.of(List.of("aggregate_function", aggregates), List.of("index", 0L),
        List.of("macro", 0L), List.of("scalar_function", scalars), List.of("table", 0L),
        List.of("table_function", in.size() - scalars - aggregates), List.of("view", 0L));
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("comment", docs.comment);
    row.put("tags", docs.tagEntries());
    row.put("path", List.of(name));
    row.put("estimated_object_count", counts);
    return row;
  }

  private Map<String, Object> functionInfo(Function function, BufferAllocator allocator) {
    boolean tableLike = function.kind != Function.Kind.SCALAR && function.kind != Function.Kind.AGGREGATE;
    Schema output = tableLike ? new Schema(List.of())
        : new Schema(List.of(new Field("result", FieldType.nullable(function.returns), null)));
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("comment", function.docs.comment);
    row.put("tags", function.docs.tagEntries());
    row.put("name", function.name);
    row.put("schema_path", List.of(worker.schemaOf(function)));
    row.put("function_type", function.kind.wireName());
    row.put("arguments", Rows.schemaBytes(function.argumentsSchema()));
    row.put("output_schema", Rows.schemaBytes(output));
    row.put("parameter_default_values", Binding.defaultValues(function, allocator));
    row.put("stability", tableLike ? null : "CONSISTENT");
    row.put("null_handling", tableLike ? null : "DEFAULT");
    row.put("description", function.description);
    row.put("examples", function.docs.exampleRows());
    row.put("categories", List.copyOf(function.docs.categories));
    row.put("projection_pushdown", tableLike ? function.projectionPushdown : null);
    row.put("filter_pushdown", tableLike ? function.filterPushdown : null);
    row.put("sampling_pushdown", tableLike ? false : null);
    row.put("late_materialization", tableLike ? false : null);
    row.put("filter_semantic_profiles", function.filterPushdown ? List.of(Filters.SEMANTICS) : List.of());
    row.put("additional_filter_functions", List.of());
    row.put("runtime_filter_algorithms", List.of());
    row.put("filter_evaluation_contexts", List.of());
    row.put("order_preservation", tableLike ? "PRESERVES_ORDER" : null);
    row.put("max_workers", tableLike ? (long) function.maxWorkers : null);
    row.put("supports_batch_index", false);
    row.put("supports_splits", function.splits != null);
    row.put("filters_exactly_applied", false);
    row.put("supports_positions", false);
    row.put("partition_kind", "NOT_PARTITIONED");
    row.put("order_dependent", function.orderDependent ? "ORDER_DEPENDENT" : "NOT_ORDER_DEPENDENT");
    boolean distinct = function.kind == Function.Kind.AGGREGATE && function.distinctDependent;
    row.put("distinct_dependent", distinct ? "DISTINCT_DEPENDENT" : "NOT_DISTINCT_DEPENDENT");
    row.put("supports_window", false);
    row.put("streaming_partitioned", false);
    row.put("has_finalize", function.finalizer != null);
    row.put("source_order_dependent", false);
    row.put("sink_order_dependent", false);
    row.put("requires_input_batch_index", false);
    row.put("input_from_args", false);
    row.put("required_settings", List.of());
    row.put("required_secrets", List.of());
    return row;
  }

  private static byte[] items(Schema schema, List<Map<String, Object>> rows, BufferAllocator allocator) {
    List<Object> items = new ArrayList<>();
    for (Map<String, Object> row : rows) {
      items.add(Rows.row(schema, row, allocator));
    }
    return Rows.row(Dataclasses.ITEMS, Map.of("items", items), allocator);
  }
}
