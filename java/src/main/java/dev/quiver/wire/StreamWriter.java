package dev.quiver.wire;

import com.google.flatbuffers.FlatBufferBuilder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.flatbuf.KeyValue;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.MetadataVersion;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowDictionaryBatch;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Writes one IPC stream: the schema (as sent: dictionary-encoded fields carry their value type),
 * every dictionary it refers to, record batches each with their own custom metadata, then the end
 * marker. Arrow Java's own writer cannot attach per-batch metadata, so record-batch messages are
 * built here from Arrow's flatbuffer classes.
 */
public final class StreamWriter {
  private final WriteChannel channel;
  private final BufferAllocator allocator;
  private final Schema schema;
  private boolean closed;

  /** Writes the schema and the dictionaries; {@code dictionaries} may lack ids (sent empty). */
  public StreamWriter(WriteChannel channel, BufferAllocator allocator, Schema schema, DictionaryProvider dictionaries)
      throws IOException {
    this.channel = channel;
    this.allocator = allocator;
    this.schema = schema;
    MessageSerializer.serialize(channel, schema);
    Map<Long, Field> encoded = new LinkedHashMap<>();
    for (Field field : schema.getFields()) {
      collectDictionaries(field, encoded);
    }
    for (Map.Entry<Long, Field> entry : encoded.entrySet()) {
      writeDictionary(entry.getKey(), entry.getValue(), dictionaries);
    }
  }

  public Schema schema() {
    return schema;
  }

  /** Writes one batch of {@code root} with its custom metadata. */
  public void write(VectorSchemaRoot root, Map<String, String> metadata) throws IOException {
    if (closed) {
      throw new IllegalStateException("stream already ended");
    }
    try (ArrowRecordBatch batch = new VectorUnloader(root).getRecordBatch()) {
      writeRecordBatch(channel, batch, metadata);
    }
  }

  /** Writes a zero-row batch on this stream's schema (a log, an error, a void result). */
  public void writeEmpty(Map<String, String> metadata) throws IOException {
    try (VectorSchemaRoot empty = emptyRoot(schema, allocator)) {
      write(empty, metadata);
    }
  }

  /** Writes the end marker. */
  public void close() throws IOException {
    if (!closed) {
      closed = true;
      channel.writeIntLittleEndian(MessageSerializer.IPC_CONTINUATION_TOKEN);
      channel.writeIntLittleEndian(0);
    }
  }

  /** A zero-row root on {@code schema} (dictionary-encoded fields become their index type). */
  public static VectorSchemaRoot emptyRoot(Schema schema, BufferAllocator allocator) {
    List<FieldVector> vectors = new ArrayList<>();
    for (Field field : schema.getFields()) {
      vectors.add(memoryField(field).createVector(allocator));
    }
    VectorSchemaRoot root = new VectorSchemaRoot(vectors);
    root.setRowCount(0);
    return root;
  }

  /** The field a vector holding {@code field}'s values has (dictionary indices where encoded). */
  public static Field memoryField(Field field) {
    List<Field> children = new ArrayList<>();
    DictionaryEncoding encoding = field.getDictionary();
    if (encoding != null) {
      return new Field(
          field.getName(), new FieldType(field.isNullable(), encoding.getIndexType(), encoding, field.getMetadata()), null);
    }
    for (Field child : field.getChildren()) {
      children.add(memoryField(child));
    }
    return new Field(field.getName(), field.getFieldType(), children);
  }

  private static void collectDictionaries(Field field, Map<Long, Field> encoded) {
    if (field.getDictionary() != null) {
      encoded.putIfAbsent(field.getDictionary().getId(), field);
    }
    for (Field child : field.getChildren()) {
      collectDictionaries(child, encoded);
    }
  }

  private void writeDictionary(long id, Field field, DictionaryProvider dictionaries) throws IOException {
    Dictionary dictionary = dictionaries == null ? null : dictionaries.lookup(id);
    FieldVector values;
    boolean owned = dictionary == null;
    if (owned) {
      Field valueField = new Field(field.getName(), new FieldType(true, field.getType(), null), field.getChildren());
      values = valueField.createVector(allocator);
      values.setValueCount(0);
    } else {
      values = dictionary.getVector();
    }
    try {
      VectorSchemaRoot holder = new VectorSchemaRoot(List.of(values.getField()), List.of(values), values.getValueCount());
      try (ArrowRecordBatch data = new VectorUnloader(holder).getRecordBatch();
          ArrowDictionaryBatch batch = new ArrowDictionaryBatch(id, data, false)) {
        MessageSerializer.serialize(channel, batch);
      }
    } finally {
      if (owned) {
        values.close();
      }
    }
  }

  /** Writes a record-batch message whose flatbuffer carries {@code metadata}, then its body. */
  static void writeRecordBatch(WriteChannel channel, ArrowRecordBatch batch, Map<String, String> metadata)
      throws IOException {
    FlatBufferBuilder builder = new FlatBufferBuilder();
    int header = batch.writeTo(builder);
    int customMetadata = 0;
    if (!metadata.isEmpty()) {
      int[] pairs = new int[metadata.size()];
      int i = 0;
      for (Map.Entry<String, String> entry : metadata.entrySet()) {
        int key = builder.createString(entry.getKey());
        int value = builder.createString(entry.getValue());
        pairs[i++] = KeyValue.createKeyValue(builder, key, value);
      }
      customMetadata = Message.createCustomMetadataVector(builder, pairs);
    }
    Message.startMessage(builder);
    Message.addVersion(builder, MetadataVersion.V5);
    Message.addHeaderType(builder, MessageHeader.RecordBatch);
    Message.addHeader(builder, header);
    Message.addBodyLength(builder, batch.computeBodyLength());
    if (customMetadata != 0) {
      Message.addCustomMetadata(builder, customMetadata);
    }
    builder.finish(Message.endMessage(builder));
    ByteBuffer message = builder.dataBuffer();
    MessageSerializer.writeMessageBuffer(channel, message.remaining(), message);
    long written = MessageSerializer.writeBatchBuffers(channel, batch);
    assert written == batch.computeBodyLength() : "body length disagrees with the header";
  }
}
