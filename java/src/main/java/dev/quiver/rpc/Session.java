package dev.quiver.rpc;

import dev.quiver.shm.ShmException;
import dev.quiver.transport.Connection;
import dev.quiver.wire.Batch;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.Keys;
import dev.quiver.wire.LogRecord;
import dev.quiver.wire.StreamReader;
import dev.quiver.wire.StreamWriter;
import dev.quiver.wire.Utf8;
import dev.quiver.wire.WireException;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One connection, served: read a request, dispatch it, write the reply, repeat. The wire is
 * lockstep, so a session is a plain loop (python/quiver/rpc/session.py is the same loop). A bad
 * request gets an error reply and the connection keeps serving; only bytes that cannot be
 * resynchronised, or a closed connection, end a session.
 */
final class Session {
  static final String TRANSPORT_OPTIONS = "__transport_options__";

  private final Server server;
  private final Connection connection;
  private final BufferAllocator allocator;
  private final SecureRandom random = new SecureRandom();
  private String requestId = "";
  /** The client's segment, once a request advertises one this side can use. */
  private final SessionShm shm;

  Session(Server server, Connection connection, BufferAllocator allocator) {
    this.server = server;
    this.connection = connection;
    this.allocator = allocator;
    this.shm = new SessionShm(server, connection, allocator);
  }

  /** A request whose envelope was rejected; {@code report} goes to the client. */
  private static final class Rejected extends Exception {
    final ErrorReport report;

    Rejected(ErrorReport report) {
      super(report.message(), null, false, false);
      this.report = report;
    }
  }

  void run() {
    try {
      while (serveOne()) {
        // One request per turn until the client closes the connection.
      }
    } catch (WireException.ConnectionClosed e) {
      // The client went away; nothing to answer.
    } catch (IOException | RuntimeException e) {
      System.err.println("quiver: connection " + connection.peer() + " ended: " + e);
    } finally {
      try {
        connection.flush();
      } catch (IOException e) {
        // The peer is gone; the summary below still says what moved.
      }
      shm.close();
      connection.close();
    }
  }

  /** A request batch, and the shared-memory region it was resolved from (null when it came inline). */
  private record Request(Batch batch, ShmRoute.Resolved resolved) {}

  private boolean serveOne() throws IOException {
    requestId = "";
    StreamReader reader;
    long waitStarted = System.nanoTime();
    try {
      reader = StreamReader.open(connection.reader(), allocator, server.limits());
    } catch (WireException e) {
      if (e instanceof WireException.ConnectionClosed) {
        throw e;
      }
      writeErrorStream(StreamCall.EMPTY_SCHEMA, Errors.malformed(e.getMessage()), List.of());
      connection.flush();
      return e.recoverable();
    }
    if (reader == null) {
      return false;
    }
    shm.addWaiting(System.nanoTime() - waitStarted);
    try (reader) {
      Request request;
      try {
        request = requestEnvelope(reader);
      } catch (Rejected rejected) {
        writeErrorStream(StreamCall.EMPTY_SCHEMA, rejected.report, List.of());
        connection.flush();
        return true;
      } catch (WireException e) {
        if (!e.recoverable()) {
          throw e;
        }
        writeErrorStream(StreamCall.EMPTY_SCHEMA, Errors.malformed(e.getMessage()), List.of());
        connection.flush();
        return true;
      }
      try {
        dispatch(reader.schema(), request.batch());
      } finally {
        if (request.resolved() != null) {
          request.resolved().close();
        }
        shm.collect();
      }
    }
    connection.flush();
    return true;
  }

  /**
   * Reads the request's one batch through the end marker and checks its envelope; a pointer batch
   * is resolved from the segment the request advertises.
   */
  private Request requestEnvelope(StreamReader reader) throws IOException, Rejected {
    Batch batch = reader.read();
    if (batch == null) {
      throw new Rejected(Errors.protocolError("request stream carries 0 batches; expected exactly one"));
    }
    // The batch stays valid only until the next read, so everything is checked before draining.
    Map<String, String> metadata = batch.metadata();
    try {
      shm.attach(metadata);
    } catch (ShmException e) {
      throw new Rejected(Errors.protocolError(e.getMessage()));
    }
    ShmRoute.Resolved resolved = shm.resolve(batch, reader.schema());
    try {
      Batch request = resolved == null ? batch : resolved.batch();
      checkEnvelope(reader, metadata, request.rowCount(), request.root().getFieldVectors().size());
      return new Request(request, resolved);
    } catch (IOException | Rejected | RuntimeException e) {
      if (resolved != null) {
        resolved.close();
      }
      throw e;
    }
  }

