package dev.quiver.wire;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.flatbuf.KeyValue;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowDictionaryBatch;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.DictionaryUtility;

/**
 * Reads one IPC stream (schema, dictionaries, record batches, end marker) off a byte stream that
 * carries many back to back, keeping each batch's custom metadata. It reads exactly one message at
 * a time, so the next stream's bytes stay unread. Every announced size is checked against
 * {@link Limits} before anything is allocated.
 */
public final class StreamReader implements AutoCloseable {
  private final ReadChannel channel;
  private final BufferAllocator allocator;
  private final Limits limits;
  private final Schema schema;
  private final VectorSchemaRoot root;
  private final Map<Long, Dictionary> dictionaries = new HashMap<>();
  private final DictionaryProvider.MapDictionaryProvider provider = new DictionaryProvider.MapDictionaryProvider();
  private long messageCount = 1;
  private boolean ended;

  private StreamReader(ReadChannel channel, BufferAllocator allocator, Limits limits, Schema schema) {
    this.channel = channel;
    this.allocator = allocator;
    this.limits = limits;
    this.schema = schema;
    List<Field> memoryFields = new ArrayList<>();
    for (Field field : schema.getFields()) {
      memoryFields.add(DictionaryUtility.toMemoryFormat(field, allocator, dictionaries));
    }
    List<FieldVector> vectors = new ArrayList<>();
    for (Field field : memoryFields) {
      vectors.add(field.createVector(allocator));
    }
    this.root = new VectorSchemaRoot(memoryFields, vectors, 0);
    dictionaries.values().forEach(provider::put);
  }

  /**
   * Opens the next stream: reads its schema message. Returns {@code null} when the peer closed
   * the connection cleanly before the stream began.
   */
  public static StreamReader open(ReadChannel channel, BufferAllocator allocator, Limits limits) throws IOException {
    MessageMetadataResult first = readMessage(channel, limits, true);
    if (first == null) {
      return null;
    }
    if (first.getMessage().headerType() != MessageHeader.Schema) {
      skipBody(channel, first);
      throw new WireException("a stream must begin with a schema message", false);
    }
    Schema schema = MessageSerializer.deserializeSchema(first);
    return new StreamReader(channel, allocator, limits, schema);
  }

  /** The stream's schema as sent (dictionary-encoded fields carry their value type). */
  public Schema schema() {
    return schema;
  }

  /** The next record batch, or {@code null} at the end marker. Valid until the next call. */
  public Batch read() throws IOException {
    while (!ended) {
      MessageMetadataResult result = readMessage(channel, limits, false);
      if (result == null) {
        ended = true;
        return null;
      }
      if (++messageCount > limits.messagesPerStreamMax()) {
        throw new WireException("stream carries more than " + limits.messagesPerStreamMax() + " messages", false);
      }
      Message message = result.getMessage();
      ArrowBuf body = MessageSerializer.readMessageBody(channel, result.getMessageBodyLength(), allocator);
      // Arrow's deserializers take over the body (they release it once sliced into buffers).
      if (message.headerType() == MessageHeader.DictionaryBatch) {
        loadDictionary(result, body);
        continue;
      }
      if (message.headerType() != MessageHeader.RecordBatch) {
        body.close();
        throw new WireException("unexpected message type " + message.headerType() + " inside a stream", true);
      }
      try (ArrowRecordBatch batch = MessageSerializer.deserializeRecordBatch(result, body)) {
        new VectorLoader(root).load(batch);
      } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
        throw new WireException("malformed record batch: " + e.getMessage(), true);
      }
      return new Batch(root, provider, customMetadata(message));
    }
    return null;
  }

  /** Reads and discards everything up to the end marker. */
  public void drain() throws IOException {
    while (read() != null) {
      // Each batch is released by the next read.
    }
  }

  public boolean ended() {
    return ended;
  }

  private void loadDictionary(MessageMetadataResult result, ArrowBuf body) throws IOException {
    try (ArrowDictionaryBatch batch = MessageSerializer.deserializeDictionaryBatch(result, body)) {
      Dictionary dictionary = dictionaries.get(batch.getDictionaryId());
      if (dictionary == null) {
        throw new WireException("dictionary batch for unknown id " + batch.getDictionaryId(), true);
      }
      if (batch.isDelta()) {
        throw new WireException("delta dictionaries are not supported", true);
      }
      FieldVector vector = dictionary.getVector();
      VectorSchemaRoot holder = new VectorSchemaRoot(List.of(vector.getField()), List.of(vector), 0);
      new VectorLoader(holder).load(batch.getDictionary());
    }
  }

  private static MessageMetadataResult readMessage(ReadChannel channel, Limits limits, boolean atStart)
      throws IOException {
    long before = channel.bytesRead();
    MessageMetadataResult result;
    try {
      result = MessageSerializer.readMessage(channel);
    } catch (IOException e) {
      throw new WireException("cannot read a message: " + e.getMessage(), false);
    } catch (RuntimeException e) {
      throw new WireException("malformed message header: " + e.getMessage(), false);
    }
    if (result == null) {
      long consumed = channel.bytesRead() - before;
      if (consumed == 0) {
        if (atStart) {
          return null;
        }
        throw new WireException.ConnectionClosed("connection closed inside a stream");
      }
      if (consumed < 4) {
        throw new WireException.ConnectionClosed("connection closed inside a message length");
      }
      if (atStart) {
        throw new WireException("a stream must begin with a schema message, not its end marker", true);
      }
      return null;
    }
    if (result.getMessageLength() > limits.metadataBytesMax()) {
      throw new WireException("message header exceeds " + limits.metadataBytesMax() + " bytes", false);
    }
    if (result.getMessageBodyLength() < 0 || result.getMessageBodyLength() > limits.bodyBytesMax()) {
      throw new WireException(
          "message body of " + result.getMessageBodyLength() + " bytes exceeds " + limits.bodyBytesMax(), false);
    }
    return result;
  }

  private static void skipBody(ReadChannel channel, MessageMetadataResult result) throws IOException {
    long remaining = result.getMessageBodyLength();
    java.nio.ByteBuffer scratch = java.nio.ByteBuffer.allocate(64 << 10);
    while (remaining > 0) {
      scratch.clear().limit((int) Math.min(scratch.capacity(), remaining));
      int read = channel.readFully(scratch);
      if (read <= 0) {
        throw new WireException.ConnectionClosed("connection closed inside a message body");
      }
      remaining -= read;
    }
  }

  private static Map<String, String> customMetadata(Message message) {
    Map<String, String> metadata = new LinkedHashMap<>();
    for (int i = 0; i < message.customMetadataLength(); i++) {
      KeyValue pair = message.customMetadata(i);
      ByteBuffer key = pair.keyAsByteBuffer();
      if (key != null) {
        ByteBuffer value = pair.valueAsByteBuffer();
        metadata.put(Utf8.decode(key), value == null ? "" : Utf8.decode(value));
      }
    }
    return metadata;
  }

  @Override
  public void close() {
    root.close();
    for (Dictionary dictionary : dictionaries.values()) {
      dictionary.getVector().close();
    }
  }
}
