package dev.quiver.conformance;

import java.util.List;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/** The Arrow fields the conformance protocol declares, spelled once (python/README.md's type table). */
final class Fields {
  private Fields() {}

  static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
  static final ArrowType BINARY = ArrowType.Binary.INSTANCE;
  static final ArrowType INT64 = new ArrowType.Int(64, true);
  static final ArrowType INT32 = new ArrowType.Int(32, true);
  static final ArrowType FLOAT64 = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
  static final ArrowType FLOAT32 = new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
  static final ArrowType BOOL = ArrowType.Bool.INSTANCE;

  static Field field(String name, ArrowType type, boolean nullable) {
    return new Field(name, new FieldType(nullable, type, null), null);
  }

  static Field field(String name, ArrowType type) {
    return field(name, type, false);
  }

  /** {@code list<item: T>}, the list every vgi-rpc implementation writes. */
  static Field listOf(String name, Field item, boolean nullable) {
    return new Field(name, new FieldType(nullable, ArrowType.List.INSTANCE, null), List.of(item));
  }

  /** {@code map<utf8, V>} with the entries/key/value names pyarrow uses. */
  static Field mapOf(String name, Field value, boolean nullable) {
    Field key = field("key", UTF8, false);
    Field entries = new Field("entries", new FieldType(false, ArrowType.Struct.INSTANCE, null), List.of(key, value));
    return new Field(name, new FieldType(nullable, new ArrowType.Map(false), null), List.of(entries));
  }

  /** An enum: {@code dictionary<int16, utf8>} holding the member name. */
  static Field enumField(String name, long dictionaryId, boolean nullable) {
    DictionaryEncoding encoding = new DictionaryEncoding(dictionaryId, false, new ArrowType.Int(16, true));
    return new Field(name, new FieldType(nullable, UTF8, encoding), null);
  }

  static Schema schema(Field... fields) {
    return new Schema(List.of(fields));
  }

  /** {@code {index: int64, value: int64}}: what the counting producers emit. */
  static final Schema COUNTER = schema(field("index", INT64, true), field("value", INT64, true));
  /** {@code {value: float64}}: the exchanges' input and output. */
  static final Schema SCALE = schema(field("value", FLOAT64, true));
}
