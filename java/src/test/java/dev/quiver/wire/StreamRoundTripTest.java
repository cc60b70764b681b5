package dev.quiver.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

class StreamRoundTripTest {
  private static final Schema SCHEMA =
      new Schema(List.of(new Field("value", FieldType.nullable(new ArrowType.Int(64, true)), null)));

  private static byte[] twoStreams(BufferAllocator allocator) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    WriteChannel channel = new WriteChannel(Channels.newChannel(bytes));
    for (long stream = 0; stream < 2; stream++) {
      StreamWriter writer = new StreamWriter(channel, allocator, SCHEMA, null);
      try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
        ((BigIntVector) root.getVector(0)).setSafe(0, 40 + stream);
        root.setRowCount(1);
        writer.write(root, Map.of("k\u00fc", "v\u03bb" + stream));
      }
      writer.writeEmpty(new LogRecord(LogLevel.INFO, "hello").toMetadata());
      writer.close();
    }
    return bytes.toByteArray();
  }

  @Test
  void backToBackStreamsKeepEachBatchsMetadata() throws Exception {
    try (BufferAllocator allocator = new RootAllocator()) {
      ReadChannel channel = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(twoStreams(allocator))));
      for (long stream = 0; stream < 2; stream++) {
        try (StreamReader reader = StreamReader.open(channel, allocator, Limits.DEFAULT)) {
          assertEquals(SCHEMA, reader.schema());
          Batch data = reader.read();
          assertEquals(1, data.rowCount());
          assertEquals(40 + stream, ((BigIntVector) data.root().getVector(0)).get(0));
          assertEquals(Map.of("k\u00fc", "v\u03bb" + stream), data.metadata());
          assertEquals(BatchRole.DATA, data.role());
          Batch log = reader.read();
          assertEquals(BatchRole.LOG, log.role());
          assertEquals("hello", log.metadata().get(Keys.LOG_MESSAGE));
          assertNull(reader.read());
          assertTrue(reader.ended());
        }
      }
      assertNull(StreamReader.open(channel, allocator, Limits.DEFAULT), "a clean close reads as no stream");
    }
  }

  @Test
  void aBodyOverTheLimitIsRefusedBeforeItIsRead() throws Exception {
    try (BufferAllocator allocator = new RootAllocator()) {
      ReadChannel channel = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(twoStreams(allocator))));
      Limits tiny = new Limits(1 << 20, 1, 16);
      try (StreamReader reader = StreamReader.open(channel, allocator, tiny)) {
        WireException error = assertThrows(WireException.class, reader::read);
        assertTrue(error.getMessage().contains("exceeds"), error.getMessage());
      }
    }
  }

  @Test
  void aStreamCutShortIsAClosedConnection() throws Exception {
    try (BufferAllocator allocator = new RootAllocator()) {
      byte[] whole = twoStreams(allocator);
      byte[] cut = java.util.Arrays.copyOf(whole, 200);
      ReadChannel channel = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(cut)));
      assertThrows(WireException.class, () -> {
        try (StreamReader reader = StreamReader.open(channel, allocator, Limits.DEFAULT)) {
          reader.drain();
        }
      });
    }
  }

  @Test
  void rolesFollowRowCountAndKeys() {
    assertEquals(BatchRole.DATA, BatchRole.classify(0, Map.of()));
    assertEquals(BatchRole.DATA, BatchRole.classify(1, Map.of(Keys.CANCEL, "1")));
    assertEquals(BatchRole.CANCEL, BatchRole.classify(0, Map.of(Keys.CANCEL, "1")));
    assertEquals(BatchRole.SHM_POINTER, BatchRole.classify(0, Map.of(Keys.SHM_OFFSET, "0")));
    assertEquals(BatchRole.ERROR, BatchRole.classify(0, new ErrorReport("ValueError", "x").toMetadata()));
  }

  @Test
  void errorMetadataCarriesTypeCodeAndJsonExtras() {
    Map<String, String> metadata = new ErrorReport("ValueError", "bad \"quote\"\n").toMetadata();
    assertEquals("EXCEPTION", metadata.get(Keys.LOG_LEVEL));
    assertEquals("ValueError: bad \"quote\"\n", metadata.get(Keys.LOG_MESSAGE));
    assertEquals("UNKNOWN", metadata.get(Keys.ERROR_CODE));
    assertEquals(
        "{\"exception_type\": \"ValueError\", \"exception_message\": \"bad \\\"quote\\\"\\n\", \"error_code\": \"UNKNOWN\"}",
        metadata.get(Keys.LOG_EXTRA));
  }

  @Test
  void invalidUtf8MetadataIsKeptVisible() {
    String good = Utf8.decode(java.nio.ByteBuffer.wrap("caf\u00e9 \ud83d\ude00".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    assertEquals("caf\u00e9 \ud83d\ude00", good);
    assertTrue(Utf8.isValid(good));
    String bad = Utf8.decode(java.nio.ByteBuffer.wrap(new byte[] {'a', (byte) 0xff, (byte) 0xfe}));
    assertEquals("a\udcff\udcfe", bad);
    assertEquals(false, Utf8.isValid(bad));
  }
}
