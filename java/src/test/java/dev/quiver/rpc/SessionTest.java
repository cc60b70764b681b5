package dev.quiver.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.quiver.transport.Connection;
import dev.quiver.wire.Batch;
import dev.quiver.wire.BatchRole;
import dev.quiver.wire.Keys;
import dev.quiver.wire.Limits;
import dev.quiver.wire.StreamReader;
import dev.quiver.wire.StreamWriter;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A session served over in-process pipes, driven by hand-written requests. */
class SessionTest {
  private static final Field NAME = new Field("name", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null);
  private static final Field RESULT = new Field("result", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null);

  private final BufferAllocator allocator = new RootAllocator();
  private WriteChannel toServer;
  private ReadChannel fromServer;
  private PipedOutputStream clientOut;
  private Thread serving;

  static Protocol greeter() {
    return new Protocol("Greeter", "1.0.0").add(Method.unary("greet", List.of(NAME), RESULT, (params, ctx) -> {
      VarCharVector text = new VarCharVector("result", ctx.allocator());
      text.setSafe(0, ("hello " + params.string("name")).getBytes(StandardCharsets.UTF_8));
      text.setValueCount(1);
      return UnaryResult.of(text);
    }));
  }

  @BeforeEach
  void start() throws Exception {
    PipedInputStream serverIn = new PipedInputStream(1 << 20);
    clientOut = new PipedOutputStream(serverIn);
    PipedInputStream clientIn = new PipedInputStream(1 << 20);
    PipedOutputStream serverOut = new PipedOutputStream(clientIn);
    toServer = new WriteChannel(Channels.newChannel(clientOut));
    fromServer = new ReadChannel(Channels.newChannel(clientIn));
    Server server = new Server(List.of(greeter()), Limits.DEFAULT);
    Connection connection = new Connection(serverIn, serverOut, () -> {
      serverIn.close();
      serverOut.close();
    }, "test", true);
    serving = new Thread(() -> server.serve(connection));
    serving.start();
  }

  @AfterEach
  void stop() throws Exception {
    clientOut.close();
    serving.join(60_000);
    allocator.close();
  }

  private void request(String method, String protocol, String version, String name) throws Exception {
    Schema schema = new Schema(List.of(NAME));
    StreamWriter writer = new StreamWriter(toServer, allocator, schema, null);
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
      ((VarCharVector) root.getVector(0)).setSafe(0, name.getBytes(StandardCharsets.UTF_8));
      root.setRowCount(1);
      Map<String, String> metadata = new HashMap<>();
      metadata.put(Keys.METHOD, method);
      metadata.put(Keys.REQUEST_VERSION, "1");
      metadata.put(Keys.PROTOCOL, protocol);
      metadata.put(Keys.PROTOCOL_VERSION, version);
      writer.write(root, metadata);
    }
    writer.close();
    clientOut.flush();
  }

  /** Reads one reply stream; returns the result text or the error batch's metadata. */
  private Object reply() throws Exception {
    try (StreamReader reader = StreamReader.open(fromServer, allocator, Limits.DEFAULT)) {
      Batch batch = reader.read();
      Object answer;
      if (batch.role() == BatchRole.ERROR) {
        answer = Map.copyOf(batch.metadata());
      } else {
        answer = new String(((VarCharVector) batch.root().getVector(0)).get(0), StandardCharsets.UTF_8);
      }
      assertNull(reader.read(), "a unary reply carries one batch");
      return answer;
    }
  }

  @Test
  void aUnaryCallAnswersAndTheConnectionKeepsServing() throws Exception {
    request("greet", "Greeter", "1.0.3", "ada");
    assertEquals("hello ada", reply());
    request("greet", "Greeter", "1.0.0", "bob");
    assertEquals("hello bob", reply());
  }

  @Test
  void routingAndVersionErrorsAreAnsweredNotFatal() throws Exception {
    request("wave", "Greeter", "1.0.0", "ada");
    Map<?, ?> unknown = (Map<?, ?>) reply();
    assertEquals("method_not_implemented", unknown.get(Keys.ERROR_KIND));
    request("greet", "Greeter", "2.0.0", "ada");
    Map<?, ?> version = (Map<?, ?>) reply();
    assertEquals("protocol_version_mismatch", version.get(Keys.ERROR_KIND));
    request("greet", "Nobody", "1.0.0", "ada");
    assertEquals("protocol_not_supported", ((Map<?, ?>) reply()).get(Keys.ERROR_KIND));
    request("greet", "Greeter", "1.0.0", "cy");
    assertEquals("hello cy", reply());
  }

  @Test
  void garbageGetsAnErrorReplyThenTheSessionEnds() throws Exception {
    byte[] garbage = new byte[64];
    java.util.Arrays.fill(garbage, (byte) 0x41);
    clientOut.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 40, 0, 0, 0});
    clientOut.write(garbage);
    clientOut.flush();
    Map<?, ?> error = (Map<?, ?>) reply();
    assertEquals("INVALID_ARGUMENT", error.get(Keys.ERROR_CODE));
    serving.join(60_000);
    assertEquals(false, serving.isAlive(), "bytes that cannot be resynchronised end the session");
  }
}
