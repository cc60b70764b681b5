package dev.quiver.vgi;

import dev.quiver.wire.Limits;
import dev.quiver.wire.StreamReader;
import dev.quiver.wire.StreamWriter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.Text;

/**
 * The vgi.v2 dataclasses' byte encodings (python/quiver/vgi/wire.py): a dataclass inside a
 * {@code binary} travels as a complete IPC stream of one row, a schema as one encapsulated schema
 * message. A row is a map from field name to value: String, byte[], Boolean, Long, a List, or a
 * Map for a struct (a map column is a List of two-element Lists, key then value). A
 * dictionary-encoded field takes its value here and gets a dictionary of the column's values.
 */
final class Rows {
  private Rows() {}

  /** Most rows one encoded dataclass stream carries here (one per function at most). */
  static final int ROWS_MAX = 4096;

  static byte[] row(Schema schema, Map<String, Object> row, BufferAllocator allocator) {
    return stream(schema, List.of(row), allocator);
  }

  /** A complete IPC stream of one batch holding {@code rows}. */
  static byte[] stream(Schema schema, List<Map<String, Object>> rows, BufferAllocator allocator) {
    if (rows.size() > ROWS_MAX) {
      throw new IllegalArgumentException(rows.size() + " rows exceed the " + ROWS_MAX + "-row dataclass limit");
    }
    List<FieldVector> vectors = new ArrayList<>();
    DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
    try {
      for (Field field : schema.getFields()) {
        DictionaryEncoding encoding = field.getDictionary();
        FieldVector vector = StreamWriter.memoryField(field).createVector(allocator);
        vectors.add(vector);
        if (encoding == null) {
          for (int i = 0; i < rows.size(); i++) {
            put(vector, i, rows.get(i).get(field.getName()));
          }
        } else {
          FieldVector values = new Field(field.getName(), new FieldType(true, field.getType(), null), null)
              .createVector(allocator);
          List<Object> distinct = new ArrayList<>();
          for (int i = 0; i < rows.size(); i++) {
            Object value = rows.get(i).get(field.getName());
            if (value == null) {
              continue;
            }
            int index = indexOf(distinct, value);
            if (index < 0) {
              index = distinct.size();
              distinct.add(value);
              put(values, index, value);
            }
            put(vector, i, (long) index);
          }
          values.setValueCount(distinct.size());
          dictionaries.put(new Dictionary(values, encoding));
        }
        vector.setValueCount(rows.size());
      }
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
        vectors = List.of();
        root.setRowCount(rows.size());
        StreamWriter writer = new StreamWriter(new WriteChannel(Channels.newChannel(bytes)), allocator, schema,
            dictionaries);
        writer.write(root, Map.of());
        writer.close();
      }
      return bytes.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      vectors.forEach(FieldVector::close);
      for (long id : dictionaries.getDictionaryIds()) {
        dictionaries.lookup(id).getVector().close();
      }
    }
  }

  private static int indexOf(List<Object> values, Object value) {
    for (int i = 0; i < values.size(); i++) {
      Object each = values.get(i);
      if (each instanceof byte[] a && value instanceof byte[] b ? java.util.Arrays.equals(a, b) : each.equals(value)) {
        return i;
      }
    }
    return -1;
  }

  /** Writes one value (null leaves the slot null) into {@code vector} at {@code index}. */
  private static void put(ValueVector vector, int index, Object value) {
    if (value == null) {
      if (vector instanceof StructVector struct) {
        struct.setNull(index);
      } else if (vector instanceof ListVector list) {
        list.setNull(index);
      } else {
        ((FieldVector) vector).setNull(index);
      }
      return;
    }
    if (vector instanceof VarCharVector text) {
      text.setSafe(index, ((String) value).getBytes(StandardCharsets.UTF_8));
    } else if (vector instanceof VarBinaryVector binary) {
      binary.setSafe(index, (byte[]) value);
    } else if (vector instanceof BitVector flag) {
      flag.setSafe(index, (Boolean) value ? 1 : 0);
    } else if (vector instanceof BigIntVector int64) {
      int64.setSafe(index, ((Number) value).longValue());
    } else if (vector instanceof IntVector int32) {
      int32.setSafe(index, ((Number) value).intValue());
    } else if (vector instanceof SmallIntVector int16) {
      int16.setSafe(index, ((Number) value).shortValue());
    } else if (vector instanceof UInt8Vector uint64) {
      uint64.setSafe(index, ((Number) value).longValue());
    } else if (vector instanceof ListVector list) {
      // A map column is a list of entries structs; its vector is a MapVector, a ListVector too.
      List<?> items = (List<?>) value;
      int first = list.startNewValue(index);
      FieldVector data = list.getDataVector();
      for (int i = 0; i < items.size(); i++) {
        Object item = items.get(i);
        if (data instanceof StructVector entries && item instanceof List<?> pair) {
          Map<String, Object> entry = new HashMap<>();
          List<Field> children = entries.getField().getChildren();
          entry.put(children.get(0).getName(), pair.get(0));
          entry.put(children.get(1).getName(), pair.get(1));
          item = entry;
        }
        put(data, first + i, item);
      }
      list.endValue(index, items.size());
    } else if (vector instanceof StructVector struct) {
      Map<?, ?> fields = (Map<?, ?>) value;
      for (FieldVector child : struct.getChildrenFromFields()) {
        put(child, index, fields.get(child.getName()));
      }
      struct.setIndexDefined(index);
    } else {
      throw new IllegalStateException("a dataclass has no " + vector.getField().getType() + " field");
    }
  }

  /** The single row of a serialized dataclass, by column name. */
  static Map<String, Object> readRow(byte[] data, BufferAllocator allocator) {
    List<Map<String, Object>> rows = readRows(data, allocator);
    if (rows.size() != 1) {
      throw new IllegalArgumentException("expected a 1-row dataclass batch, got " + rows.size() + " rows");
    }
    return rows.get(0);
  }

  /** The rows of the first batch of an IPC stream (none when the stream has no batch). */
  static List<Map<String, Object>> readRows(byte[] data, BufferAllocator allocator) {
    try (StreamReader reader = StreamReader.open(
        new ReadChannel(Channels.newChannel(new ByteArrayInputStream(data))), allocator, Limits.DEFAULT)) {
      if (reader == null) {
        throw new IllegalArgumentException("an empty dataclass stream");
      }
      var batch = reader.read();
      List<Map<String, Object>> rows = new ArrayList<>();
      if (batch == null) {
        return rows;
      }
      for (int i = 0; i < batch.rowCount(); i++) {
        Map<String, Object> row = new LinkedHashMap<>();
        for (FieldVector vector : batch.root().getFieldVectors()) {
          row.put(vector.getName(), value(vector, i, batch.dictionaries()));
        }
        rows.add(row);
      }
      return rows;
    } catch (IOException e) {
      throw new IllegalArgumentException("not a dataclass stream: " + e.getMessage(), e);
    }
  }

  /** The plain Java value at {@code index}: String, byte[], Boolean, Long, List or Map. */
  static Object value(FieldVector vector, int index, DictionaryProvider dictionaries) {
    if (vector.isNull(index)) {
      return null;
    }
    DictionaryEncoding encoding = vector.getField().getDictionary();
    if (encoding != null) {
      long key = ((Number) vector.getObject(index)).longValue();
      FieldVector values = dictionaries.lookup(encoding.getId()).getVector();
      return value(values, Math.toIntExact(key), dictionaries);
    }
    return plain(vector.getObject(index));
  }

  private static Object plain(Object value) {
    if (value instanceof Text text) {
      return text.toString();
    }
    if (value instanceof Number number && !(value instanceof Double) && !(value instanceof Float)) {
      return number.longValue();
    }
    if (value instanceof List<?> list) {
      List<Object> items = new ArrayList<>();
      list.forEach(item -> items.add(item == null ? null : plain(item)));
      return items;
    }
    if (value instanceof Map<?, ?> map) {
      Map<String, Object> fields = new LinkedHashMap<>();
      map.forEach((k, v) -> fields.put(String.valueOf(k), v == null ? null : plain(v)));
      return fields;
    }
    return value;
  }

  /** A schema as one encapsulated IPC schema message (no end marker), as pyarrow's serialize(). */
  static byte[] schemaBytes(Schema schema) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      MessageSerializer.serialize(new WriteChannel(Channels.newChannel(bytes)), schema);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** A schema message back; null for absent or empty bytes. */
  static Schema readSchema(byte[] data) {
    if (data == null || data.length == 0) {
      return null;
    }
    try {
      var result = MessageSerializer.readMessage(new ReadChannel(Channels.newChannel(new ByteArrayInputStream(data))));
      if (result == null) {
        throw new IllegalArgumentException("an empty schema message");
      }
      return MessageSerializer.deserializeSchema(result);
    } catch (IOException e) {
      throw new IllegalArgumentException("not a schema message: " + e.getMessage(), e);
    }
  }
}
