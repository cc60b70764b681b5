package dev.quiver.rpc;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.Keys;
import dev.quiver.wire.RpcError;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * {@code vgi_rpc.Reflection.v1}: discovery served as an ordinary protocol beside the application's
 * (crates/quiver-rpc/src/reflection.rs, python/quiver/rpc/reflection.py). {@code list_protocols()}
 * names every hosted protocol with its version and {@link ProtocolHash}; {@code describe(protocol)}
 * gives one protocol's methods with their schemas as serialized Arrow schemas. Each reply is one
 * dataclass: the bytes of a one-row IPC stream in a {@code result: binary} column. It declares no
 * version, so a client whose version was refused can still ask what the server has.
 */
final class Reflection {
  static final String PROTOCOL = "vgi_rpc.Reflection.v1";
  static final String SERVER_VERSION = "quiver";

  private static final Field RESULT = new Field("result", FieldType.notNullable(ArrowType.Binary.INSTANCE), null);
  private static final Field FEATURES = new Field("features", FieldType.notNullable(new ArrowType.List()),
      List.of(new Field("item", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)));
  private static final List<Field> METHOD_FIELDS = List.of(text("name"), text("method_type"), flag("has_return"),
      flag("has_header"), text("stream_kind"), bytes("params_schema_ipc"), bytes("result_schema_ipc"),
      bytes("header_schema_ipc"), text("idempotency"), flag("deprecated"), text("deprecation_message"));
  private static final List<Field> SUMMARY_FIELDS = List.of(text("protocol"), text("protocol_version"),
      text("protocol_hash"), flag("deprecated"), text("deprecation_message"), FEATURES);
  /** {@code ServiceDescription}. */
  static final Schema DESCRIPTION = new Schema(List.of(text("protocol"), text("protocol_version"),
      text("protocol_hash"), flag("deprecated"), text("deprecation_message"), FEATURES,
      listOfStruct("methods", METHOD_FIELDS)));
  /** {@code ProtocolList}. */
  static final Schema LISTING = new Schema(List.of(text("server_id"), text("server_version"),
      text("request_version"), listOfStruct("protocols", SUMMARY_FIELDS)));

  private Reflection() {}

  /**
   * The reflection protocol of {@code server}. It reads the server's protocol table when called, so
   * it describes itself too and cannot disagree with dispatch; a hosted protocol never changes, so
   * each description is encoded once.
   */
  static Protocol protocol(Server server) {
    Map<String, byte[]> described = new ConcurrentHashMap<>();
    Protocol reflection = new Protocol(PROTOCOL, null);
    reflection.add(Method.unary("list_protocols", List.of(), RESULT,
        (params, ctx) -> result(listing(server, ctx.allocator()), ctx.allocator())));
    reflection.add(Method.unary("describe",
        List.of(new Field("protocol", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null)), RESULT,
        (params, ctx) -> {
          String name = params.string("protocol");
          Protocol hosted = server.protocols().get(name);
          if (hosted == null) {
            throw notHosted(name, server.protocols().keySet());
          }
          return result(described.computeIfAbsent(name, n -> description(hosted, ctx.allocator())), ctx.allocator());
        }));
    return reflection;
  }

  private static UnaryResult result(byte[] bytes, BufferAllocator allocator) {
    VarBinaryVector vector = new VarBinaryVector(RESULT, allocator);
    vector.setSafe(0, bytes);
    vector.setValueCount(1);
    return UnaryResult.of(vector);
  }

  /** vgi-rpc's words for a protocol this server does not host, the hosted names as a sorted Python list. */
  private static RpcError notHosted(String name, Iterable<String> hosted) {
    List<String> names = new ArrayList<>();
    for (String each : new TreeSet<String>(toList(hosted))) {
      names.add("'" + each + "'");
    }
    String text = "This server does not host protocol '" + name + "'. Hosted: [" + String.join(", ", names) + "].";
    return new RpcError(new ErrorReport("ProtocolNotSupportedError", text, ErrorCode.UNIMPLEMENTED,
        Errors.PROTOCOL_NOT_SUPPORTED, null, null));
  }

  private static List<String> toList(Iterable<String> names) {
    List<String> list = new ArrayList<>();
    names.forEach(list::add);
    return list;
  }

  private static byte[] listing(Server server, BufferAllocator allocator) {
    List<Object> summaries = new ArrayList<>();
    for (Protocol hosted : server.protocols().values()) {
      Map<String, Object> summary = new LinkedHashMap<>();
      summary.put("protocol", hosted.name());
      summary.put("protocol_version", hosted.version() == null ? "" : hosted.version());
      summary.put("protocol_hash", ProtocolHash.of(hosted));
      summary.put("deprecated", false);
      summary.put("deprecation_message", "");
      summary.put("features", List.of());
      summaries.add(summary);
    }
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("server_id", server.serverId());
    row.put("server_version", SERVER_VERSION);
    row.put("request_version", Keys.REQUEST_VERSION_VALUE);
    row.put("protocols", summaries);
    return oneRow(LISTING, row, allocator);
  }

