package dev.quiver.vgi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.quiver.vgi.examples.AllInOne;
import dev.quiver.wire.RpcError;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

class SdkTest {
  @Test
  void jsonReaderReadsFilterDocumentsAndRefusesGarbage() {
    Object parsed = JsonReader.parse("{\"a\": [1, -2, 3.5, \"x\\u00e9\\n\", true, null], \"b\": {}}");
    Map<?, ?> top = (Map<?, ?>) parsed;
    List<Object> expected = new ArrayList<>(List.of(1L, -2L, 3.5, "x\u00e9\n", true));
    expected.add(null);
    assertEquals(expected, top.get("a"));
    assertEquals(Map.of(), top.get("b"));
    for (String bad : new String[] {"{", "[1,]", "{\"a\" 1}", "01x", "\"open", "[1] 2"}) {
      assertThrows(IllegalArgumentException.class, () -> JsonReader.parse(bad), bad);
    }
    assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("[".repeat(200) + "]".repeat(200)));
  }

  @Test
  void dataclassRowsRoundTripWithEnumsMapsAndListsOfStructs() {
    try (BufferAllocator allocator = new RootAllocator()) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("tags", List.of(List.of("k", "v")));
      row.put("name", "numbers");
      row.put("schema_path", List.of("main"));
      row.put("function_type", "TABLE");
      row.put("arguments", new byte[] {1, 2});
      row.put("output_schema", new byte[] {3});
      row.put("description", "d");
      row.put("examples", List.of(Map.of("sql", "SELECT 1", "description", "one")));
      row.put("max_workers", 8L);
      for (String flag : List.of("supports_batch_index", "supports_splits", "filters_exactly_applied",
          "supports_positions", "supports_window", "streaming_partitioned", "has_finalize", "source_order_dependent",
          "sink_order_dependent", "requires_input_batch_index", "input_from_args")) {
        row.put(flag, false);
      }
      for (String list : List.of("categories", "filter_semantic_profiles", "additional_filter_functions",
          "runtime_filter_algorithms", "filter_evaluation_contexts", "required_settings", "required_secrets")) {
        row.put(list, List.of());
      }
      row.put("partition_kind", "NOT_PARTITIONED");
      row.put("order_dependent", "NOT_ORDER_DEPENDENT");
      row.put("distinct_dependent", "NOT_DISTINCT_DEPENDENT");
      Map<String, Object> back = Rows.readRow(Rows.row(Dataclasses.FUNCTION_INFO, row, allocator), allocator);
      assertEquals("TABLE", back.get("function_type"), "an enum comes back through its dictionary");
      assertArrayEquals(new byte[] {1, 2}, (byte[]) back.get("arguments"));
      assertEquals(8L, back.get("max_workers"));
      assertNull(back.get("stability"));
      assertEquals(List.of("main"), back.get("schema_path"));
      assertEquals("SELECT 1", ((Map<?, ?>) ((List<?>) back.get("examples")).get(0)).get("sql"));
      assertEquals(0, allocator.getAllocatedMemory(), "encoding and decoding release every buffer");
    }
  }

  @Test
  void argumentErrorsNameTheArgumentAndTheTypes() {
    Worker worker = AllInOne.worker();
    Function numbers = worker.functions().get("numbers");
    try (BufferAllocator allocator = new RootAllocator()) {
      RpcError missing = assertThrows(RpcError.class, () -> Binding.bindArguments(numbers, null, allocator));
      assertEquals("ArgumentValidationError", missing.report().exceptionType());
      assertEquals("numbers(): missing argument 0 'n' (BIGINT)", missing.report().message());
      RpcError unknown = assertThrows(RpcError.class, () -> worker.catalog.resolve("nope", null));
      assertTrue(unknown.report().message().startsWith("Unknown function: 'nope'"), unknown.report().message());
      assertEquals(List.of("n", "batch_rows"),
          numbers.argumentsSchema().getFields().stream().map(f -> f.getName()).toList());
      assertEquals("4194304", numbers.argumentsSchema().getFields().get(1).getMetadata().get("vgi_default"));
      assertEquals("[0, +inf)", numbers.argumentsSchema().getFields().get(0).getMetadata().get("vgi_range"));
    }
  }

  @Test
  void declarationsAreCheckedWhenMade() {
    Worker worker = new Worker("w", "");
    assertThrows(IllegalArgumentException.class, () -> worker.table("Bad-Name"));
    Function table = worker.table("t");
    assertThrows(IllegalStateException.class, () -> table.inOut((a, s, i, al) -> null));
    assertThrows(IllegalArgumentException.class, () -> table.arg(Arg.table("data")));
    assertThrows(IllegalArgumentException.class, () -> worker.table("t"));
    assertThrows(IllegalStateException.class, table::check, "a table function needs output and scan");
  }

  @Test
  void aSharedCounterHandsOutEveryUnitOnceAcrossProcesses() {
    byte[] id = new byte[16];
    new SecureRandom().nextBytes(id);
    Executions primary = new Executions();
    Executions secondary = new Executions();
    Executions.Counter first = primary.start(id, 1000);
    Executions.Counter second = secondary.join(id);
    long claimed = 0;
    long next = 0;
    for (int turn = 0; ; turn++) {
      Scan.Range range = (turn % 2 == 0 ? first : second).claim(7);
      if (range == null) {
        break;
      }
      assertEquals(next, range.start(), "ranges are contiguous and disjoint");
      next = range.end();
      claimed += range.end() - range.start();
    }
    assertEquals(1000, claimed);
    assertNull(second.claim(7), "a finished execution stays finished");
    assertTrue(!Executions.directory().resolve(java.util.HexFormat.of().formatHex(id) + ".work").toFile().exists(),
        "the work file goes once every unit is claimed");
  }
}