  private static void checkEnvelope(StreamReader reader, Map<String, String> metadata, int rows, int columns)
      throws IOException, Rejected {
    Batch next = reader.read();
    if (next != null) {
      reader.drain();
      throw new Rejected(Errors.protocolError("request stream carries more than one batch; expected exactly one"));
    }
    String method = metadata.get(Keys.METHOD);
    if (method == null) {
      throw new Rejected(Errors.missingMethod());
    }
    String version = metadata.get(Keys.REQUEST_VERSION);
    if (!Keys.REQUEST_VERSION_VALUE.equals(version)) {
      throw new Rejected(Errors.badRequestVersion(version));
    }
    if (!Utf8.isValid(method)) {
      throw new Rejected(Errors.protocolError("Invalid 'vgi_rpc.method': not a UTF-8 method name."));
    }
    if (columns > 0 && rows != 1) {
      throw new Rejected(Errors.protocolError("Expected 1 row in request batch, got " + rows + "."));
    }
  }

  private void dispatch(Schema requestSchema, Batch request) throws IOException {
    Map<String, String> metadata = request.metadata();
    String methodName = metadata.get(Keys.METHOD);
    requestId = metadata.getOrDefault(Keys.REQUEST_ID, HexFormat.of().formatHex(randomBytes()));
    if (methodName.equals(TRANSPORT_OPTIONS)) {
      transportOptions();
      return;
    }
    Protocol protocol;
    Method method;
    try {
      protocol = route(methodName, metadata);
      method = protocol.methods().get(methodName);
    } catch (Rejected rejected) {
      writeErrorStream(StreamCall.EMPTY_SCHEMA, rejected.report, List.of());
      return;
    }
    if (protocol.version() != null) {
      ErrorReport versionError =
          Errors.checkProtocolVersion(protocol.name(), metadata.get(Keys.PROTOCOL_VERSION), protocol.version());
      if (versionError != null) {
        rejectCall(method, versionError);
        return;
      }
    }
    Params params;
    try {
      params = checkParams(method, requestSchema, request);
    } catch (RuntimeException e) {
      rejectCall(method, ErrorReport.fromException(e));
      return;
    }
    if (method.kind().isStream()) {
      serveStream(method, params, metadata);
    } else {
      serveUnary(method, params, metadata);
    }
  }

  private Protocol route(String method, Map<String, String> metadata) throws Rejected {
    if (method.startsWith("__") && method.endsWith("__") && method.length() > 4) {
      throw new Rejected(Errors.reservedNotImplemented(method));
    }
    String name = metadata.get(Keys.PROTOCOL);
    ErrorReport report = Errors.checkProtocolName(name, server.protocolNames());
    if (report != null) {
      throw new Rejected(report);
    }
    Protocol protocol = server.protocols().get(name);
    if (!protocol.methods().containsKey(method)) {
      throw new Rejected(Errors.methodNotFound(protocol.name(), method, new ArrayList<>(protocol.methods().keySet())));
    }
    return protocol;
  }

  /** Checks the request's columns against the declared parameters: names, order, types, nulls. */
  private static Params checkParams(Method method, Schema schema, Batch request) {
    List<Field> sent = schema.getFields();
    List<Field> declared = method.params().getFields();
    String name = method.name();
    List<String> unexpected = new ArrayList<>();
    for (Field field : sent) {
      if (declared.stream().noneMatch(d -> d.getName().equals(field.getName()))) {
        unexpected.add("'" + field.getName() + "'");
      }
    }
    if (!unexpected.isEmpty()) {
      throw new ClassCastException(name + "() got unexpected keyword argument(s): " + String.join(", ", unexpected));
    }
    List<String> missing = new ArrayList<>();
    for (Field field : declared) {
      if (sent.stream().noneMatch(s -> s.getName().equals(field.getName()))) {
        missing.add("'" + field.getName() + "'");
      }
    }
    if (!missing.isEmpty()) {
      throw new ClassCastException(name + "() missing required argument(s): " + String.join(", ", missing));
    }
    for (int i = 0; i < declared.size(); i++) {
      Field want = declared.get(i);
      Field got = sent.get(i);
      if (!got.getName().equals(want.getName())) {
        throw new ClassCastException(
            name + "() parameter schema field " + i + " expected name '" + want.getName() + "', got '" + got.getName() + "'");
      }
      if (!got.getType().equals(want.getType())) {
        throw new ClassCastException(name + "() parameter '" + got.getName() + "' expected Arrow type "
            + want.getType() + " but the request batch carried " + got.getType());
      }
      if (got.isNullable() != want.isNullable()) {
        throw new ClassCastException(name + "() parameter '" + got.getName() + "' expected nullable="
            + pyBool(want.isNullable()) + ", but the request batch carried nullable=" + pyBool(got.isNullable()));
      }
      FieldVector column = request.root().getVector(i);
      if (!want.isNullable() && column.isNull(0)) {
        throw new ClassCastException(name + "() parameter '" + got.getName() + "' is not optional but got None");
      }
    }
    return new Params(name, schema, request.root(), request.dictionaries());
  }

