package dev.quiver.vgi;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.Limits;
import dev.quiver.wire.RpcError;
import dev.quiver.wire.StreamReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Pushed-down filters ({@code vgi.filters.v2}): the subset this SDK evaluates exactly
 * (python/quiver/vgi/filters.py, crates/quiver-vgi/src/filter_*.rs). Nodes: {@code column_ref},
 * {@code literal}, {@code comparison} (all eight operators), {@code and}, {@code or}, {@code not},
 * {@code is_null} and {@code in} over a literal list, in SQL's three-valued logic. A required
 * predicate using anything else is declined (the init fails with FilterDeserializationError, so the
 * engine never thinks it was applied); an advisory one is never evaluated.
 */
final class Filters {
  static final String ENCODING = "vgi.filters.v2";
  static final String SEMANTICS = "vgi.duckdb.standard.v1";
  static final String CONTEXT_NONE = "vgi.none.v1";
  static final int DEPTH_MAX = 64;
  private static final Set<String> TOP_KEYS = Set.of("encoding", "semantics", "kind", "predicates");
  private static final Set<String> COMPARISONS = Set.of("eq", "ne", "lt", "le", "gt", "ge", "distinct_from",
      "not_distinct_from");

  private final List<Map<?, ?>> predicates;
  private final Map<Long, Object> values;

  private Filters(List<Map<?, ?>> predicates, Map<Long, Object> values) {
    this.predicates = predicates;
    this.values = values;
  }

  static RpcError declined(String message) {
    return new RpcError(new ErrorReport("FilterDeserializationError", "Failed to parse filters: " + message,
        ErrorCode.INVALID_ARGUMENT, null, null, null));
  }

  /** Parses and checks a {@code pushdown_filters} container against the unprojected output schema. */
  static Filters parse(byte[] data, Schema schema, BufferAllocator allocator) {
    Map<String, String> meta;
    Map<Long, Object> values = new HashMap<>();
    String spec = null;
    try (StreamReader reader = StreamReader.open(new ReadChannel(Channels.newChannel(new ByteArrayInputStream(data))),
        allocator, Limits.DEFAULT)) {
      if (reader == null) {
        throw declined("not an IPC stream");
      }
      meta = reader.schema().getCustomMetadata() == null ? Map.of() : reader.schema().getCustomMetadata();
      if (!ENCODING.equals(meta.get("vgi_filter_encoding")) || !"2".equals(meta.get("vgi_filter_version"))) {
        throw declined("not a vgi.filters.v2 container");
      }
      String context = meta.getOrDefault("vgi_evaluation_context", CONTEXT_NONE);
      if (!CONTEXT_NONE.equals(context)) {
        throw declined("evaluation context '" + context + "' is not supported");
      }
      var batch = reader.read();
      if (batch == null || batch.rowCount() != 1) {
        throw declined("expected one row with filter_spec");
      }
      for (FieldVector vector : batch.root().getFieldVectors()) {
        Object value = Rows.value(vector, 0, batch.dictionaries());
        if (vector.getName().equals("filter_spec")) {
          spec = value instanceof String text ? text : null;
        } else if (vector.getName().startsWith("value_")) {
          values.put(Long.parseLong(vector.getName().substring(6)), value);
        }
      }
    } catch (IOException | NumberFormatException e) {
      throw declined("not an IPC stream: " + e.getMessage());
    }
    if (spec == null) {
      throw declined("expected one row with filter_spec");
    }
    Object document;
    try {
      document = JsonReader.parse(spec);
    } catch (IllegalArgumentException e) {
      throw declined(e.getMessage());
    }
    if (!(document instanceof Map<?, ?> top) || !top.keySet().equals(TOP_KEYS)) {
      throw declined("top level must be encoding/semantics/kind/predicates");
    }
    if (!ENCODING.equals(top.get("encoding")) || !SEMANTICS.equals(top.get("semantics"))
        || !"snapshot".equals(top.get("kind")) || !(top.get("predicates") instanceof List<?> list)) {
      throw declined("unsupported encoding, semantics or kind");
    }
    List<Map<?, ?>> required = new ArrayList<>();
    for (Object predicate : list) {
      if (!(predicate instanceof Map<?, ?> p) || !Set.of("required", "advisory").contains(p.get("mode"))) {
        throw declined("a predicate needs mode required/advisory");
      }
      if (p.get("mode").equals("advisory")) {
        continue;
      }
      check(p.get("expression"), schema, values, 0);
      required.add((Map<?, ?>) p.get("expression"));
    }
    return new Filters(required, values);
  }

