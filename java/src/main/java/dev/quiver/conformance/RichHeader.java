package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.BINARY;
import static dev.quiver.conformance.Fields.BOOL;
import static dev.quiver.conformance.Fields.FLOAT32;
import static dev.quiver.conformance.Fields.FLOAT64;
import static dev.quiver.conformance.Fields.INT32;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.UTF8;
import static dev.quiver.conformance.Fields.field;
import static dev.quiver.conformance.Fields.listOf;
import static dev.quiver.conformance.Fields.mapOf;

import dev.quiver.rpc.StreamCall;
import dev.quiver.wire.StreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/** {@code RichHeader}: every field a deterministic function of a seed, exactly as the reference builds it. */
final class RichHeader {
  private RichHeader() {}

  static final Schema SCHEMA = new Schema(List.of(
      field("str_field", UTF8),
      field("bytes_field", BINARY),
      field("int_field", INT64),
      field("float_field", FLOAT64),
      field("bool_field", BOOL),
      listOf("list_of_int", field("item", INT64, true), false),
      listOf("list_of_str", field("item", UTF8, true), false),
      mapOf("dict_field", field("value", INT64, true), false),
      Fields.enumField("enum_field", Build.STATUS_DICTIONARY_ID, false),
      Build.point("nested_point", false),
      field("optional_str", UTF8, true),
      field("optional_int", INT64, true),
      Build.point("optional_nested", true),
      listOf("list_of_nested", Build.point("item", true), false),
      listOf("nested_list", listOf("item", field("item", INT64, true), true), false),
      field("annotated_int32", INT32),
      field("annotated_float32", FLOAT32),
      mapOf("dict_str_str", field("value", UTF8, true), false)));

  static StreamCall.HeaderBatch build(long seed, BufferAllocator allocator) {
    List<FieldVector> vectors = new ArrayList<>();
    for (Field field : SCHEMA.getFields()) {
      vectors.add(StreamWriter.memoryField(field).createVector(allocator));
    }
    VectorSchemaRoot root = new VectorSchemaRoot(vectors);
    double s = seed;
    ((VarCharVector) root.getVector("str_field")).setSafe(0, utf8("seed-" + seed));
    byte[] bytes = {(byte) Math.floorMod(seed, 256), (byte) Math.floorMod(seed + 1, 256), (byte) Math.floorMod(seed + 2, 256)};
    ((VarBinaryVector) root.getVector("bytes_field")).setSafe(0, bytes);
    ((BigIntVector) root.getVector("int_field")).setSafe(0, seed * 7);
    ((Float8Vector) root.getVector("float_field")).setSafe(0, s * 1.5);
    ((BitVector) root.getVector("bool_field")).setSafe(0, seed % 2 == 0 ? 1 : 0);
    Build.longs(root.getVector("list_of_int"), 0, seed, seed + 1, seed + 2);
    Build.strings(root.getVector("list_of_str"), 0, "item-" + seed, "item-" + (seed + 1));
    Map<String, Long> dict = new LinkedHashMap<>();
    dict.put("a", seed);
    dict.put("b", seed + 1);
    Build.map(root.getVector("dict_field"), 0, dict);
    Build.status(root.getVector("enum_field"), 0, Build.STATUS_MEMBERS.get((int) Math.floorMod(seed, 3L)));
    Build.point(root.getVector("nested_point"), 0, new double[] {s, s * 2});
    VarCharVector optionalStr = (VarCharVector) root.getVector("optional_str");
    if (seed % 2 == 0) {
      optionalStr.setSafe(0, utf8("opt-" + seed));
    } else {
      optionalStr.setNull(0);
    }
    BigIntVector optionalInt = (BigIntVector) root.getVector("optional_int");
    if (seed % 2 != 0) {
      optionalInt.setSafe(0, seed * 3);
    } else {
      optionalInt.setNull(0);
    }
    Build.point(root.getVector("optional_nested"), 0, seed % 3 == 0 ? new double[] {s, 0.0} : null);
    Build.points(root.getVector("list_of_nested"), 0, new double[] {s, s + 1});
    Build.nestedLongs(root.getVector("nested_list"), 0, new long[] {seed, seed + 1}, new long[] {seed + 2});
    ((IntVector) root.getVector("annotated_int32")).setSafe(0, (int) (seed % 1000));
    ((Float4Vector) root.getVector("annotated_float32")).setSafe(0, (float) (s / 3.0));
    Build.map(root.getVector("dict_str_str"), 0, Map.of("key", "val-" + seed));
    root.setRowCount(1);
    return new StreamCall.HeaderBatch(root, SCHEMA, Build.statusDictionary(allocator));
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
