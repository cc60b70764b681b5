package dev.quiver.conformance;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/** Fills row {@code row} of nested columns: lists, maps, {@code Point} structs and {@code Status} enums. */
final class Build {
  private Build() {}

  /** {@code Status} members in declaration order; an enum travels as the member name. */
  static final List<String> STATUS_MEMBERS = List.of("PENDING", "ACTIVE", "CLOSED");
  static final long STATUS_DICTIONARY_ID = 0;

  /** {@code Point{x: float64, y: float64}} as a struct type's children. */
  static final List<Field> POINT_CHILDREN =
      List.of(Fields.field("x", Fields.FLOAT64), Fields.field("y", Fields.FLOAT64));

  static Field point(String name, boolean nullable) {
    return new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null), POINT_CHILDREN);
  }

  /** The dictionary every {@code Status} column refers to. */
  static DictionaryProvider statusDictionary(BufferAllocator allocator) {
    Field field = new Field("status", FieldType.nullable(Fields.UTF8), null);
    VarCharVector members = new VarCharVector(field, allocator);
    for (int i = 0; i < STATUS_MEMBERS.size(); i++) {
      members.setSafe(i, STATUS_MEMBERS.get(i).getBytes(StandardCharsets.UTF_8));
    }
    members.setValueCount(STATUS_MEMBERS.size());
    var provider = new DictionaryProvider.MapDictionaryProvider();
    provider.put(new Dictionary(members,
        new DictionaryEncoding(STATUS_DICTIONARY_ID, false, new ArrowType.Int(16, true))));
    return provider;
  }

  static void status(FieldVector column, int row, String member) {
    int index = STATUS_MEMBERS.indexOf(member);
    if (index < 0) {
      throw new IllegalArgumentException("not a Status member: " + member);
    }
    ((SmallIntVector) column).setSafe(row, index);
  }

  static void longs(FieldVector column, int row, long... values) {
    ListVector list = (ListVector) column;
    int offset = list.startNewValue(row);
    BigIntVector items = (BigIntVector) list.getDataVector();
    for (int i = 0; i < values.length; i++) {
      items.setSafe(offset + i, values[i]);
    }
    list.endValue(row, values.length);
  }

  static void strings(FieldVector column, int row, String... values) {
    ListVector list = (ListVector) column;
    int offset = list.startNewValue(row);
    VarCharVector items = (VarCharVector) list.getDataVector();
    for (int i = 0; i < values.length; i++) {
      items.setSafe(offset + i, values[i].getBytes(StandardCharsets.UTF_8));
    }
    list.endValue(row, values.length);
  }

  /** {@code list<list<int64>>}: one inner list per array. */
  static void nestedLongs(FieldVector column, int row, long[]... inner) {
    ListVector outer = (ListVector) column;
    int offset = outer.startNewValue(row);
    ListVector lists = (ListVector) outer.getDataVector();
    for (int i = 0; i < inner.length; i++) {
      longs(lists, offset + i, inner[i]);
    }
    outer.endValue(row, inner.length);
  }

  /** {@code map<utf8, V>}; values are Longs or Strings. */
  static void map(FieldVector column, int row, Map<String, ?> entries) {
    MapVector map = (MapVector) column;
    int offset = map.startNewValue(row);
    StructVector pairs = (StructVector) map.getDataVector();
    VarCharVector keys = (VarCharVector) pairs.getChild("key");
    FieldVector values = (FieldVector) pairs.getChild("value");
    int i = 0;
    for (Map.Entry<String, ?> entry : entries.entrySet()) {
      keys.setSafe(offset + i, entry.getKey().getBytes(StandardCharsets.UTF_8));
      if (entry.getValue() instanceof Long number) {
        ((BigIntVector) values).setSafe(offset + i, number);
      } else {
        ((VarCharVector) values).setSafe(offset + i, entry.getValue().toString().getBytes(StandardCharsets.UTF_8));
      }
      pairs.setIndexDefined(offset + i);
      i++;
    }
    map.endValue(row, entries.size());
  }

  /** A {@code Point} struct at {@code row}, or null when {@code xy} is null. */
  static void point(FieldVector column, int row, double[] xy) {
    StructVector struct = (StructVector) column;
    if (xy == null) {
      struct.setNull(row);
      return;
    }
    ((Float8Vector) struct.getChild("x")).setSafe(row, xy[0]);
    ((Float8Vector) struct.getChild("y")).setSafe(row, xy[1]);
    struct.setIndexDefined(row);
  }

  /** {@code list<Point>}. */
  static void points(FieldVector column, int row, double[]... xys) {
    ListVector list = (ListVector) column;
    int offset = list.startNewValue(row);
    for (int i = 0; i < xys.length; i++) {
      point(list.getDataVector(), offset + i, xys[i]);
    }
    list.endValue(row, xys.length);
  }
}
