package dev.quiver.rpc;

import dev.quiver.shm.Segment;
import dev.quiver.shm.ShmConfig;
import dev.quiver.shm.ShmException;
import dev.quiver.wire.Batch;
import dev.quiver.wire.Keys;
import dev.quiver.wire.Limits;
import dev.quiver.wire.StreamReader;
import dev.quiver.wire.StreamWriter;
import dev.quiver.wire.WireException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.flatbuf.Buffer;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Large batches through a connection's shared-memory segment, both ways
 * (python/quiver/rpc/shm_route.py, crates/quiver-rpc/src/shm_route.rs). A data batch that
 * qualifies is written as a complete IPC stream into a region, and a zero-row pointer batch
 * carrying {@code vgi_rpc.shm_offset} / {@code vgi_rpc.shm_length} goes on the wire instead.
 * Resolving a pointer loads the region's buffers in place: the vectors are views of the mapping,
 * and the region is freed once they are released. Anything that does not qualify (small, empty,
 * dictionary-encoded, no room) stays inline. Method code never sees any of this.
 */
final class ShmRoute implements AutoCloseable {
  /** Largest batch written through the segment: its region is filled through one ByteBuffer. */
  static final int ENCODED_BYTES_MAX = Integer.MAX_VALUE - (1 << 20);

  final Segment segment;
  final ShmConfig config;
  final ShmStats stats = new ShmStats();

  ShmRoute(Segment segment, ShmConfig config) {
    this.segment = segment;
    this.config = config;
  }

  /** A batch resolved from a region, valid until closed; closing it lets the region go. */
  record Resolved(Batch batch, AutoCloseable owner) implements AutoCloseable {
    @Override
    public void close() {
      try {
        owner.close();
      } catch (Exception e) {
        throw new IllegalStateException("releasing a resolved batch failed", e);
      }
    }
  }

  /** The batch {@code pointer} refers to; {@code sent} is its stream's schema as sent. */
  Resolved resolve(Batch pointer, Schema sent, BufferAllocator allocator, Limits limits) throws WireException {
    long started = System.nanoTime();
    long offset;
    long length;
    try {
      offset = Long.parseLong(pointer.metadata().get(Keys.SHM_OFFSET));
      length = Long.parseLong(pointer.metadata().get(Keys.SHM_LENGTH));
    } catch (NumberFormatException e) {
      throw new WireException("unusable shm pointer " + pointer.metadata() + ": " + e.getMessage(), true);
    }
    if (length > limits.bodyBytesMax()) {
      throw new WireException("shm region of " + length + " bytes exceeds the body limit", true);
    }
    ArrowBuf region;
    try {
      region = segment.claim(offset, length, allocator);
    } catch (ShmException e) {
      throw new WireException("unusable shm pointer " + pointer.metadata() + ": " + e.getMessage(), true);
    }
    Map<String, String> metadata = new LinkedHashMap<>(pointer.metadata());
    metadata.remove(Keys.SHM_OFFSET);
    metadata.remove(Keys.SHM_LENGTH);
    Resolved resolved;
    boolean inPlace = !hasDictionary(sent);
    try {
      resolved = inPlace ? inPlace(region, sent, metadata, allocator) : copied(region, sent, metadata, allocator, limits);
    } catch (IOException | RuntimeException e) {
      throw new WireException("shm region does not hold a valid IPC batch: " + e.getMessage(), true);
    }
    stats.inboundShm++;
    stats.resolveNanos += System.nanoTime() - started;
    if (config.debug()) {
      debug("resolved inbound off=" + offset + " len=" + length + " rows=" + resolved.batch().rowCount()
          + (inPlace ? " (zero-copy)" : " (copied: dictionary-encoded)"));
    }
    return resolved;
  }

  /**
   * Decodes the region's record batch over the mapping. {@code region} is consumed: Arrow's
   * deserializer takes its reference, and the loaded vectors hold slices of it.
   */
  private static Resolved inPlace(ArrowBuf region, Schema sent, Map<String, String> metadata,
      BufferAllocator allocator) throws IOException {
    VectorSchemaRoot root = null;
    try {
      long at = 0;
      Framed message = framed(region, at);
      if (message.header() == MessageHeader.Schema) {
        at = message.end();
        message = framed(region, at);
      }
      if (message.header() != MessageHeader.RecordBatch) {
        throw new IOException("expected a record batch message, found type " + message.header());
      }
      RecordBatch batch = (RecordBatch) message.message().header(new RecordBatch());
      long bodyLength = message.message().bodyLength();
      if (bodyLength < 0 || bodyLength > region.capacity() - message.end()) {
        throw new IOException("record batch body of " + bodyLength + " bytes overruns the region");
      }
      if (batch.compression() != null) {
        throw new IOException("compressed record batches are not supported");
      }
      Buffer buffer = new Buffer();
      for (int i = 0; i < batch.buffersLength(); i++) {
        batch.buffers(buffer, i);
        if (buffer.offset() < 0 || buffer.length() < 0 || buffer.offset() > bodyLength - buffer.length()) {
          throw new IOException("buffer " + i + " lies outside the record batch body");
        }
      }
      root = VectorSchemaRoot.create(sent, allocator);
      ArrowBuf body = region.slice(message.end(), bodyLength);
      region = null; // from here the deserializer owns the region's reference
      try (ArrowRecordBatch loaded = MessageSerializer.deserializeRecordBatch(batch, body)) {
        new VectorLoader(root).load(loaded);
      }
      VectorSchemaRoot owned = root;
      return new Resolved(new Batch(owned, new DictionaryProvider.MapDictionaryProvider(), metadata), owned::close);
    } catch (IOException | RuntimeException e) {
      if (root != null) {
        root.close();
      }
      if (region != null) {
        region.close();
      }
      throw e;
    }
  }

