package dev.quiver.vgi;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a worker says about its catalog, a schema or a function besides signatures: a comment,
 * tags, example queries and categories (crates/quiver-vgi/src/docs.rs, python/quiver/vgi/docs.py).
 * An engine shows them in SQL: DuckDB's duckdb_databases(), duckdb_schemas(), duckdb_functions().
 * Tags are free-form strings; VGI's metadata linter reads keys such as {@code vgi.title},
 * {@code vgi.doc_llm}, {@code vgi.category} and {@code vgi.source_url}.
 */
public final class Docs {
  /** An example query, runnable as written, and what it shows. */
  public record Example(String sql, String description) {}

  String comment;
  final Map<String, String> tags = new LinkedHashMap<>();
  final List<Example> examples = new ArrayList<>();
  final List<String> categories = new ArrayList<>();

  /** The wire's map&lt;utf8, utf8&gt;: a list of [key, value] entries. */
  List<Object> tagEntries() {
    List<Object> entries = new ArrayList<>();
    tags.forEach((key, value) -> entries.add(List.of(key, value)));
    return entries;
  }

  /** The FunctionInfo.examples structs. */
  List<Object> exampleRows() {
    List<Object> rows = new ArrayList<>();
    for (Example example : examples) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("sql", example.sql());
      row.put("description", example.description());
      row.put("expected_output", null);
      rows.add(row);
    }
    return rows;
  }

  static String identifier(String name, String what) {
    if (!name.matches("[a-z_][a-z0-9_]*")) {
      throw new IllegalArgumentException(what + " name '" + name + "' must be a lowercase identifier");
    }
    return name;
  }
}
