package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.BINARY;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.field;
import static dev.quiver.conformance.Fields.listOf;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Params;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.UnaryResult;
import dev.quiver.wire.RpcError;
import dev.quiver.wire.StreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * {@code pack_nested_containers}: enums and points nested in lists and maps come in, are checked
 * to be real {@code Status} members, and go back packed into a {@code NestedContainers} value.
 */
final class NestedContainers {
  private NestedContainers() {}

  static final Schema SCHEMA = new Schema(List.of(
      listOf("statuses", Fields.enumField("item", Build.STATUS_DICTIONARY_ID, true), false),
      listOf("points", Build.point("item", true), false),
      Fields.mapOf("status_by_name", Fields.enumField("value", Build.STATUS_DICTIONARY_ID, true), false),
      listOf("frozen_statuses", Fields.enumField("item", Build.STATUS_DICTIONARY_ID, true), false),
      Fields.enumField("tagged_status", Build.STATUS_DICTIONARY_ID, true),
      Build.point("tagged_point", true),
      field("tagged_batch", BINARY, true)));

  static void register(Protocol protocol) {
    protocol.add(Method.unary("pack_nested_containers",
        List.of(
            listOf("statuses", Fields.enumField("item", 0, true), false),
            listOf("points", Build.point("item", true), false),
            Fields.mapOf("status_by_name", Fields.enumField("value", 1, true), false)),
        field("result", BINARY),
        (params, ctx) -> pack(params, ctx.allocator())));
    Field statusList = listOf("statuses", Fields.enumField("item", 0, true), false);
    protocol.add(Method.unary("echo_status_list", List.of(statusList),
        new Field("result", statusList.getFieldType(), statusList.getChildren()), (params, ctx) -> {
          ListVector statuses = (ListVector) params.column("statuses");
          members(statuses.getDataVector(), statuses.getElementStartIndex(0), statuses.getElementEndIndex(0),
              params.dictionaries(), "statuses");
          return new UnaryResult(statuses, params.dictionaries());
        }));
  }

  private static UnaryResult pack(Params params, BufferAllocator allocator) throws Exception {
    ListVector statusList = (ListVector) params.column("statuses");
    List<String> statuses = members(statusList.getDataVector(), statusList.getElementStartIndex(0),
        statusList.getElementEndIndex(0), params.dictionaries(), "statuses");
    ListVector pointList = (ListVector) params.column("points");
    StructVector pointValues = (StructVector) pointList.getDataVector();
    List<double[]> points = new ArrayList<>();
    for (int i = pointList.getElementStartIndex(0); i < pointList.getElementEndIndex(0); i++) {
      points.add(new double[] {
          ((Float8Vector) pointValues.getChild("x")).get(i), ((Float8Vector) pointValues.getChild("y")).get(i)});
    }
    MapVector map = (MapVector) params.column("status_by_name");
    StructVector entries = (StructVector) map.getDataVector();
    int start = map.getElementStartIndex(0);
    int end = map.getElementEndIndex(0);
    VarCharVector keys = (VarCharVector) entries.getChild("key");
    List<String> values = members((FieldVector) entries.getChild("value"), start, end, params.dictionaries(),
        "status_by_name values");
    Map<String, String> byName = new LinkedHashMap<>();
    for (int i = start; i < end; i++) {
      byName.put(new String(keys.get(i), StandardCharsets.UTF_8), values.get(i - start));
    }

    List<FieldVector> vectors = new ArrayList<>();
    for (Field field : SCHEMA.getFields()) {
      vectors.add(StreamWriter.memoryField(field).createVector(allocator));
    }
    DictionaryProvider dictionary = Build.statusDictionary(allocator);
    try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
      statusIndices(root.getVector("statuses"), statuses);
      Build.points(root.getVector("points"), 0, points.toArray(new double[0][]));
      statusMap(root.getVector("status_by_name"), byName);
      statusIndices(root.getVector("frozen_statuses"), new ArrayList<>(new LinkedHashSet<>(statuses)));
      if (statuses.isEmpty()) {
        root.getVector("tagged_status").setNull(0);
      } else {
        Build.status(root.getVector("tagged_status"), 0, statuses.get(0));
      }
      Build.point(root.getVector("tagged_point"), 0, points.isEmpty() ? null : points.get(0));
      ((VarBinaryVector) root.getVector("tagged_batch")).setSafe(0, taggedBatch(allocator));
      root.setRowCount(1);
      VarBinaryVector result = new VarBinaryVector("result", allocator);
      result.setSafe(0, Dataclasses.toIpc(root, dictionary));
      result.setValueCount(1);
      return UnaryResult.of(result);
    } finally {
      for (long id : dictionary.getDictionaryIds()) {
        dictionary.lookup(id).getVector().close();
      }
    }
  }

  /** The member names of enum indices {@code start..end}, each checked to be a {@code Status} member. */
  private static List<String> members(FieldVector indices, int start, int end, DictionaryProvider dictionaries,
      String what) {
    Field field = indices.getField();
    if (field.getDictionary() == null) {
      throw new RpcError("TypeError", what + " were not reconstructed as Status members");
    }
    Dictionary dictionary = dictionaries.lookup(field.getDictionary().getId());
    VarCharVector names = (VarCharVector) dictionary.getVector();
    List<String> members = new ArrayList<>();
    for (int i = start; i < end; i++) {
      String name = new String(names.get((int) ((BaseIntVector) indices).getValueAsLong(i)), StandardCharsets.UTF_8);
      if (!Build.STATUS_MEMBERS.contains(name)) {
        throw new RpcError("KeyError", "'" + name + "'");
      }
      members.add(name);
    }
    return members;
  }

  private static void statusIndices(FieldVector column, List<String> members) {
    ListVector list = (ListVector) column;
    int offset = list.startNewValue(0);
    for (int i = 0; i < members.size(); i++) {
      Build.status(list.getDataVector(), offset + i, members.get(i));
    }
    list.endValue(0, members.size());
  }

  private static void statusMap(FieldVector column, Map<String, String> byName) {
    MapVector map = (MapVector) column;
    int offset = map.startNewValue(0);
    StructVector pairs = (StructVector) map.getDataVector();
    int i = 0;
    for (Map.Entry<String, String> entry : byName.entrySet()) {
      ((VarCharVector) pairs.getChild("key")).setSafe(offset + i, entry.getKey().getBytes(StandardCharsets.UTF_8));
      Build.status((FieldVector) pairs.getChild("value"), offset + i, entry.getValue());
      pairs.setIndexDefined(offset + i);
      i++;
    }
    map.endValue(0, byName.size());
  }

  /** {@code {value: int64 [1, 2]}} as an IPC stream: the batch the reference tags its value with. */
  private static byte[] taggedBatch(BufferAllocator allocator) throws Exception {
    Schema schema = new Schema(List.of(field("value", INT64, true)));
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
      BigIntVector value = (BigIntVector) root.getVector("value");
      value.setSafe(0, 1);
      value.setSafe(1, 2);
      root.setRowCount(2);
      return Dataclasses.toIpc(root, null);
    }
  }
}