  private static byte[] description(Protocol protocol, BufferAllocator allocator) {
    List<Object> methods = new ArrayList<>();
    // Sorted by name, as the hash orders them.
    for (Method method : new java.util.TreeMap<>(protocol.methods()).values()) {
      boolean hasReturn = ProtocolHash.hasReturn(method);
      Map<String, Object> info = new LinkedHashMap<>();
      info.put("name", method.name());
      info.put("method_type", method.kind().isStream() ? "stream" : "unary");
      info.put("has_return", hasReturn);
      info.put("has_header", method.header() != null);
      info.put("stream_kind", switch (method.kind()) {
        case UNARY -> "";
        case PRODUCER -> "producer";
        case EXCHANGE -> "exchange";
      });
      info.put("params_schema_ipc", schemaBytes(method.params()));
      info.put("result_schema_ipc", hasReturn ? schemaBytes(method.resultSchema()) : new byte[0]);
      info.put("header_schema_ipc", method.header() == null ? new byte[0] : schemaBytes(method.header()));
      info.put("idempotency", "unknown");
      info.put("deprecated", false);
      info.put("deprecation_message", "");
      methods.add(info);
    }
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("protocol", protocol.name());
    row.put("protocol_version", protocol.version() == null ? "" : protocol.version());
    row.put("protocol_hash", ProtocolHash.of(protocol));
    row.put("deprecated", false);
    row.put("deprecation_message", "");
    row.put("features", List.of());
    row.put("methods", methods);
    return oneRow(DESCRIPTION, row, allocator);
  }

  /** A schema as {@code pyarrow.Schema.serialize()} spells it: the schema message, then end of stream. */
  static byte[] schemaBytes(Schema schema) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      WriteChannel channel = new WriteChannel(Channels.newChannel(bytes));
      MessageSerializer.serialize(channel, schema);
      ArrowStreamWriter.writeEndOfStream(channel, IpcOption.DEFAULT);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** A dataclass as the bytes of a one-row IPC stream; {@code row} holds its fields by name. */
  private static byte[] oneRow(Schema schema, Map<String, Object> row, BufferAllocator allocator) {
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
      for (FieldVector vector : root.getFieldVectors()) {
        put(vector, 0, row.get(vector.getName()));
      }
      root.setRowCount(1);
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
        writer.start();
        writer.writeBatch();
        writer.end();
      }
      return bytes.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes one value of a reflection dataclass: text, a flag, bytes, a list, or a struct by field name. */
  private static void put(FieldVector vector, int row, Object value) {
    if (value == null) {
      throw new IllegalStateException("reflection field " + vector.getName() + " has no value");
    }
    if (vector instanceof VarCharVector text) {
      text.setSafe(row, ((String) value).getBytes(StandardCharsets.UTF_8));
    } else if (vector instanceof BitVector flag) {
      flag.setSafe(row, (Boolean) value ? 1 : 0);
    } else if (vector instanceof VarBinaryVector binary) {
      binary.setSafe(row, (byte[]) value);
    } else if (vector instanceof ListVector list) {
      List<?> items = (List<?>) value;
      int first = list.startNewValue(row);
      FieldVector data = list.getDataVector();
      for (int i = 0; i < items.size(); i++) {
        put(data, first + i, items.get(i));
      }
      list.endValue(row, items.size());
    } else if (vector instanceof StructVector struct) {
      Map<?, ?> fields = (Map<?, ?>) value;
      for (FieldVector child : struct.getChildrenFromFields()) {
        put(child, row, fields.get(child.getName()));
      }
      struct.setIndexDefined(row);
    } else {
      throw new IllegalStateException("reflection has no " + vector.getField().getType() + " field");
    }
  }

  private static Field text(String name) {
    return new Field(name, FieldType.notNullable(ArrowType.Utf8.INSTANCE), null);
  }

  private static Field flag(String name) {
    return new Field(name, FieldType.notNullable(ArrowType.Bool.INSTANCE), null);
  }

  private static Field bytes(String name) {
    return new Field(name, FieldType.notNullable(ArrowType.Binary.INSTANCE), null);
  }

  private static Field listOfStruct(String name, List<Field> fields) {
    Field item = new Field("item", FieldType.nullable(ArrowType.Struct.INSTANCE), fields);
    return new Field(name, FieldType.notNullable(new ArrowType.List()), List.of(item));
  }
}