  private static String pyBool(boolean value) {
    return value ? "True" : "False";
  }

  /** Answers a call that will not run; a stream's client still sends one input stream. */
  private void rejectCall(Method method, ErrorReport report) throws IOException {
    writeErrorStream(method.kind().isStream() ? StreamCall.EMPTY_SCHEMA : method.resultSchema(), report, List.of());
    if (method.kind().isStream()) {
      connection.flush();
      drainInput();
    }
  }

  private void transportOptions() throws IOException {
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put(Keys.TRANSPORT_SHM, shm.usable() ? "true" : "false");
    metadata.put(Keys.REQUEST_VERSION, Keys.REQUEST_VERSION_VALUE);
    metadata.put(Keys.SERVER_ID, server.serverId());
    StreamWriter writer = new StreamWriter(connection.writer(), allocator, StreamCall.EMPTY_SCHEMA, null);
    writer.writeEmpty(metadata);
    writer.close();
  }

  // -- unary ------------------------------------------------------------------------------

  private void serveUnary(Method method, Params params, Map<String, String> metadata) throws IOException {
    List<Object> records = new ArrayList<>();
    CallContext ctx = new CallContext(method.name(), metadata, requestId, connection.peer(), allocator, records);
    Object value;
    try {
      long started = System.nanoTime();
      value = method.body().call(params, ctx);
      shm.addProcess(System.nanoTime() - started);
    } catch (Exception | AssertionError e) {
      value = ErrorReport.fromException(e);
    }
    if (value instanceof UnaryResult result) {
      try (FieldVector vector = result.vector()) {
        Schema schema = method.resultSchema();
        StreamWriter writer = new StreamWriter(connection.writer(), allocator, schema, result.dictionaries());
        writeLogs(writer, records);
        Field memory = StreamWriter.memoryField(method.result());
        try (VectorSchemaRoot root = resultRoot(memory, vector)) {
          shm.writeData(writer, root, Map.of());
        }
        writer.close();
      }
      return;
    }
    StreamWriter writer = new StreamWriter(connection.writer(), allocator, method.resultSchema(), null);
    writeLogs(writer, records);
    if (value instanceof ErrorReport report) {
      writer.writeEmpty(stamp(report.toMetadata()));
    } else if (value == null && method.result() == null) {
      writer.writeEmpty(Map.of());
    } else {
      String got = value == null ? "null" : value.getClass().getSimpleName();
      writer.writeEmpty(stamp(new ErrorReport("TypeError", method.name() + "() returned " + got
          + "; a unary method returns a UnaryResult, or null when void").toMetadata()));
    }
    writer.close();
  }

  /** The reply root: the result column renamed to the declared field (same buffers). */
  private VectorSchemaRoot resultRoot(Field declared, FieldVector vector) {
    var transfer = vector.getTransferPair(declared, allocator);
    transfer.transfer();
    FieldVector renamed = (FieldVector) transfer.getTo();
    return new VectorSchemaRoot(List.of(declared), List.of(renamed), 1);
  }

  // -- streams ----------------------------------------------------------------------------

  private void serveStream(Method method, Params params, Map<String, String> metadata) throws IOException {
    List<Object> records = new ArrayList<>();
    CallContext ctx = new CallContext(method.name(), metadata, requestId, connection.peer(), allocator, records);
    StreamCall call;
    try {
      Object value = method.body().call(params, ctx);
      if (!(value instanceof StreamCall stream)) {
        throw new ClassCastException(method.name() + "() must return a StreamCall");
      }
      if (method.kind() == MethodKind.PRODUCER && !stream.producer()) {
        throw new ClassCastException(method.name() + "() is a producer; its input schema must be empty");
      }
      call = stream;
    } catch (Exception | AssertionError e) {
      writeErrorStream(StreamCall.EMPTY_SCHEMA, ErrorReport.fromException(e), records);
      connection.flush();
      drainInput();
      return;
    }
    if (call.header() != null) {
      try (VectorSchemaRoot header = call.header().root()) {
        StreamWriter writer =
            new StreamWriter(connection.writer(), allocator, call.header().schema(), call.header().dictionaries());
        writeLogs(writer, records);
        records.clear();
        writer.write(header, Map.of());
        writer.close();
      } finally {
        if (call.header().dictionaries() instanceof AutoCloseable dictionaries) {
          closeQuietly(dictionaries);
        }
      }
    }
    connection.flush();
    StreamReader input;
    try {
      input = StreamReader.open(connection.reader(), allocator, server.limits());
    } catch (WireException e) {
      if (!e.recoverable()) {
        throw e;
      }
      writeErrorStream(StreamCall.EMPTY_SCHEMA, Errors.malformed(e.getMessage()), List.of());
      return;
    }
    if (input == null) {
      throw new WireException.ConnectionClosed("the client closed the connection before opening the stream input");
    }
    try (input) {
      StreamWriter output = new StreamWriter(connection.writer(), allocator, call.outputSchema(), null);
      writeLogs(output, records);
      while (nextTurn(method, call, input, output, metadata)) {
        // One answer per input batch until the input ends, a cancel, a finish or an error.
      }
      output.close();
      connection.flush();
      input.drain();
    }
  }

