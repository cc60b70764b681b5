package dev.quiver.vgi;

import dev.quiver.wire.Batch;
import dev.quiver.wire.Limits;
import dev.quiver.wire.StreamReader;
import dev.quiver.wire.StreamWriter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The aggregate methods ({@code aggregate_bind}, {@code _update}, {@code _combine}, {@code _finalize},
 * {@code _destructor}; the exchange is described in crates/quiver-vgi-contract/src/aggregate.rs).
 * The engine sends group ids; the states live here, per execution. Past {@link #EXECUTIONS_MAX} the
 * oldest execution is dropped (an engine that died before its destructor cannot grow a long-lived
 * worker); past {@link #GROUPS_MAX} groups an update fails.
 */
final class Aggregates {
  static final List<String> METHODS = List.of("aggregate_bind", "aggregate_update", "aggregate_combine",
      "aggregate_finalize", "aggregate_destructor");
  static final int EXECUTIONS_MAX = 1024;
  static final int GROUPS_MAX = 1 << 24;
  static final String GROUP_COLUMN = "__vgi_group_id";

  private static final Schema BIND_RESPONSE = new Schema(List.of(binary("output_schema"), binary("execution_id")));
  private static final Schema FINALIZE_RESPONSE = new Schema(List.of(binary("result_batch")));
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Worker worker;
  private final LinkedHashMap<ByteBuffer, Execution> live = new LinkedHashMap<>();

  Aggregates(Worker worker) {
    this.worker = worker;
  }

  /** One execution: the bound call and its groups' states. */
  private static final class Execution {
    final Function function;
    final Args args;
    final Schema output;
    final Map<Long, Object> groups = new HashMap<>();

    Execution(Function function, Args args, Schema output) {
      this.function = function;
      this.args = args;
      this.output = output;
    }

    Object state(long group) {
      Object state = groups.get(group);
      if (state == null && !groups.containsKey(group)) {
        if (groups.size() >= GROUPS_MAX) {
          throw VgiErrors.invalidArgument(function.name + "(): more than " + GROUPS_MAX + " groups");
        }
        state = function.aggregator.init(args);
        groups.put(group, state);
      }
      return state;
    }
  }

  byte[] call(String method, byte[] request, BufferAllocator allocator) {
    Map<String, Object> row = Rows.readRow(request, allocator);
    if (method.equals("aggregate_bind")) {
      return bind(row, allocator);
    }
    ByteBuffer id = ByteBuffer.wrap((byte[]) row.get("execution_id"));
    if (method.equals("aggregate_destructor")) {
      synchronized (live) {
        live.remove(id);
      }
      return empty(allocator);
    }
    Execution execution;
    synchronized (live) {
      execution = live.get(id);
    }
    if (execution == null) {
      throw VgiErrors.invalidArgument("unknown aggregate execution (never bound here, or already destroyed)");
    }
    String column = switch (method) {
      case "aggregate_update" -> "input_batch";
      case "aggregate_combine" -> "merge_batch";
      default -> "group_ids_batch";
    };
    synchronized (execution) {
      try (StreamReader reader = StreamReader.open(
          new ReadChannel(Channels.newChannel(new ByteArrayInputStream((byte[]) row.get(column)))), allocator,
          Limits.DEFAULT)) {
        Batch batch = reader == null ? null : reader.read();
        if (batch == null) {
          throw VgiErrors.invalidArgument(method + ": the nested stream holds no batch");
        }
        return switch (method) {
          case "aggregate_update" -> {
            update(execution, batch.root());
            yield empty(allocator);
          }
          case "aggregate_combine" -> {
            combine(execution, batch.root());
            yield empty(allocator);
          }
          default -> finalizeGroups(execution, batch.root(), allocator);
        };
      } catch (IOException e) {
        throw VgiErrors.invalidArgument(method + ": malformed nested batch: " + e.getMessage());
      }
    }
  }

  private byte[] bind(Map<String, Object> request, BufferAllocator allocator) {
    Function function = worker.catalog.resolve((String) request.get("function_name"),
        (List<?>) request.get("schema_path"));
    if (function.kind != Function.Kind.AGGREGATE) {
      throw VgiErrors.invalidArgument(function.name + "() is not an aggregate function");
    }
    Schema input = Rows.readSchema((byte[]) request.get("input_schema"));
    List<Field> given = input == null ? List.of() : input.getFields();
    List<Arg> declared = function.columns();
    if (given.size() != declared.size()) {
      throw VgiErrors.argumentValidation(function.name + "() takes " + declared.size() + " column argument(s), got "
          + given.size());
    }
    for (int i = 0; i < declared.size(); i++) {
      ArrowType got = given.get(i).getType();
      if (!got.equals(declared.get(i).type()) && !(got instanceof ArrowType.Null)) {
        throw VgiErrors.argumentValidation(function.name + "(): column argument " + i + " '" + declared.get(i).name()
            + "' must be " + Binding.sqlName(declared.get(i).type()) + ", got " + Binding.sqlName(got));
      }
    }
    Args args = Binding.bindArguments(function, (byte[]) request.get("arguments"), allocator);
    Schema output = new Schema(List.of(new Field("result", FieldType.nullable(function.returns), null)));
    byte[] id = new byte[16];
    RANDOM.nextBytes(id);
    synchronized (live) {
      while (live.size() >= EXECUTIONS_MAX) {
        live.remove(live.keySet().iterator().next());
        Log.log(Log.Level.WARN, "more than " + EXECUTIONS_MAX + " aggregate executions: the oldest was dropped");
      }
      live.put(ByteBuffer.wrap(id), new Execution(function, args, output));
    }
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("output_schema", Rows.schemaBytes(output));
    row.put("execution_id", id);
    return Rows.row(BIND_RESPONSE, row, allocator);
  }

  private static void update(Execution execution, VectorSchemaRoot batch) {
    long[] groups = ids(batch, GROUP_COLUMN);
    List<FieldVector> columns = new ArrayList<>();
    for (FieldVector vector : batch.getFieldVectors()) {
      if (!vector.getName().equals(GROUP_COLUMN)) {
        columns.add(vector);
      }
    }
    List<Arg> declared = execution.function.columns();
    if (columns.size() != declared.size()) {
      throw VgiErrors.invalidArgument(execution.function.name + "() takes " + declared.size()
          + " value column(s), the update batch has " + columns.size());
    }
    // Rows per group, each in input order (an order-dependent function sees them sorted).
    Map<Long, List<Integer>> rows = new LinkedHashMap<>();
    for (int row = 0; row < groups.length; row++) {
      rows.computeIfAbsent(groups[row], g -> new ArrayList<>()).add(row);
    }
    for (Map.Entry<Long, List<Integer>> entry : rows.entrySet()) {
      int[] members = entry.getValue().stream().mapToInt(Integer::intValue).toArray();
      Object state = execution.state(entry.getKey());
      execution.groups.put(entry.getKey(), execution.function.aggregator.update(state, columns, members,
          execution.args));
    }
  }

  private static void combine(Execution execution, VectorSchemaRoot batch) {
    long[] sources = ids(batch, "source_group_id");
    long[] targets = ids(batch, "target_group_id");
    for (int i = 0; i < sources.length; i++) {
      // A source never updated is the initial state: merging it changes nothing.
      if (sources[i] == targets[i] || !execution.groups.containsKey(sources[i])) {
        continue;
      }
      Object merged = execution.function.aggregator.combine(execution.state(targets[i]),
          execution.groups.get(sources[i]), execution.args);
      execution.groups.put(targets[i], merged);
    }
  }

  private static byte[] finalizeGroups(Execution execution, VectorSchemaRoot batch, BufferAllocator allocator)
      throws IOException {
    long[] groups = ids(batch, "group_id");
    List<Object> states = new ArrayList<>();
    for (long group : groups) {
      states.add(execution.groups.get(group));
    }
    String name = execution.function.name;
    try (FieldVector result = execution.function.aggregator.finalize(states, execution.args, allocator)) {
      if (result.getValueCount() != groups.length) {
        throw VgiErrors.invalidArgument(name + "() finalized " + groups.length + " group(s) into "
            + result.getValueCount() + " value(s)");
      }
      if (!result.getField().getType().equals(execution.function.returns)) {
        throw VgiErrors.invalidArgument(name + "() finalized to " + result.getField().getType() + ", but declares "
            + execution.function.returns);
      }
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (VectorSchemaRoot root = VectorSchemaRoot.create(execution.output, allocator)) {
        result.makeTransferPair(root.getVector(0)).transfer();
        root.setRowCount(groups.length);
        StreamWriter writer = new StreamWriter(new WriteChannel(Channels.newChannel(bytes)), allocator,
            execution.output, null);
        writer.write(root, Map.of());
        writer.close();
      }
      return Rows.row(FINALIZE_RESPONSE, Map.of("result_batch", bytes.toByteArray()), allocator);
    }
  }

  private static long[] ids(VectorSchemaRoot batch, String name) {
    FieldVector vector = batch.getVector(name);
    if (!(vector instanceof BigIntVector ids)) {
      throw VgiErrors.invalidArgument("the batch has no int64 '" + name + "' column");
    }
    long[] values = new long[ids.getValueCount()];
    for (int i = 0; i < values.length; i++) {
      if (ids.isNull(i)) {
        throw VgiErrors.invalidArgument("'" + name + "' holds NULLs");
      }
      values[i] = ids.get(i);
    }
    return values;
  }

  private static byte[] empty(BufferAllocator allocator) {
    return Rows.stream(new Schema(List.of()), List.of(), allocator);
  }

  private static Field binary(String name) {
    return new Field(name, new FieldType(false, ArrowType.Binary.INSTANCE, null), null);
  }
}