  /** One encapsulated IPC message at {@code at}: its flatbuffer header and where its body starts. */
  private record Framed(Message message, long end) {
    byte header() {
      return message.headerType();
    }
  }

  private static Framed framed(ArrowBuf region, long at) throws IOException {
    if (region.capacity() - at < 8) {
      throw new IOException("region ends before a message");
    }
    int first = region.getInt(at);
    long prefix = first == -1 ? 8 : 4; // a continuation marker, or the pre-1.0 bare length
    int size = first == -1 ? region.getInt(at + 4) : first;
    if (size <= 0 || size > region.capacity() - at - prefix) {
      throw new IOException("message header of " + size + " bytes overruns the region");
    }
    ByteBuffer bytes = region.nioBuffer(at + prefix, size).order(ByteOrder.LITTLE_ENDIAN);
    Message message = Message.getRootAsMessage(bytes);
    return new Framed(message, at + prefix + size);
  }

  /**
   * A dictionary-encoded batch, decoded by copy: vgi-rpc writes such a region without its schema
   * and end marker (its shm.py), so the stream is rebuilt around it.
   */
  private static Resolved copied(ArrowBuf region, Schema sent, Map<String, String> metadata,
      BufferAllocator allocator, Limits limits) throws IOException {
    byte[] stream;
    try (region) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      Framed first = framed(region, 0);
      boolean hasSchema = first.header() == MessageHeader.Schema;
      if (!hasSchema) {
        MessageSerializer.serialize(new WriteChannel(Channels.newChannel(bytes)), sent);
      }
      byte[] body = new byte[Math.toIntExact(region.capacity())];
      region.getBytes(0, body);
      bytes.write(body);
      if (!hasSchema) {
        bytes.write(new byte[] {-1, -1, -1, -1, 0, 0, 0, 0});
      }
      stream = bytes.toByteArray();
    }
    StreamReader reader = StreamReader.open(new ReadChannel(Channels.newChannel(new ByteArrayInputStream(stream))),
        allocator, limits);
    if (reader == null) {
      throw new IOException("empty region");
    }
    try {
      Batch batch = reader.read();
      if (batch == null) {
        throw new IOException("the region holds no record batch");
      }
      return new Resolved(new Batch(batch.root(), batch.dictionaries(), metadata), reader);
    } catch (IOException | RuntimeException e) {
      reader.close();
      throw e;
    }
  }

  /**
   * Writes {@code root} into the segment when it qualifies; returns the pointer batch's metadata
   * ({@code metadata} plus the region), or null to send the batch inline.
   */
  Map<String, String> tryWrite(VectorSchemaRoot root, Schema sent, Map<String, String> metadata,
      BufferAllocator allocator) throws IOException {
    stats.outboundTotal++;
    long batchBytes = 0;
    for (FieldVector vector : root.getFieldVectors()) {
      batchBytes += vector.getBufferSize();
    }
    if (!config.wantsShmFor(root.getRowCount(), batchBytes) || hasDictionary(sent) || batchBytes > ENCODED_BYTES_MAX) {
      return null;
    }
    // Two passes: the first only counts the stream's bytes, so the second writes it straight
    // into the region it allocated (no intermediate copy of the batch).
    Counting counting = new Counting();
    encode(new WriteChannel(counting), root, sent, allocator);
    long size = counting.bytes;
    if (size > ENCODED_BYTES_MAX) {
      return null;
    }
    long offset = segment.allocate(size);
    if (offset < 0) {
      stats.fallbacks++;
      if (config.debug()) {
        debug("fallback inline: " + size + " bytes do not fit in " + segment.name() + " (allocations="
            + segment.allocationCount() + ")");
      }
      return null;
    }
    ByteBuffer region;
    try {
      region = segment.writable(offset, (int) size);
    } catch (ShmException e) {
      throw new IllegalStateException("a region just allocated is out of bounds: " + e.getMessage(), e);
    }
    encode(new WriteChannel(new Filling(region)), root, sent, allocator);
    if (region.hasRemaining()) {
      throw new IllegalStateException("the stream wrote " + region.position() + " of the " + size + " bytes counted");
    }
    Map<String, String> pointer = new LinkedHashMap<>(metadata);
    pointer.put(Keys.SHM_OFFSET, Long.toString(offset));
    pointer.put(Keys.SHM_LENGTH, Long.toString(size));
    stats.outboundShm++;
    return pointer;
  }

  private static void encode(WriteChannel channel, VectorSchemaRoot root, Schema sent, BufferAllocator allocator)
      throws IOException {
    StreamWriter writer = new StreamWriter(channel, allocator, sent, null);
    writer.write(root, Map.of());
    writer.close();
  }

  /** A channel that only counts what is written to it. */
  private static final class Counting implements WritableByteChannel {
    long bytes;

    @Override
    public int write(ByteBuffer source) {
      int length = source.remaining();
      source.position(source.limit());
      bytes += length;
      return length;
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {}
  }

  /** A channel that fills a region in place; writing past its end is a bug, not a short write. */
  private record Filling(ByteBuffer region) implements WritableByteChannel {
    @Override
    public int write(ByteBuffer source) {
      int length = source.remaining();
      region.put(source);
      return length;
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {}
  }

  static boolean hasDictionary(Schema schema) {
    return hasDictionary(schema.getFields());
  }

  private static boolean hasDictionary(List<Field> fields) {
    for (Field field : fields) {
      if (field.getDictionary() != null || hasDictionary(field.getChildren())) {
        return true;
      }
    }
    return false;
  }

  static void debug(String line) {
    System.err.println("[quiver-shm] " + line);
    System.err.flush();
  }

  @Override
  public void close() {
    segment.close();
  }
}