  private static void check(Object node, Schema schema, Map<Long, Object> values, int depth) {
    if (depth > DEPTH_MAX) {
      throw declined("expression nested too deep");
    }
    if (!(node instanceof Map<?, ?> n)) {
      throw declined("an expression must be an object");
    }
    Object kind = n.get("node");
    switch (String.valueOf(kind)) {
      case "column_ref" -> {
        if (!(n.get("column_index") instanceof Long index) || index < 0 || index >= schema.getFields().size()) {
          throw declined("column_ref index " + n.get("column_index") + " out of range");
        }
        String name = schema.getFields().get(index.intValue()).getName();
        if (!name.equals(n.get("column_name"))) {
          throw declined("column_ref name '" + n.get("column_name") + "' does not match index " + index + " ('" + name
              + "')");
        }
      }
      case "literal" -> {
        if (!(n.get("value_ref") instanceof Long ref) || !values.containsKey(ref)) {
          throw declined("no value_" + n.get("value_ref"));
        }
      }
      case "comparison" -> {
        if (!COMPARISONS.contains(n.get("op"))) {
          throw declined("comparison op '" + n.get("op") + "'");
        }
        check(n.get("left"), schema, values, depth + 1);
        check(n.get("right"), schema, values, depth + 1);
      }
      case "and", "or" -> {
        if (!(n.get("children") instanceof List<?> children) || children.size() < 2) {
          throw declined(kind + " needs at least two children");
        }
        for (Object child : children) {
          check(child, schema, values, depth + 1);
        }
      }
      case "not", "is_null" -> check(n.get("expression"), schema, values, depth + 1);
      case "in" -> {
        if (!(n.get("set") instanceof Map<?, ?> set) || !"literal".equals(set.get("kind"))) {
          throw declined("only literal IN sets are supported");
        }
        if (!(set.get("value_ref") instanceof Long ref) || !(values.get(ref) instanceof List<?>)) {
          throw declined("an IN set must be a non-null list literal");
        }
        check(n.get("expression"), schema, values, depth + 1);
      }
      default -> throw declined("node '" + kind + "' is not supported by this worker");
    }
  }

  /** The rows of {@code batch} every required predicate keeps (TRUE; FALSE and NULL drop); closes {@code batch}. */
  VectorSchemaRoot apply(VectorSchemaRoot batch, BufferAllocator allocator) {
    if (predicates.isEmpty()) {
      return batch;
    }
    int rows = batch.getRowCount();
    List<Integer> kept = new ArrayList<>();
    for (int row = 0; row < rows; row++) {
      boolean keep = true;
      for (Map<?, ?> predicate : predicates) {
        if (!Boolean.TRUE.equals(eval(predicate, batch, row))) {
          keep = false;
          break;
        }
      }
      if (keep) {
        kept.add(row);
      }
    }
    if (kept.size() == rows) {
      return batch;
    }
    try (batch) {
      VectorSchemaRoot out = VectorSchemaRoot.create(batch.getSchema(), allocator);
      for (int column = 0; column < batch.getFieldVectors().size(); column++) {
        FieldVector from = batch.getVector(column);
        FieldVector to = out.getVector(column);
        for (int i = 0; i < kept.size(); i++) {
          to.copyFromSafe(kept.get(i), i, from);
        }
        to.setValueCount(kept.size());
      }
      out.setRowCount(kept.size());
      return out;
    }
  }

  /** One row's value of an expression: a value, or a Boolean (null for SQL's unknown). */
  private Object eval(Map<?, ?> node, VectorSchemaRoot batch, int row) {
    switch ((String) node.get("node")) {
      case "column_ref" -> {
        FieldVector vector = batch.getVector(((Long) node.get("column_index")).intValue());
        return Rows.value(vector, row, null);
      }
      case "literal" -> {
        return values.get((Long) node.get("value_ref"));
      }
      case "comparison" -> {
        Object left = eval((Map<?, ?>) node.get("left"), batch, row);
        Object right = eval((Map<?, ?>) node.get("right"), batch, row);
        String op = (String) node.get("op");
        if (op.equals("distinct_from") || op.equals("not_distinct_from")) {
          boolean distinct = left == null || right == null ? (left == null) != (right == null)
              : compare(left, right) != 0;
          return op.equals("distinct_from") == distinct;
        }
        if (left == null || right == null) {
          return null;
        }
        int order = compare(left, right);
        return switch (op) {
          case "eq" -> order == 0;
          case "ne" -> order != 0;
          case "lt" -> order < 0;
          case "le" -> order <= 0;
          case "gt" -> order > 0;
          default -> order >= 0;
        };
      }
      case "and", "or" -> {
        boolean and = node.get("node").equals("and");
        Boolean result = and;
        for (Object child : (List<?>) node.get("children")) {
          Boolean value = (Boolean) eval((Map<?, ?>) child, batch, row);
          if (value != null && value != and) {
            return !and;
          }
          if (value == null) {
            result = null;
          }
        }
        return result;
      }
      case "not" -> {
        Boolean value = (Boolean) eval((Map<?, ?>) node.get("expression"), batch, row);
        return value == null ? null : !value;
      }
      case "is_null" -> {
        boolean isNull = eval((Map<?, ?>) node.get("expression"), batch, row) == null;
        return Boolean.TRUE.equals(node.get("negated")) != isNull;
      }
      default -> {
        Object tested = eval((Map<?, ?>) node.get("expression"), batch, row);
        List<?> candidates = (List<?>) values.get((Long) ((Map<?, ?>) node.get("set")).get("value_ref"));
        Boolean found;
        if (tested == null) {
          found = candidates.isEmpty() ? Boolean.FALSE : null;
        } else {
          found = candidates.stream().anyMatch(c -> c != null && compare(tested, c) == 0) ? Boolean.TRUE
              : candidates.contains(null) ? null : Boolean.FALSE;
        }
        if (found == null || !Boolean.TRUE.equals(node.get("negated"))) {
          return found;
        }
        return !found;
      }
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static int compare(Object left, Object right) {
    if (left instanceof Number a && right instanceof Number b) {
      if (a instanceof Long x && b instanceof Long y) {
        return Long.compare(x, y);
      }
      return Double.compare(a.doubleValue(), b.doubleValue());
    }
    if (left instanceof byte[] a && right instanceof byte[] b) {
      return java.util.Arrays.compareUnsigned(a, b);
    }
    if (left.getClass() == right.getClass() && left instanceof Comparable c) {
      return c.compareTo(right);
    }
    throw declined("cannot compare " + left.getClass().getSimpleName() + " with " + right.getClass().getSimpleName());
  }
}