  private boolean nextTurn(Method method, StreamCall call, StreamReader input, StreamWriter output,
      Map<String, String> metadata) throws IOException {
    connection.flush();
    Batch item;
    ShmRoute.Resolved resolved;
    long waitStarted = System.nanoTime();
    try {
      item = input.read();
      shm.addWaiting(System.nanoTime() - waitStarted);
      resolved = item == null ? null : shm.resolve(item, input.schema());
    } catch (WireException e) {
      if (!e.recoverable()) {
        throw e;
      }
      output.writeEmpty(stamp(Errors.malformed(e.getMessage()).toMetadata()));
      return false;
    }
    if (item == null) {
      return false;
    }
    if (resolved != null) {
      try (resolved) {
        return turn(method, call, resolved.batch(), input.schema(), output);
      } finally {
        shm.collect();
      }
    }
    if (item.rowCount() == 0 && item.metadata().containsKey(Keys.CANCEL)) {
      try {
        call.state().onCancel(new CallContext(method.name(), metadata, requestId, connection.peer(), allocator, new ArrayList<>()));
      } catch (RuntimeException e) {
        // A cancel hook's error is deliberately ignored: the client already stopped listening.
      }
      return false;
    }
    return turn(method, call, item, input.schema(), output);
  }

  private boolean turn(Method method, StreamCall call, Batch item, Schema sent, StreamWriter output) throws IOException {
    Output out = new Output(call.outputSchema(), allocator);
    try {
      try (Conformed input = Conformed.input(call.inputSchema(), sent, item, allocator)) {
        CallContext ctx = new CallContext(method.name(), item.metadata(), requestId, connection.peer(), allocator, out.items());
        long started = System.nanoTime();
        call.state().process(input.batch(), out, ctx);
        shm.addProcess(System.nanoTime() - started);
      }
      if (!call.producer() && out.finished()) {
        throw new IllegalStateException("an exchange cannot finish; the client ends it by closing its input");
      }
      if (!out.finished() && out.dataCount() == 0) {
        throw new IllegalStateException("No data batch was emitted");
      }
    } catch (Exception | AssertionError e) {
      out.release();
      output.writeEmpty(stamp(ErrorReport.fromException(e).toMetadata()));
      return false;
    }
    for (Object answer : out.items()) {
      if (answer instanceof LogRecord record) {
        output.writeEmpty(stamp(record.toMetadata()));
      } else if (answer instanceof Output.Emitted emitted) {
        try (VectorSchemaRoot root = emitted.root()) {
          shm.writeData(output, root, emitted.metadata());
        }
      }
    }
    return !out.finished();
  }

  // -- writing ----------------------------------------------------------------------------

  private void writeLogs(StreamWriter writer, List<Object> records) throws IOException {
    for (Object record : records) {
      writer.writeEmpty(stamp(((LogRecord) record).toMetadata()));
    }
  }

  private void writeErrorStream(Schema schema, ErrorReport report, List<Object> logs) throws IOException {
    StreamWriter writer = new StreamWriter(connection.writer(), allocator, schema, null);
    writeLogs(writer, logs);
    writer.writeEmpty(stamp(report.toMetadata()));
    writer.close();
  }

  private Map<String, String> stamp(Map<String, String> metadata) {
    Map<String, String> stamped = new LinkedHashMap<>(metadata);
    stamped.put(Keys.SERVER_ID, server.serverId());
    if (!requestId.isEmpty()) {
      stamped.put(Keys.REQUEST_ID, requestId);
    }
    return stamped;
  }

  /** Reads and discards one input stream (after a stream call that will not run). */
  private void drainInput() throws IOException {
    try (StreamReader input = StreamReader.open(connection.reader(), allocator, server.limits())) {
      if (input != null) {
        input.drain();
      }
    }
  }

  private static void closeQuietly(AutoCloseable resource) {
    try {
      resource.close();
    } catch (Exception e) {
      // Releasing memory has nothing to report to the client.
    }
  }

  private byte[] randomBytes() {
    byte[] bytes = new byte[8];
    random.nextBytes(bytes);
    return bytes;
  }
}
