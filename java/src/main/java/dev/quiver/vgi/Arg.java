package dev.quiver.vgi;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * One parameter of a function: positional unless {@link #named}, a table-in-out's input table when
 * made by {@link #table}; integers may carry a range and named ones a default
 * (crates/quiver-vgi/src/declarations.rs). Immutable: each setter returns a copy.
 */
public record Arg(String name, ArrowType type, String doc, boolean named, boolean table, Object defaultValue,
    Long min, Long max, boolean constant) {
  public Arg {
    if (!name.matches("[a-z_][a-z0-9_]*")) {
      throw new IllegalArgumentException("argument name '" + name + "' must be a lowercase identifier");
    }
    if ((min != null || max != null) && !(type instanceof ArrowType.Int)) {
      throw new IllegalArgumentException("only integer arguments take a range");
    }
    if (defaultValue != null && !named) {
      throw new IllegalArgumentException("only named arguments have defaults");
    }
  }

  /** A positional argument. */
  public static Arg of(String name, ArrowType type) {
    return new Arg(name, type, "", false, false, null, null, null, false);
  }

  /** A named argument ({@code name => value} in SQL). */
  public static Arg named(String name, ArrowType type) {
    return new Arg(name, type, "", true, false, null, null, null, false);
  }

  /** The input table of a table-in-out function. */
  public static Arg table(String name) {
    return new Arg(name, ArrowType.Null.INSTANCE, "the input table", false, true, null, null, null, false);
  }

  public Arg doc(String text) {
    return new Arg(name, type, text, named, table, defaultValue, min, max, constant);
  }

  public Arg min(long value) {
    return new Arg(name, type, doc, named, table, defaultValue, value, max, constant);
  }

  public Arg max(long value) {
    return new Arg(name, type, doc, named, table, defaultValue, min, value, constant);
  }

  /** The value a named argument takes when the call leaves it out (a Long or a String). */
  public Arg defaultsTo(Object value) {
    return new Arg(name, type, doc, named, table, value, min, max, constant);
  }

  /** An aggregate's argument that arrives once, at bind, instead of as a column ({@link #constant()} tells). */
  public Arg asConstant() {
    return new Arg(name, type, doc, named, table, defaultValue, min, max, true);
  }

  /** The field describing this parameter in {@code FunctionInfo.arguments}. */
  Field field() {
    Map<String, String> metadata = new LinkedHashMap<>();
    if (!doc.isEmpty()) {
      metadata.put("vgi_doc", doc);
    }
    if (named) {
      metadata.put("vgi_arg", "named");
    }
    if (table) {
      metadata.put("vgi_type", "table");
    }
    if (constant) {
      metadata.put("vgi_const", "true");
    }
    if (defaultValue != null) {
      metadata.put("vgi_default", defaultValue instanceof String text ? dev.quiver.wire.Json.encodeCompact(text)
          : defaultValue.toString());
    }
    if (min != null || max != null) {
      metadata.put("vgi_range", (min == null ? "(-inf" : "[" + min) + ", " + (max == null ? "+inf)" : max + "]"));
    }
    return new Field(name, new FieldType(true, type, null, metadata.isEmpty() ? null : metadata), null);
  }
}
